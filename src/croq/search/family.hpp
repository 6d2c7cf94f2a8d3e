// A kernel family: a templated kernel source plus the space of configurations croq's search may
// explore. Each parameter is either a "macro" change (a value swept inside the same structure:
// stage count, swizzle, unroll) or "structural" (tile shape, warp-specialisation topology,
// persistence, memory-hierarchy strategy), in the seeds' sense: after two macro-only changes the
// next must be structural. A family refuses impossible configurations before anything is built
// (shared-memory and register limits, legal instruction shapes, ...).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "croq/util/json.hpp"
#include "croq/workspace/dtype.hpp"

namespace croq {

// The problem a configuration is for.
struct FamilyProblem {
  std::string op = "matmul";
  int64_t m = 0, n = 0, k = 0;
  DtypePair dtype;
  bool b_col_major = false;  // B stored N x K ("row.col")
  std::string arch;          // "sm_90a", "sm_80", "cpu"
};

using FamilyConfig = std::map<std::string, std::string>;  // parameter name -> value

struct ParamSpec {
  std::string name;                 // e.g. "BM", "STAGES", "WARP_SPEC"
  std::vector<std::string> values;  // the legal values, in a meaningful order (small to large)
  bool structural = false;          // structural vs macro change
  std::string category;             // idea category: tiling, pipeline, memory, compute, misc
  std::string description;
  // The value a configuration recorded before this parameter existed is read with (the template's
  // behaviour without it); empty when the parameter was there from the start.
  std::string recorded_default = {};
};

struct Alternative {
  std::string name;     // "ping-pong 128x128 with a 2x1 cluster"
  std::string tag;      // short, for the kernel's file name: "pp128x128_c21"
  FamilyConfig config;  // complete
};

class KernelFamily {
 public:
  virtual ~KernelFamily() = default;
  virtual std::string name() const = 0;  // "hopper_gemm"
  virtual std::string dsl() const = 0;   // "cuda", "cpp"
  virtual bool supports(const FamilyProblem& p) const = 0;
  virtual std::vector<ParamSpec> params() const = 0;
  // A configuration that builds, verifies and is reasonable for the problem: the starting point.
  virtual FamilyConfig default_config(const FamilyProblem& p) const = 0;
  // nullopt when the configuration is legal for the problem; else the reason it is not.
  virtual std::optional<std::string> violation(const FamilyConfig& c, const FamilyProblem& p) const = 0;
  // The complete, self-contained candidate source for the configuration (what goes into srcs/).
  virtual std::string render_source(const FamilyConfig& c, const FamilyProblem& p) const = 0;
  // Extra compiler flags the configuration needs (e.g. -gencode=arch=compute_90a,code=sm_90a).
  virtual std::vector<std::string> build_flags(const FamilyConfig& c, const FamilyProblem& p) const = 0;
  // Flags for the DSL's own compiler before nvcc (croqtile: choreo's, `croq build --choreo-flags`).
  virtual std::vector<std::string> choreo_flags(const FamilyConfig&, const FamilyProblem&) const { return {}; }
  // Parameters worth moving first for a classifier bottleneck (memory_bound, compute_bound,
  // latency_bound, launch_bound, mixed), most promising first.
  virtual std::vector<std::string> params_for_bottleneck(const std::string& bottleneck) const = 0;
  // Other starting points worth one measurement each for this problem, most promising first: the
  // family's archetypes (a different tile, warp-group schedule or cluster shape) that single
  // parameter steps from the default would reach only after many rounds, if ever. Each is legal
  // for the problem. The search tries each once, before its single steps.
  virtual std::vector<Alternative> alternatives(const FamilyProblem&) const { return {}; }
};

// All families croq knows (registered in family_registry.cpp).
std::vector<std::shared_ptr<KernelFamily>> kernel_families();
std::shared_ptr<KernelFamily> find_family(const std::string& name);

// The dsls croq's search has kernel families for, in registry order, and for help texts every
// family by dsl ("cpp: cpp_tiled, cpp_sparse, cpp_fp8; cuda: hopper_gemm, ...").
std::vector<std::string> family_dsls();
std::string families_by_dsl();

json config_to_json(const FamilyConfig& c);

// The family's whole space for a problem: the product of its parameters' values, each
// configuration checked by violation(), in product order (the last parameter fastest). What a
// brute-force autotune of the same space would measure. Examines at most `max_examined`
// configurations (`truncated` then).
struct FamilySpace {
  uint64_t product = 0;   // configurations in the product (saturates at UINT64_MAX)
  uint64_t examined = 0;  // configurations checked
  std::vector<FamilyConfig> legal;
  bool truncated = false;
};
FamilySpace legal_space(const KernelFamily& f, const FamilyProblem& p, uint64_t max_examined = 5'000'000);
// A configuration read back from a record, with every parameter the family added since it was
// recorded set to its recorded_default; other parameters are left as they are (missing ones stay
// missing, and violation() says so).
FamilyConfig with_recorded_defaults(const KernelFamily& f, FamilyConfig c);

}  // namespace croq
