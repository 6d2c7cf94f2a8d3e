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
// Element rule: an element fails when !(|got - want| <= base_tol + rel_tol * |want| + mag_term),
// mag_term being 0 but for the block-scaled operator (mag_tol * sum_k |a_ik b_kj| with the scales
// applied, tolerance.hpp). The negated form makes a NaN or infinite `got` fail.
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
inline constexpr uint64_t k_stream_pattern = 3;  // 2:4 sparse A: which positions are kept
inline constexpr uint64_t k_stream_zeros = 4;    // 2:4 sparse A: kept values set to zero
inline constexpr uint64_t k_stream_perturb = 5;  // B refreshed before a launch

// Index in B's storage of element (row q, column j) of the K x N operand: B row-major (K x N), or
// "col" (stored N x K row-major).
CROQ_HD uint64_t b_index(uint64_t q, uint64_t j, uint64_t k, uint64_t n, bool b_col) {
  return b_col ? j * k + q : q * n + j;
}

// ---- 2:4 structured-sparse A (the kernel ABI's CROQ_OP_MATMUL_SPARSE24) ----
// Row i of A [M,K] is cut into K/4 groups of four; group q = i * (K/4) + g keeps the two positions
// of pattern p(q): the first six groups of A take the patterns 0..5 in order (so every pattern
// occurs, even in a tiny problem), the others a pseudo-random one of the seed. The kept values are
// element (i, k)'s ordinary random value, except in about 9 % of the groups, where one or both of
// them are zero (groups with fewer than two non-zeros). The positions outside the pattern hold
// poison for a candidate (a non-zero value of magnitude 0.25 to 1.25, larger than the kept ones on
// average: a kernel that reads A densely or guesses the pattern from the values fails), and zero
// for the reference and the library baselines.

// Kept positions of pattern p (0..5): {0,1} {0,2} {0,3} {1,2} {1,3} {2,3}.
CROQ_HD int sparse24_first(int p) { return p < 3 ? 0 : (p < 5 ? 1 : 2); }
CROQ_HD int sparse24_second(int p) { return p == 0 ? 1 : p == 1 ? 2 : p == 2 ? 3 : p == 3 ? 2 : 3; }
// The metadata nibble of pattern p: idx0 | idx1 << 2.
CROQ_HD unsigned sparse24_nibble(int p) {
  return static_cast<unsigned>(sparse24_first(p)) | (static_cast<unsigned>(sparse24_second(p)) << 2);
}

CROQ_HD int sparse24_pattern(uint64_t seed, uint64_t group) {
  if (group < 6) return static_cast<int>(group);
  uint64_t key = (seed * 0x9E3779B97F4A7C15ull) ^ (k_stream_pattern * 0xD1B54A32D192ED03ull);
  return static_cast<int>(splitmix64(key + group) % 6);
}

// Which kept values of group `group` are zero: bit 0 the first, bit 1 the second.
CROQ_HD unsigned sparse24_zero_mask(uint64_t seed, uint64_t group) {
  uint64_t key = (seed * 0x9E3779B97F4A7C15ull) ^ (k_stream_zeros * 0xD1B54A32D192ED03ull);
  const uint64_t r = splitmix64(key + group) % 32;
  return r == 0 ? 1u : r == 1 ? 2u : r == 2 ? 3u : 0u;
}

// Element (row, col) of a sparse A of K columns (K a multiple of 8), given its ordinary random
// value `dense_value`. `poison`: the positions outside the pattern get the candidate's poison,
// else zero.
CROQ_HD float sparse24_value(uint64_t seed, uint64_t row, uint64_t col, uint64_t k, float dense_value, bool poison) {
  const uint64_t group = row * (k / 4) + col / 4;
  const int p = sparse24_pattern(seed, group);
  const int pos = static_cast<int>(col % 4);
  if (pos == sparse24_first(p)) return (sparse24_zero_mask(seed, group) & 1u) ? 0.0f : dense_value;
  if (pos == sparse24_second(p)) return (sparse24_zero_mask(seed, group) & 2u) ? 0.0f : dense_value;
  if (!poison) return 0.0f;
  return dense_value >= 0.0f ? dense_value + 0.25f : dense_value - 0.25f;
}

// Whether element (row, col) is inside the pattern.
CROQ_HD bool sparse24_kept(uint64_t seed, uint64_t row, uint64_t col, uint64_t k) {
  const int p = sparse24_pattern(seed, row * (k / 4) + col / 4);
  const int pos = static_cast<int>(col % 4);
  return pos == sparse24_first(p) || pos == sparse24_second(p);
}

// Byte `index` of the metadata [M, K/8] (row index / (K/8); groups 2j and 2j+1 of that row, the
// first in the low nibble).
CROQ_HD unsigned char sparse24_meta_byte(uint64_t seed, uint64_t index, uint64_t k) {
  const uint64_t bytes_per_row = k / 8;
  const uint64_t row = index / bytes_per_row, j = index % bytes_per_row;
  const uint64_t g0 = row * (k / 4) + 2 * j;
  return static_cast<unsigned char>(sparse24_nibble(sparse24_pattern(seed, g0)) |
                                    (sparse24_nibble(sparse24_pattern(seed, g0 + 1)) << 4));
}

