// A set of non-negative integers stored as sorted closed ranges: the stored iteration numbers,
// attempt indexes and round numbers of a task (a few ranges even after thousands of rounds).
// JSON form: [[1,250],[252,400]].
#pragma once
#include <optional>
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
  static IntSet from_json(const json& j);
  const std::vector<std::pair<int, int>>& ranges() const { return m_ranges; }

 private:
  std::vector<std::pair<int, int>> m_ranges;
};

}  // namespace croq
