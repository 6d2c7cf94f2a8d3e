// The hopper_gemm_sp kernel family: croq's templated sm_90a 2:4 structured-sparse GEMM
// (kernels/cuda/gemm_sp/hopper/gemm_sp_sm90.cu) for the gemm_sp operator (kernel ABI version 2,
// CROQ_OP_MATMUL_SPARSE24) and the space of its configurations. wgmma.mma_async.sp from
// shared-memory descriptors with the metadata in registers, TMA loads of the compressed A, B and
// the metadata into a STAGES-deep ring completing on mbarriers, one producer and one or two
// consumer warpgroups (setmaxnreg), cooperative or ping-pong consumers, persistent tiles in grouped
// order, clusters with TMA multicast, split-K, three ways of handing the metadata to the WGMMAs, and
// an epilogue from registers or through shared memory and TMA stores. A is prepared (compressed)
// once, off the clock, by the candidate's croq_gemm_prepare. docs/gemm_sp.md describes each
// parameter; violation() refuses every configuration the template cannot build or run.
#pragma once
#include "croq/search/family.hpp"

namespace croq {

class HopperGemmSpFamily : public KernelFamily {
 public:
  static constexpr int k_smem_limit = 232448;  // dynamic shared memory a block may opt into on sm_90

  std::string name() const override { return "hopper_gemm_sp"; }
  std::string dsl() const override { return "cuda"; }
  bool supports(const FamilyProblem& p) const override;
  std::vector<ParamSpec> params() const override;
  FamilyConfig default_config(const FamilyProblem& p) const override;
  std::optional<std::string> violation(const FamilyConfig& c, const FamilyProblem& p) const override;
  std::string render_source(const FamilyConfig& c, const FamilyProblem& p) const override;
  std::vector<std::string> build_flags(const FamilyConfig& c, const FamilyProblem& p) const override;
  std::vector<std::string> params_for_bottleneck(const std::string& bottleneck) const override;
  std::vector<Alternative> alternatives(const FamilyProblem& p) const override;

  // The template's CROQ_DTYPES bit for the problem's dtype pair (1 f16->f32, 2 f16->f16,
  // 4 bf16->f32, 8 bf16->bf16, 16 e4m3->f16, 32 e4m3->bf16, 64 e4m3->f32), 0 when not computed.
  static int dtype_bit(const DtypePair& d);
  // Bytes of one input element (2 for f16/bf16, 1 for e4m3).
  static int input_bytes(const DtypePair& d);
  // Shared memory the configuration's kernel requests for inputs of `elem_bytes` bytes, as the
  // template computes it.
  static long long smem_bytes(const FamilyConfig& c, int elem_bytes);
  // f32 accumulator registers per consumer thread: the tile's (rows per consumer / 64 x BN/2), and
  // for the problem's dtype with promotion (PROMOTE > 0, e4m3 only) the WGMMA accumulators beside
  // the f32 tile sums: twice the tile's, or with PROMOTE_SUB=1 the tile's plus one m64 x BN/2
  // sub-tile's (BN/4).
  static int accumulator_registers(const FamilyConfig& c);
  static int accumulator_registers(const FamilyConfig& c, const DtypePair& d);
  // Two-level accumulation for e4m3 (PROMOTE): an FP8 WGMMA keeps about 14 bits of its running sum,
  // so the error grows with K (measured on the H200 against cuSPARSELt, docs/gemm_sp.md). A k slice
  // longer than k_promote_above_k promotes, every k_promote_interval_k of K (as DeepGEMM and CUTLASS):
  // unpromoted kernels pass croq's verification up to K = 12288 and fail it at 32768, and promotion
  // costs 16-23 % at K = 8192, so only the slices that need it pay. Every 512 of K (four k blocks
  // of 128) was 11-12 % faster than every 128 at 4096x8192x32768 on the H200 with a max abs error
  // of 0.09 against 0.07 (cuSPARSELt 0.074); every 1024 and 2048 were no faster, with 0.12 and 0.17
  // (docs/gemm_sp.md). The sub-tile promotion (PROMOTE_SUB, where
  // twice the tile's accumulators do not fit) stays every k block.
  static constexpr int k_promote_above_k = 12288;
  static constexpr int k_promote_interval_k = 512;
  // Whether the problem's k slices (K / split) are long enough to need promotion (e4m3 only).
  static bool needs_promotion(const FamilyProblem& p, int split);
  // The configuration with promotion every k_promote_interval_k of K: the whole tile where twice its
  // accumulators fit, else per sub-tile (PROMOTE_SUB=1, MMA_DEPTH 0) where that fits; nullopt where
  // neither fits or the inputs are not e4m3.
  static std::optional<FamilyConfig> with_promotion(FamilyConfig c, const DtypePair& d);
  // The most a consumer thread may hold without spilling (ptxas of CUDA 13.0): 192, 160 with
  // split-K, 32 fewer when metadata_squeezes(); the template asserts the same.
  static int max_accumulators(const FamilyConfig& c, const DtypePair& d);
  // Whether the metadata words held in registers (two sets with MMA_DEPTH 1, each live until its
  // WGMMAs retire) crowd the accumulators: 16-bit inputs at BK 128 (four k32 steps' words per m64
  // atom), a ping-pong kernel with the quad-transposed 16-bit epilogue or with META 2, or META 0
  // (each WGMMA's word loaded between the WGMMAs); measured with ptxas (gemm_sp_compile_test).
  static bool metadata_squeezes(const FamilyConfig& c, const DtypePair& d);
  static int effective_split(const FamilyConfig& c, const FamilyProblem& p);
  // The fewest k slices any tile is cut into: 1 with SPLIT_TAIL=1 (the whole tiles before the
  // tail), else effective_split(); promotion is decided on the longest slice, K / this.
  static int shortest_split(const FamilyConfig& c, const FamilyProblem& p);
  // The template's tail choice (SPLIT_TAIL=1): of `units` cluster tiles on `clusters` resident
  // clusters, how many are computed whole before the split ones. The last r = units % clusters (or
  // r + clusters) are split `split` ways when that ends sooner than whole tiles; `units` (no split)
  // when the waves are full or it gains nothing, 0 (all split) within one wave.
  static int tail_dp_units(int units, int split, int clusters);
  static long long split_workspace_bytes(const FamilyConfig& c, const FamilyProblem& p);
  static const char* template_path() { return "cuda/gemm_sp/hopper/gemm_sp_sm90.cu"; }
};

}  // namespace croq
