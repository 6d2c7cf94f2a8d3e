// Range-compressed integer set (int_set.hpp).
#include "croq/ledger/int_set.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace croq {

bool IntSet::contains(int v) const {
  auto it = std::upper_bound(m_ranges.begin(), m_ranges.end(), v,
                             [](int x, const std::pair<int, int>& r) { return x < r.first; });
  if (it == m_ranges.begin()) return false;
  --it;
  return v >= it->first && v <= it->second;
}

void IntSet::insert(int v) {
  if (contains(v)) return;
  auto it = std::upper_bound(m_ranges.begin(), m_ranges.end(), v,
                             [](int x, const std::pair<int, int>& r) { return x < r.first; });
  // it: first range starting after v
  bool join_prev = it != m_ranges.begin() && std::prev(it)->second + 1 == v;
  bool join_next = it != m_ranges.end() && it->first - 1 == v;
  if (join_prev && join_next) {
    auto prev = std::prev(it);
    prev->second = it->second;
    m_ranges.erase(it);
  } else if (join_prev) {
    std::prev(it)->second = v;
  } else if (join_next) {
    it->first = v;
  } else {
    m_ranges.insert(it, {v, v});
  }
}

std::optional<int> IntSet::max() const {
  if (m_ranges.empty()) return std::nullopt;
  return m_ranges.back().second;
}

size_t IntSet::size() const {
  size_t n = 0;
  for (const auto& r : m_ranges) n += static_cast<size_t>(r.second - r.first + 1);
  return n;
}

json IntSet::to_json() const {
  json a = json::array();
  for (const auto& r : m_ranges) a.push_back(json::array({r.first, r.second}));
  return a;
}

std::optional<IntSet> IntSet::from_json(const json& j, int max_value, std::string* why) {
  auto fail = [&](std::string w) -> std::optional<IntSet> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  if (!j.is_array()) return fail("not a list of ranges");
  std::vector<std::pair<int, int>> ranges;
  for (const auto& r : j) {
    if (!r.is_array() || r.size() != 2 || !r[0].is_number_integer() || !r[1].is_number_integer()) {
      return fail(fmt::format("{} is not a range [lo, hi]", r.dump()));
    }
    // Read wide: a value past int's range must be refused, not wrapped.
    const auto lo = r[0].get<long long>(), hi = r[1].get<long long>();
    if (lo < 0 || hi < lo || hi > max_value) {
      return fail(fmt::format("range [{}, {}] is outside 0..{}", lo, hi, max_value));
    }
    ranges.emplace_back(static_cast<int>(lo), static_cast<int>(hi));
  }
  IntSet s;
  std::sort(ranges.begin(), ranges.end());
  for (const auto& x : ranges) {
    if (!s.m_ranges.empty() && x.first <= s.m_ranges.back().second + 1) {
      s.m_ranges.back().second = std::max(s.m_ranges.back().second, x.second);
    } else {
      s.m_ranges.push_back(x);
    }
  }
  return s;
}

}  // namespace croq
