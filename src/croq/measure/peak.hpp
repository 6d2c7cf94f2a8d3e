// The device's peak dense throughput per dtype: the ceiling above which a measured time is
// physically impossible (verdict IMPOSSIBLE), and the 95 % line above which a result is flagged.
//
// Known devices come from a table of vendor figures (dense, no sparsity; f16/bf16 and fp8 with
// f32 accumulation):
//
//   device (name contains)   cc    f16/bf16   e4m3     tf32    f32 (no tensor core)
//   H200, H100 SXM/HBM3, H800, GH200  9.0  989.4  1978.9  494.7  66.9
//   H100 NVL                 9.0   835.0      1670.0   417.5   59.8
//   H100 PCIe, H800 PCIe     9.0   756.5      1513.0   378.0   51.2
//   H20                      9.0   148.0      296.0    74.0    44.0
//   A100, A800               8.0   312.0      -        156.0   19.5
//   L40S                     8.9   362.1      733.0    183.0   91.6
//
// Any other device gets an upper estimate: SMs x max SM clock x dense f16 FLOP per SM per clock
// for its compute capability (7.x: 1024, 8.0: 2048, 8.6/8.7/8.9: 1024, 9.0: 4096, 10.x: 8192,
// 12.x: 2048, unknown: 8192), doubled for e4m3, halved for tf32, and 256 FLOP per SM per clock
// for plain f32. An estimate errs high, so that no real kernel is ever refused.
// A CPU gets cores x 5 GHz x 64 f32 FLOP per clock (two AVX-512 FMA units).
#pragma once
#include <string>
#include <vector>

#include "croq/workspace/dtype.hpp"

namespace croq {

struct PeakFigure {
  double tflops = 0;    // 0: this device has no such unit (e.g. fp8 on sm80)
  std::string source;   // "table: NVIDIA H200" / "estimate: 132 SMs x 1980 MHz x 4096 FLOP/clk"
};

// The table above, row by row, in matching order (the first match wins), and the estimate's
// constants: exported whole so that the Python runner applies the same figures
// (measure/rules.hpp), not a copy of them.
struct PeakRow {
  const char* contains;  // lowercase substring of the device name
  const char* excludes;  // lowercase substring that must be absent (or "")
  int cc_major, cc_minor;
  double f16, e4m3, tf32, f32;
};
const std::vector<PeakRow>& peak_rows();
int f16_flop_per_sm_clock(int cc_major, int cc_minor);
struct PeakEstimate {
  int default_clock_mhz = 3000;  // when the device reports no maximum SM clock
  int f32_flop_per_sm_clock = 256;
  double e4m3_factor = 2.0;
  double tf32_factor = 0.5;
};
PeakEstimate peak_estimate_constants();
// Which column of a row applies to a dtype: "f16" (f16 and bf16 inputs), "e4m3", "tf32" or "f32".
const char* peak_column(const DtypePair& dtype);

PeakFigure gpu_peak_tflops(const std::string& name, int cc_major, int cc_minor, int sm_count,
                           int max_sm_clock_mhz, const DtypePair& dtype);
PeakFigure cpu_peak_tflops(int cores, const DtypePair& dtype);
// The peak for an operator: a 2:4 sparse product (gemm_sp), counted as 2 M N K like a dense one,
// reaches twice the dense peak (sparse tensor cores skip the zeros; a CPU kernel skips them too).
PeakFigure peak_for_operator(PeakFigure dense, const std::string& op);

}  // namespace croq
