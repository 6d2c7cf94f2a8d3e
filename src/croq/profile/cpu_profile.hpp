// Profiling for the cpp backend: CPUs in virtual machines (CI included) seldom expose hardware
// counters, so the CPU profile is a timing roofline. The candidate is measured by the CPU runner
// (the same verified timing as `croq measure`), and the classifier compares its achieved FLOP rate
// with the machine's realistic peak (cores x clock x SIMD FMA lanes) and its minimum memory traffic
// with the machine's memory bandwidth. The classes keep the GPU classifier's names and document
// shape; the method is `cpu-timing` and the confidence is never above medium. Every rule and
// threshold is in docs/classifier.md ("The CPU profile").
#pragma once
#include <string>

#include "croq/util/json.hpp"

namespace croq::profile {

// Thresholds of the CPU rules (fractions of the realistic peak FLOP rate).
inline constexpr double k_cpu_compute_frac = 0.50;   // at or above: compute bound
inline constexpr double k_cpu_memory_frac = 0.20;    // below: memory bound (poor cache/register reuse)
inline constexpr double k_cpu_launch_ms = 0.05;      // calls shorter than this: launch (call overhead) bound

struct CpuMachine {
  int cores = 1;
  double mhz = 0;                 // sustained clock per core
  int f32_flop_per_cycle = 32;    // per core: SIMD lanes x 2 (FMA) x FMA units
  std::string isa;                // "avx512", "avx2", "sse"
  double dram_gbps = 20;          // memory bandwidth estimate
  double peak_gflops() const { return cores * mhz * 1e-3 * f32_flop_per_cycle; }
  json to_json() const;
};

// This machine, read from /proc/cpuinfo and sysfs.
CpuMachine this_cpu();

// Classifies a croq-measurement-v1 document of a CPU candidate (verdict PASS). Returns the same
// document shape as `croq classify` (bottleneck, confidence, score, kernel, evidence{key_metrics,
// rules}, metrics, hints, method). Throws Error(usage) if the measurement has no timing.
json classify_cpu_measurement(const json& measurement, const CpuMachine& machine, const std::string& kernel);

}  // namespace croq::profile
