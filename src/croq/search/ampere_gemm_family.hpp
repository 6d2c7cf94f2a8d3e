// The ampere_gemm kernel family: croq's templated mma.sync GEMM (kernels/cuda/matmul/ampere/
// gemm_sm80.cu) for GPUs without WGMMA (sm_80, sm_86, sm_89) and correct on sm_90 too. ldmatrix
// from XOR-swizzled shared memory, a cp.async multi-stage pipeline, a warp grid, grouped tile
// order. violation() refuses configurations over the target's shared-memory or register budget.
#pragma once
#include "croq/search/family.hpp"

namespace croq {

class AmpereGemmFamily : public KernelFamily {
 public:
  std::string name() const override { return "ampere_gemm"; }
  std::string dsl() const override { return "cuda"; }
  bool supports(const FamilyProblem& p) const override;
  std::vector<ParamSpec> params() const override;
  FamilyConfig default_config(const FamilyProblem& p) const override;
  std::optional<std::string> violation(const FamilyConfig& c, const FamilyProblem& p) const override;
  std::string render_source(const FamilyConfig& c, const FamilyProblem& p) const override;
  std::vector<std::string> build_flags(const FamilyConfig& c, const FamilyProblem& p) const override;
  std::vector<std::string> params_for_bottleneck(const std::string& bottleneck) const override;

  static long long smem_bytes(const FamilyConfig& c);
  // Registers per thread the kernel needs at least: accumulators, one k-step of A and B
  // fragments, addressing.
  static int register_estimate(const FamilyConfig& c);
  // Dynamic shared memory a block may opt into on the architecture (bytes).
  static long long smem_limit(const std::string& arch);
  static const char* template_path() { return "cuda/matmul/ampere/gemm_sm80.cu"; }
};

}  // namespace croq
