// Small numeric pieces shared by host code and the CUDA runner's device code: the random input
// generator and the element-wise tolerance rule. Written once so that the GPU runner, the CPU
// runner and the unit tests apply exactly the same formulas. This header includes no CUDA header;
// under nvcc the functions are also compiled for the device.
//
// Random inputs: element `index` of stream `stream` (1 = A, 2 = B, ...) for seed `seed` is
//   u = splitmix64(seed * 0x9E3779B97F4A7C15 ^ stream * 0xD1B54A32D192ED03 + index)
//   x = (top 24 bits of u) / 2^23 - 1            in [-1, 1), a multiple of 2^-23
// then rounded to the input type (round to nearest even). Zero has probability 2^-24 per element
// before rounding; inputs are never all zeros and never structured.
//
// Element rule: an element fails when !(|got - want| <= base_tol + rel_tol * |want|). The negated
// form makes a NaN or infinite `got` fail.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define CROQ_HD __host__ __device__ __forceinline__
#else
#define CROQ_HD inline
#endif

namespace croq {

CROQ_HD uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1) for (seed, stream, index).
CROQ_HD float random_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
  uint64_t key = (seed * 0x9E3779B97F4A7C15ull) ^ (stream * 0xD1B54A32D192ED03ull);
  uint64_t u = splitmix64(key + index);
  return static_cast<float>(static_cast<double>(u >> 40) * (1.0 / 8388608.0) - 1.0);
}

// Stream ids of the inputs.
inline constexpr uint64_t k_stream_a = 1;
inline constexpr uint64_t k_stream_b = 2;

// The seed of the second verification run, derived from the first (recorded in the measurement).
CROQ_HD uint64_t second_seed(uint64_t seed) { return splitmix64(seed ^ 0x5EC0D5EEDull); }

CROQ_HD bool element_fails(double got, double want, double base_tol, double rel_tol) {
  double d = got - want;
  if (d < 0) d = -d;
  double w = want < 0 ? -want : want;
  return !(d <= base_tol + rel_tol * w);
}

}  // namespace croq
