// Peak throughput table and estimates (peak.hpp).
#include "croq/measure/peak.hpp"

#include <fmt/format.h>

#include "croq/util/text.hpp"

namespace croq {

namespace {

// Order matters: the first row whose pattern matches wins.
const std::vector<PeakRow> k_rows = {
    {"h100 nvl", "", 9, 0, 835.0, 1670.0, 417.5, 59.8},
    {"h100 pcie", "", 9, 0, 756.5, 1513.0, 378.0, 51.2},
    {"h800 pcie", "", 9, 0, 756.5, 1513.0, 378.0, 51.2},
    {"h200", "", 9, 0, 989.4, 1978.9, 494.7, 66.9},
    {"gh200", "", 9, 0, 989.4, 1978.9, 494.7, 66.9},
    {"h100", "", 9, 0, 989.4, 1978.9, 494.7, 66.9},
    {"h800", "", 9, 0, 989.4, 1978.9, 494.7, 66.9},
    {"h20", "", 9, 0, 148.0, 296.0, 74.0, 44.0},
    {"a100", "", 8, 0, 312.0, 0.0, 156.0, 19.5},
    {"a800", "", 8, 0, 312.0, 0.0, 156.0, 19.5},
    {"l40s", "", 8, 9, 362.1, 733.0, 183.0, 91.6},
};

double pick(const DtypePair& d, double f16, double e4m3, double tf32, double f32) {
  const std::string c = peak_column(d);
  return c == "e4m3" ? e4m3 : c == "tf32" ? tf32 : c == "f32" ? f32 : f16;
}

}  // namespace

const std::vector<PeakRow>& peak_rows() { return k_rows; }

PeakEstimate peak_estimate_constants() { return {}; }

const char* peak_column(const DtypePair& d) {
  switch (d.input) {
    case ScalarType::f16:
    case ScalarType::bf16: return "f16";
    case ScalarType::e4m3: return "e4m3";
    case ScalarType::f32:
    case ScalarType::tf32: return d.compute == ScalarType::tf32 ? "tf32" : "f32";
  }
  return "f16";
}

int f16_flop_per_sm_clock(int major, int minor) {
  if (major == 7) return 1024;
  if (major == 8) return minor == 0 ? 2048 : 1024;
  if (major == 9) return 4096;
  if (major == 10) return 8192;
  if (major == 12) return 2048;
  return 8192;
}

PeakFigure gpu_peak_tflops(const std::string& name, int cc_major, int cc_minor, int sm_count, int max_sm_clock_mhz,
                           const DtypePair& dtype) {
  const std::string lower = to_lower(name);
  for (const PeakRow& r : k_rows) {
    if (lower.find(r.contains) == std::string::npos) continue;
    if (*r.excludes && lower.find(r.excludes) != std::string::npos) continue;
    if (r.cc_major != cc_major || r.cc_minor != cc_minor) continue;
    return {pick(dtype, r.f16, r.e4m3, r.tf32, r.f32), fmt::format("table: {}", name)};
  }
  const PeakEstimate e = peak_estimate_constants();
  const int per_clk = f16_flop_per_sm_clock(cc_major, cc_minor);
  const double clock_ghz = (max_sm_clock_mhz > 0 ? max_sm_clock_mhz : e.default_clock_mhz) / 1000.0;
  const double base = sm_count * clock_ghz * per_clk / 1000.0;  // TFLOPS
  const double f32 = sm_count * clock_ghz * e.f32_flop_per_sm_clock / 1000.0;
  return {pick(dtype, base, e.e4m3_factor * base, e.tf32_factor * base, f32),
          fmt::format("estimate: {} SMs x {:.0f} MHz x {} FLOP/clk (f16)", sm_count, clock_ghz * 1000, per_clk)};
}

PeakFigure cpu_peak_tflops(int cores, const DtypePair& dtype) {
  (void)dtype;
  const double t = std::max(cores, 1) * 5.0 * 64 / 1000.0;
  return {t, fmt::format("estimate: {} cores x 5 GHz x 64 FLOP/clk", std::max(cores, 1))};
}

PeakFigure peak_for_operator(PeakFigure dense, const std::string& op) {
  if (op != "gemm_sp" || dense.tflops <= 0) return dense;
  return {2 * dense.tflops, dense.source + ", x2 for 2:4 sparsity (dense-equivalent FLOPs)"};
}

}  // namespace croq
