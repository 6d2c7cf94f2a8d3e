// Pieces shared by the GEMM kernel families (the Hopper, Ampere and cpp ones): reading integer
// parameters, checking that a configuration names exactly the family's parameters with listed
// values, the Hopper templates' split-K limits, the dtype and layout masks the CUDA templates
// understand, and rendering a template with its configuration macros in front.
#pragma once
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "croq/search/family.hpp"

namespace croq::gemm {

// a / b rounded up (tiles of b that cover a), for positive a and b.
constexpr long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

// The integer value of parameter `name`; nullopt when missing or not an integer.
std::optional<int> int_param(const FamilyConfig& c, const std::string& name);

// Whether this machine's CPU has AVX-512 (the cpp families then offer a 16-wide SIMD width).
bool cpu_has_avx512();

// nullopt when `c` has every parameter of `specs`, each with one of its listed values, and no
// other parameter; else the reason.
std::optional<std::string> check_listed_values(const FamilyConfig& c, const std::vector<ParamSpec>& specs);

// The template's CROQ_DTYPES bit for the problem's dtype pair: 1 f16->f32, 2 f16->f16,
// 4 bf16->f32, 8 bf16->bf16; 0 when the templates do not compute it.
int dtype_bit(const DtypePair& d);

// "#define NAME VALUE" lines, a #line directive and the template text: a complete source. The
// template is read from the project's kernels/ folder (find_project_dir).
std::string render_template(const std::string& family, const std::string& template_relpath,
                            const std::vector<std::pair<std::string, std::string>>& defines, const FamilyProblem& p);

// The family's source for a configuration: its parameters as CROQ_<NAME> macros in `order`, the
// dtype and B-layout masks for the problem (one instantiation each), then the template.
std::string render_config(const std::string& family, const std::string& template_relpath,
                          std::span<const char* const> order, const FamilyConfig& c, const FamilyProblem& p);

// Multiprocessors of the usual part of each architecture (H100/H200 132, A100 108, ...): used to
// size defaults, never for correctness.
int typical_sm_count(const std::string& arch);

// Split-K partial sums a configuration may keep in the workspace: beyond this, splitting is not
// the way to fill the GPU (the problem has plenty of tiles).
constexpr long long k_max_split_workspace = 512LL << 20;

// Why a Hopper template cannot run the configuration's SPLIT_K (> 1) on the problem: not
// persistent, more slices than k blocks of `bk`, more than k_max_split_workspace of partial sums
// (`workspace_bytes`), more work units than the kernel indexes (`tiles` output tiles); nullopt
// when it can, or when SPLIT_K is 1.
std::optional<std::string> split_k_refusal(const FamilyConfig& c, const FamilyProblem& p, int bk, long long tiles,
                                           long long workspace_bytes);

// A configuration with the number of blocks (tiles) it launches for the problem.
struct SizedConfig {
  FamilyConfig config;
  long long blocks = 0;
};

// A default among tile arrangements listed largest first: the first legal one whose blocks make a
// wave of `sms`, else (no arrangement makes a wave) the smallest legal one, so that small problems
// fill the GPU; nullopt when none is legal.
std::optional<FamilyConfig> first_wave_or_smallest(const std::vector<SizedConfig>& largest_first,
                                                   const std::function<bool(const FamilyConfig&)>& legal, long long sms);

}  // namespace croq::gemm
