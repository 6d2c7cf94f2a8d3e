// The croqtile_gemm_sp kernel family: croq's templated CroqTile (Choreo) sm_90a 2:4 structured-sparse
// GEMM (kernels/croqtile/gemm_sp/family/gemm_sp_sm90.co.in) for the gemm_sp operator (kernel ABI
// version 2, CROQ_OP_MATMUL_SPARSE24, bound by croq build's sparse wrapper, which compresses A off the
// clock), searched by `croq tune --dsl croqtile`. Warp-specialised: a TMA producer warpgroup fills a
// STAGES-deep ring with TILE_K slices of packed A and B (and the metadata, or the consumers read it from L2); one to three consumer
// warpgroups issue the sparse WGMMAs. The parameters are the template's macros (tile width WARP_N,
// consumers, TILE_K, stages, where the metadata comes from, register control, tile order); docs/dsl.md
// lists them. violation() refuses every configuration the template, TMA or ptxas cannot build or run, and
// every problem the kernel would refuse (it computes M, N, K multiples of its tile exactly).
#pragma once
#include "croq/search/family.hpp"

namespace croq {

class CroqtileGemmSpFamily : public KernelFamily {
 public:
  // Shared memory a block may use on sm_90 (232448 bytes), less the alignment slack choreo adds.
  static constexpr int k_smem_limit = 232448 - 1024;
  // e4m3 sparse WGMMAs accumulate with reduced precision; the template does not promote, and
  // unpromoted kernels pass croq's verification up to K = 12288 (docs/gemm_sp.md).
  static constexpr int64_t k_e4m3_max_k = 12288;

  std::string name() const override { return "croqtile_gemm_sp"; }
  std::string dsl() const override { return "croqtile"; }
  bool supports(const FamilyProblem& p) const override;
  std::vector<ParamSpec> params() const override;
  FamilyConfig default_config(const FamilyProblem& p) const override;
  std::optional<std::string> violation(const FamilyConfig& c, const FamilyProblem& p) const override;
  std::string render_source(const FamilyConfig& c, const FamilyProblem& p) const override;
  std::vector<std::string> build_flags(const FamilyConfig& c, const FamilyProblem& p) const override;
  std::vector<std::string> params_for_bottleneck(const std::string& bottleneck) const override;
  std::vector<Alternative> alternatives(const FamilyProblem& p) const override;

  // Bytes of one input element (2 for f16/bf16, 1 for e4m3), 0 for dtypes the family does not compute.
  static int input_bytes(const DtypePair& d);
  // K of one sparse WGMMA: 32 for 16-bit inputs, 64 for e4m3.
  static int warp_k(const DtypePair& d);
  // Shared memory of the ring: STAGES x (packed A + B slices, and the metadata's with META=1).
  static long long smem_bytes(const FamilyConfig& c, const DtypePair& d);
  // The swizzles of the packed A and the B slices: their row bytes (TILE_K/2 and TILE_K elements).
  static int swizzle_a(const FamilyConfig& c, const DtypePair& d);
  static int swizzle_b(const FamilyConfig& c, const DtypePair& d);
  // Registers (accumulators per consumer, setmaxnreg targets) follow croqtile_gemm's rules.
  static const char* template_path() { return "croqtile/gemm_sp/family/gemm_sp_sm90.co.in"; }
};

}  // namespace croq
