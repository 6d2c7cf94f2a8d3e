// Walks a kernel family's whole parameter space for the family tests: every configuration, in the
// same order every run (the first parameter fastest), optionally with some parameters limited.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "croq/search/family.hpp"

namespace croq::test {

// Calls `visit` with every configuration of the family's space, the parameters in `only` limited to
// the listed values.
inline void for_each_config(const KernelFamily& f, const std::function<void(const FamilyConfig&)>& visit,
                            const std::map<std::string, std::vector<std::string>>& only = {}) {
  auto specs = f.params();
  for (auto& s : specs)
    if (only.count(s.name)) s.values = only.at(s.name);
  std::vector<size_t> idx(specs.size(), 0);
  FamilyConfig c;
  for (const auto& s : specs) c[s.name] = s.values[0];
  for (;;) {
    visit(c);
    size_t d = 0;
    while (d < specs.size()) {
      if (++idx[d] < specs[d].values.size()) {
        c[specs[d].name] = specs[d].values[idx[d]];
        break;
      }
      idx[d] = 0;
      c[specs[d].name] = specs[d].values[0];
      ++d;
    }
    if (d == specs.size()) return;
  }
}

// The same with the parameters in `fixed` held at one value each.
inline void for_each_config(const KernelFamily& f, const std::function<void(const FamilyConfig&)>& visit,
                            const FamilyConfig& fixed) {
  std::map<std::string, std::vector<std::string>> only;
  for (const auto& [name, value] : fixed) only[name] = {value};
  for_each_config(f, visit, only);
}

}  // namespace croq::test