// ---- FP8 inputs with scales (dense matmul e4m3: per-tensor scales; the block-scaled operator) ----
// Where a problem carries scales, the e4m3 inputs exercise the whole format: element `index` of
// stream `stream` is sign(x) * 448 * 2^(-10 |x|) for x = random_uniform(seed, stream, index),
// magnitudes log-uniform between 0.44 and 448 (e4m3's largest finite value), then rounded to
// e4m3. Their mean square is about 1.45e4 (RMS ~ 120).
// fp8_scaled_from_uniform is the formula for a given x (the Python runner draws its x from its own
// generator and applies the same formula: MeasureRules.BothRunnersDrawFp8InputsAndScalesAlike).
CROQ_HD float fp8_scaled_from_uniform(float x) {
  const float mag = x < 0.0f ? -x : x;
  // 2^(-10 |x|) as exp2 without <cmath> on the device: integer part by shifting, the rest by a
  // short polynomial (within about 2e-3 of the exact value, plenty: the value is rounded to e4m3,
  // whose steps are 1/16, afterwards).
  const float e = 10.0f * mag;
  const int ei = static_cast<int>(e);
  const float f = e - static_cast<float>(ei);  // in [0, 1)
  // 2^-f for f in [0,1): minimax-ish cubic
  const float p = 1.0f + f * (-0.6931472f + f * (0.2402265f + f * (-0.0555041f + f * 0.0096181f)));
  const float v = 448.0f * p / static_cast<float>(1u << ei);
  return x < 0.0f ? -v : v;
}

CROQ_HD float fp8_scaled_value(uint64_t seed, uint64_t stream, uint64_t index) {
  return fp8_scaled_from_uniform(random_uniform(seed, stream, index));
}

// Scales: f32, with the A and B factors drawn so that the scaled inputs' products keep the size of
// the unscaled operators' (the output's RMS is about 0.3 sqrt(K), as for inputs uniform in [-1, 1)).
// A per-tensor scale spans six orders of magnitude (10^-3 .. 10^3 times a base): a kernel that drops
// it or applies it twice is off by orders of magnitude. Block scales span a factor of 16 per tensor
// (10^-0.6 .. 10^0.6 times the base): a dropped or doubled scale is still off by two orders of
// magnitude (the bases), another block's scale by a factor of up to 16, and every k block keeps a
// share of each output element's sum (at least 1/256 of the largest block's scales), so no block's
// work can be skipped as negligible. (With a span of 10^4 per tensor, 10^8 for the products, a CPU
// kernel that skipped the blocks whose scales were below 3e-4 of the largest saved 15 % of the
// work and passed.)
//   per-tensor (index 0):   t = random_uniform(seed, k_stream_scale, 0)
//                           a_scale = 10^(3t) / 128 * (1 + 0.25 u1), b_scale = 10^(-3t) / 384 * (1 + 0.25 u2)
//   per block (index i):    a_scale[i] = 10^(0.6 t_a(i)) / 128 * ..., b_scale[j] = 10^(0.6 t_b(j)) / 384 * ...
//                           with t_a, t_b independent per block (streams k_stream_scale_a / _b)
inline constexpr uint64_t k_stream_scale = 6;
inline constexpr uint64_t k_stream_scale_a = 7;
inline constexpr uint64_t k_stream_scale_b = 8;

CROQ_HD float pow10_approx(float e) {
  // 10^e = 2^(e log2 10), split into an integer power of two and 2^f by the polynomial above
  const float y = e * 3.3219281f;
  const int yi = static_cast<int>(y >= 0.0f ? y : y - 1.0f);  // floor
  const float f = y - static_cast<float>(yi);                 // [0, 1)
  const float p = 1.0f + f * (0.6931472f + f * (0.2402265f + f * (0.0555041f + f * 0.0096181f)));
  return yi >= 0 ? p * static_cast<float>(1u << yi) : p / static_cast<float>(1u << -yi);
}

// Per-tensor scale of A (which = 0) or B (which = 1) for the generator's values t and u.
CROQ_HD float fp8_tensor_scale_from(float t, float u, int which) {
  return which == 0 ? pow10_approx(3.0f * t) / 128.0f * (1.0f + 0.25f * u)
                    : pow10_approx(-3.0f * t) / 384.0f * (1.0f + 0.25f * u);
}

CROQ_HD float fp8_tensor_scale(uint64_t seed, int which) {
  const float t = random_uniform(seed, k_stream_scale, 0);
  const float u = random_uniform(seed, k_stream_scale, 1 + static_cast<uint64_t>(which));
  return fp8_tensor_scale_from(t, u, which);
}

// log10 of the block scales' span each side of the base (see above).
inline constexpr float k_block_scale_span = 0.6f;

// Block scale `index` of A (which = 0: [ceil(K/bk), M] row-major, the operator's layout) or B
// (which = 1: [ceil(N/bn), ceil(K/bk)] row-major): the index is the scale's place in its tensor.
CROQ_HD float fp8_block_scale(uint64_t seed, int which, uint64_t index) {
  const uint64_t stream = which == 0 ? k_stream_scale_a : k_stream_scale_b;
  const float t = random_uniform(seed, stream, 2 * index);
  const float u = random_uniform(seed, stream, 2 * index + 1);
  return pow10_approx(k_block_scale_span * t) / (which == 0 ? 128.0f : 384.0f) * (1.0f + 0.25f * u);
}

// The seed of the second verification run, derived from the first (recorded in the measurement).
CROQ_HD uint64_t second_seed(uint64_t seed) { return splitmix64(seed ^ 0x5EC0D5EEDull); }

CROQ_HD bool element_fails(double got, double want, double base_tol, double rel_tol, double mag_term = 0) {
  double d = got - want;
  if (d < 0) d = -d;
  double w = want < 0 ? -want : want;
  return !(d <= base_tol + rel_tol * w + mag_term);
}

}  // namespace croq
