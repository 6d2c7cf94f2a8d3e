// The hopper_gemm kernel family: croq's templated sm_90a GEMM (kernels/cuda/matmul/hopper/
// gemm_sm90.cu) and the space of its configurations. WGMMA from shared-memory descriptors, TMA
// loads into a STAGES-deep ring completing on mbarriers, one producer and one to three consumer
// warpgroups (setmaxnreg), persistent tiles in grouped order, clusters with TMA multicast, split-K
// with a deterministic in-kernel reduction, and an epilogue from registers or through shared
// memory and TMA stores. docs/gemm.md describes each parameter; violation() refuses every
// configuration the template cannot build or run. e4m3 inputs (per-tensor scales, f16 or bf16
// out) run the same structure with k32 FP8 WGMMA, B "row.col" only, BK counted in one-byte
// elements (docs/fp8.md).
#pragma once
#include "croq/search/family.hpp"

namespace croq {

class HopperGemmFamily : public KernelFamily {
 public:
  static constexpr int k_smem_limit = 232448;  // dynamic shared memory a block may opt into on sm_90

  std::string name() const override { return "hopper_gemm"; }
  std::string dsl() const override { return "cuda"; }
  bool supports(const FamilyProblem& p) const override;
  std::vector<ParamSpec> params() const override;
  FamilyConfig default_config(const FamilyProblem& p) const override;
  std::optional<std::string> violation(const FamilyConfig& c, const FamilyProblem& p) const override;
  std::string render_source(const FamilyConfig& c, const FamilyProblem& p) const override;
  std::vector<std::string> build_flags(const FamilyConfig& c, const FamilyProblem& p) const override;
  std::vector<std::string> params_for_bottleneck(const std::string& bottleneck) const override;
  std::vector<Alternative> alternatives(const FamilyProblem& p) const override;

  // Shared memory the configuration's kernel requests (bytes), as the template computes it, for
  // 16-bit inputs (elem_bytes 2) or e4m3 (1).
  static long long smem_bytes(const FamilyConfig& c);
  static long long smem_bytes(const FamilyConfig& c, int elem_bytes);
  // The template's dtype bit (CROQ_DTYPES): 1 f16->f32, 2 f16, 4 bf16->f32, 8 bf16, 16 e4m3->f16,
  // 32 e4m3->bf16; 0 for a dtype it does not compute.
  static int dtype_bit(const DtypePair& d);
  // f32 accumulator registers per consumer thread.
  static int accumulator_registers(const FamilyConfig& c);
  // The drained block-scaled kernel with staged scales whose consumers have two m64 atoms or more
  // (BM 256 with two consumers): it runs them in waves, each atom's WGMMAs drained and promoted
  // before the next atom's, so one set of WGMMA sums serves all (the template's CROQ_BS_WAVES, its
  // default there), and keeps one TMA-epilogue slot per consumer where two do not fit beside the ring.
  static bool blockscaled_waves(const FamilyConfig& c);
  // The most a consumer thread may hold without spilling, as ptxas (CUDA 13.0) allocates: 192
  // with one or two consumers (setmaxnreg gives two consumers 232 registers), 160 with split-K
  // (its reduction needs registers of its own), 128 with stream-K (its work cursor too; 192 in the
  // block-scaled waves, whose one set of WGMMA sums leaves room for it); 96 with
  // three consumers (a 512-thread kernel is compiled for 128 registers in every warpgroup), 64
  // with either reduction. The template asserts the same limits.
  static int max_accumulators(const FamilyConfig& c);
  // The split-K slices the kernel uses for the problem: SPLIT_K, at most one per k block.
  static int effective_split(const FamilyConfig& c, const FamilyProblem& p);
  // Workspace bytes of the split-K partial sums and flags (0 without split-K).
  static long long split_workspace_bytes(const FamilyConfig& c, const FamilyProblem& p);
  // The template's path under kernels/.
  static const char* template_path() { return "cuda/matmul/hopper/gemm_sm90.cu"; }

 private:
  // waves: whether a block-scaled default may take 256x128 tiles in waves (false: the 128x128
  // overlapped kernel, the default before them and the base of their alternatives).
  FamilyConfig default_config(const FamilyProblem& p, bool waves) const;
};

}  // namespace croq
