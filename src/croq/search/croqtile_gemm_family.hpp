// The croqtile_gemm kernel family: croq's templated CroqTile (Choreo) sm_90a matmul
// (kernels/croqtile/matmul/family/gemm_sm90.co.in) and the space of its configurations, searched
// by `croq tune --dsl croqtile`. The parameters are the .co's macros (tile width WARP_N, consumer
// warpgroups, TILE_K, stages, swizzle, register control, persistence, tile order, epilogue) and
// the pinned choreo's code-generation flags that change the kernel (--stmatrix); docs/dsl.md lists
// them with what the pinned compiler offers and what it does not. WGMMA from shared-memory
// descriptors, TMA into a STAGES-deep ring completing on events, one producer and one to three
// consumer warpgroups. violation() refuses every configuration the template or the compiler
// cannot build or run, and every configuration whose kernel would refuse the problem's shape (the
// kernel computes M, N, K multiples of its tiles exactly, croq_shape_ok).
#pragma once
#include "croq/search/family.hpp"

namespace croq {

class CroqtileGemmFamily : public KernelFamily {
 public:
  // Shared memory a block may use on sm_90 (232448 bytes), less the alignment slack choreo adds.
  static constexpr int k_smem_limit = 232448 - 1024;
  // The shared memory choreo counts a sm_90 SM to have when it picks a kernel's blocks a SM.
  static constexpr long long k_choreo_smem_capacity = 228 * 1024;

  std::string name() const override { return "croqtile_gemm"; }
  std::string dsl() const override { return "croqtile"; }
  bool supports(const FamilyProblem& p) const override;
  std::vector<ParamSpec> params() const override;
  FamilyConfig default_config(const FamilyProblem& p) const override;
  std::optional<std::string> violation(const FamilyConfig& c, const FamilyProblem& p) const override;
  std::string render_source(const FamilyConfig& c, const FamilyProblem& p) const override;
  // nvcc flags beyond those choreo's script names: none.
  std::vector<std::string> build_flags(const FamilyConfig& c, const FamilyProblem& p) const override;
  // choreo's flags: --stmatrix=true|false.
  std::vector<std::string> choreo_flags(const FamilyConfig& c, const FamilyProblem& p) const override;
  std::vector<std::string> params_for_bottleneck(const std::string& bottleneck) const override;
  std::vector<Alternative> alternatives(const FamilyProblem& p) const override;

  // Shared memory the configuration's kernel uses (bytes): the operand ring and the epilogue tile.
  static long long smem_bytes(const FamilyConfig& c, const FamilyProblem& p);
  // f32 accumulators per consumer thread (64 x WARP_N / 128).
  static int accumulator_registers(const FamilyConfig& c);
  // The most accumulators a consumer thread holds without spilling: ptxas compiles a kernel of T
  // threads for 65536 / T registers (255 at most; setmaxnreg does not raise that), about 40 of
  // which go to addressing. One consumer's 256 threads get 128 where choreo launches two blocks a
  // SM (its __launch_bounds__(256, 2), when the block's shared memory fits twice in 228 KB): that
  // is assumed whenever the operand ring, `ring_bytes`, alone would fit twice.
  static int max_accumulators(const FamilyConfig& c, long long ring_bytes);
  // The registers a thread of the configuration's kernel is launched with (as above).
  static int launched_registers(const FamilyConfig& c, long long ring_bytes);
  // Shared memory of the operand ring alone (bytes).
  static long long ring_bytes(const FamilyConfig& c);
  // setmaxnreg targets (producer, consumers) for a consumer count: all 64K registers of the SM.
  static std::pair<int, int> regctrl_targets(int consumers);
  // Why REGCTRL=1 cannot run with this configuration, or nothing: setmaxnreg.inc takes registers
  // from the block's own pool (the registers its threads were launched with), so the targets must
  // fit in it.
  static std::optional<std::string> regctrl_violation(const FamilyConfig& c);
  // choreo's element type name for croq's (f16, bf16, f32, f8_e4m3); nullopt for the others.
  static std::optional<std::string> choreo_type_name(ScalarType t);
  static const char* template_path() { return "croqtile/matmul/family/gemm_sm90.co.in"; }
};

}  // namespace croq
