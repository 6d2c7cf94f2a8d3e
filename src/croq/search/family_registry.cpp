// The registry of kernel families (family.hpp). Each family lives in its own file and is added here.
#include <algorithm>

#include "croq/search/family.hpp"
#include "croq/search/ampere_gemm_family.hpp"
#include "croq/search/croqtile_gemm_family.hpp"
#include "croq/search/croqtile_gemm_sp_family.hpp"
#include "croq/search/hopper_gemm_family.hpp"
#include "croq/search/hopper_gemm_sp_family.hpp"
#include "croq/search/triton_gemm_family.hpp"

namespace croq {

std::shared_ptr<KernelFamily> make_cpp_tiled_family();
std::shared_ptr<KernelFamily> make_cpp_sparse_family();
std::shared_ptr<KernelFamily> make_cpp_fp8_family();

std::vector<std::shared_ptr<KernelFamily>> kernel_families() {
  std::vector<std::shared_ptr<KernelFamily>> all;
  all.push_back(make_cpp_tiled_family());
  all.push_back(make_cpp_sparse_family());
  all.push_back(make_cpp_fp8_family());
  all.push_back(std::make_shared<HopperGemmFamily>());
  all.push_back(std::make_shared<AmpereGemmFamily>());
  all.push_back(std::make_shared<HopperGemmSpFamily>());
  all.push_back(std::make_shared<CroqtileGemmFamily>());
  all.push_back(std::make_shared<CroqtileGemmSpFamily>());
  all.push_back(std::make_shared<TritonGemmFamily>());
  return all;
}

std::shared_ptr<KernelFamily> find_family(const std::string& name) {
  for (auto& f : kernel_families()) {
    if (f->name() == name) return f;
  }
  return nullptr;
}

std::vector<std::string> family_dsls() {
  std::vector<std::string> out;
  for (const auto& f : kernel_families()) {
    if (std::find(out.begin(), out.end(), f->dsl()) == out.end()) out.push_back(f->dsl());
  }
  return out;
}

std::string families_by_dsl() {
  std::string out;
  for (const auto& dsl : family_dsls()) {
    out += (out.empty() ? "" : "; ") + dsl + ":";
    bool first = true;
    for (const auto& f : kernel_families()) {
      if (f->dsl() != dsl) continue;
      out += (first ? " " : ", ") + f->name();
      first = false;
    }
  }
  return out;
}

FamilyConfig with_recorded_defaults(const KernelFamily& f, FamilyConfig c) {
  for (const auto& spec : f.params()) {
    if (!spec.recorded_default.empty() && !c.count(spec.name)) c[spec.name] = spec.recorded_default;
  }
  return c;
}

FamilySpace legal_space(const KernelFamily& f, const FamilyProblem& p, uint64_t max_examined) {
  FamilySpace out;
  const auto specs = f.params();
  out.product = 1;
  for (const auto& s : specs) {
    const uint64_t n = s.values.size();
    if (n == 0) {
      out.product = 0;
      return out;
    }
    out.product = out.product > UINT64_MAX / n ? UINT64_MAX : out.product * n;
  }
  std::vector<size_t> at(specs.size(), 0);  // an odometer over the values, the last parameter fastest
  FamilyConfig c;
  for (size_t i = 0; i < specs.size(); ++i) c[specs[i].name] = specs[i].values[0];
  while (true) {
    if (out.examined == max_examined) {
      out.truncated = true;
      return out;
    }
    ++out.examined;
    if (!f.violation(c, p)) out.legal.push_back(c);
    size_t i = specs.size();
    while (i > 0) {
      --i;
      if (++at[i] < specs[i].values.size()) {
        c[specs[i].name] = specs[i].values[at[i]];
        break;
      }
      at[i] = 0;
      c[specs[i].name] = specs[i].values[0];
      if (i == 0) return out;
    }
    if (specs.empty()) return out;
  }
}

json config_to_json(const FamilyConfig& c) {
  json j = json::object();
  for (const auto& [k, v] : c) j[k] = v;
  return j;
}

}  // namespace croq
