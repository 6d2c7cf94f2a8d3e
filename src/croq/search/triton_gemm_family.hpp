// The triton_gemm kernel family (kernels/triton/matmul/family/gemm.py): a dense f16/bf16 GEMM in
// Triton with its tile (BLOCK_M/N/K), launch options (NUM_WARPS, NUM_STAGES), grouped tile order
// (GROUP_M), persistence, TMA tensor descriptors (Hopper), warp specialisation of the persistent
// TMA loop (Hopper, Triton >= 3.4) and split-K. The constraints refuse, before anything runs, every
// configuration whose shared memory Triton would refuse ("out of resource: shared memory"), whose
// accumulator would not fit the registers, whose TMA descriptors the problem's strides do not
// allow, and combinations the template does not implement.
#pragma once
#include "croq/search/family.hpp"

namespace croq {

class TritonGemmFamily : public KernelFamily {
 public:
  std::string name() const override { return "triton_gemm"; }
  std::string dsl() const override { return "triton"; }
  bool supports(const FamilyProblem& p) const override;
  std::vector<ParamSpec> params() const override;
  FamilyConfig default_config(const FamilyProblem& p) const override;
  std::optional<std::string> violation(const FamilyConfig& c, const FamilyProblem& p) const override;
  std::string render_source(const FamilyConfig& c, const FamilyProblem& p) const override;
  std::vector<std::string> build_flags(const FamilyConfig&, const FamilyProblem&) const override { return {}; }
  std::vector<std::string> params_for_bottleneck(const std::string& bottleneck) const override;
  std::vector<Alternative> alternatives(const FamilyProblem& p) const override;

  // Shared memory Triton allocates for the configuration: NUM_STAGES buffers of an A and a B tile
  // (the software pipeline), or the accumulator's layout conversion in the epilogue if larger (it
  // reuses the pipeline's buffers), plus barriers.
  static long long smem_bytes(const FamilyConfig& c, const FamilyProblem& p);
  // The most shared memory one program may use on the problem's architecture (opt-in maximum).
  static long long smem_limit(const std::string& arch);
  // f32 accumulator registers per thread: BLOCK_M x BLOCK_N / (32 x NUM_WARPS).
  static int accumulator_registers(const FamilyConfig& c);
  static constexpr int k_max_accumulators = 128;
  static constexpr long long k_max_split_workspace = 512LL << 20;
};

}  // namespace croq
