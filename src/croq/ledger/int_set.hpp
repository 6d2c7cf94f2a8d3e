// A set of non-negative integers stored as sorted closed ranges: the stored iteration numbers,
// attempt indexes and round numbers of a task (a few ranges even after thousands of rounds).
// JSON form: [[1,250],[252,400]].
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "croq/util/json.hpp"

namespace croq {

class IntSet {
 public:
  bool contains(int v) const;
  void insert(int v);
  std::optional<int> max() const;
  size_t size() const;
  bool empty() const { return m_ranges.empty(); }
  json to_json() const;
  // nullopt (with `why`) unless `j` is an array of [lo, hi] integer pairs with
  // 0 <= lo <= hi <= max_value: a value that does not fit is refused, never truncated.
  static std::optional<IntSet> from_json(const json& j, int max_value, std::string* why = nullptr);
  const std::vector<std::pair<int, int>>& ranges() const { return m_ranges; }

 private:
  std::vector<std::pair<int, int>> m_ranges;
};

}  // namespace croq
