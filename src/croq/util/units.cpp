// Scaled units and text tables (units.hpp).
#include "croq/util/units.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace croq {

std::string format_rate(double tflops) {
  if (!std::isfinite(tflops)) return "-";
  const double a = std::fabs(tflops);
  if (a >= 1.0 || a == 0.0) return fmt::format("{:.1f} TFLOPS", tflops);
  if (a >= 1e-3) return fmt::format("{:.1f} GFLOPS", tflops * 1e3);
  return fmt::format("{:.1f} MFLOPS", tflops * 1e6);
}

std::string format_ms(double ms) {
  if (!std::isfinite(ms)) return "-";
  const double a = std::fabs(ms);
  if (a >= 1000) return fmt::format("{:.2f} s", ms / 1000);
  if (a >= 1.0 || a == 0.0) return fmt::format("{:.2f} ms", ms);
  return fmt::format("{:.1f} µs", ms * 1000);
}

namespace {
size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;  // UTF-8 code points
  return n;
}
}  // namespace

std::string format_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w;
  for (const auto& r : rows) {
    if (w.size() < r.size()) w.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], display_width(r[i]));
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(w[i] - display_width(r[i]) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace croq
