/*
 * Host conversions between f32 and the kernel ABI's narrow storage types (f16, bf16, FP8 E4M3),
 * for CPU candidates (dsl cpp) and croq's own runners alike: one copy of the code, bit-exact with
 * the device intrinsics (round to nearest even; NaN stays NaN). C++ only; include it after
 * <croq/kernel_abi.h>.
 *
 *   #include <croq/kernel_abi.h>
 *   #include <croq/host_scalar.h>
 *   float a = croq_host::load(o->a, d->a_type, i);   // element i of A as f32
 *   croq_host::store(o->c, d->c_type, i, acc);        // acc rounded to C's type
 *
 * The f32 -> E4M3 direction is not here: croq's runners build FP8 inputs themselves, and no
 * operator writes FP8 output.
 */
#ifndef CROQ_HOST_SCALAR_H
#define CROQ_HOST_SCALAR_H

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernel_abi.h"

namespace croq_host {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  if (exp == 0) {
    if (man == 0) return f32_from_bits(sign);
    const float v = std::ldexp(static_cast<float>(man), -24);  // subnormal: man * 2^-24
    return sign ? -v : v;
  }
  if (exp == 31) return f32_from_bits(sign | 0x7F800000u | (man << 13));
  return f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

inline uint16_t f32_to_f16(float f) {
  const uint32_t u = f32_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);   // NaN
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to >= 65520: inf
  const int exp = static_cast<int>(abs >> 23) - 127;
  if (exp < -14) {
    // Subnormal or zero in f16: value / 2^-24, rounded to nearest even (r == 1024 carries into
    // exponent 1).
    const float scaled = f32_from_bits(abs) * 16777216.0f;  // exact (a power of two)
    const float r = std::nearbyint(scaled);                  // default rounding: nearest even
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(r));
  }
  const uint32_t man = abs & 0x7FFFFFu;
  uint32_t h = (static_cast<uint32_t>(exp + 15) << 10) | (man >> 13);
  const uint32_t rest = man & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent
  return static_cast<uint16_t>(sign | h);
}

inline float bf16_to_f32(uint16_t h) { return f32_from_bits(static_cast<uint32_t>(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  const uint32_t rounding = 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

inline float e4m3_to_f32(uint8_t v) {
  const uint32_t exp = (v >> 3) & 0xFu;
  const uint32_t man = v & 0x7u;
  if (exp == 0xF && man == 0x7) return std::nanf("");
  const float r = exp == 0 ? std::ldexp(static_cast<float>(man), -9)  // subnormal: man * 2^-6 * 2^-3
                           : std::ldexp(1.0f + static_cast<float>(man) / 8.0f, static_cast<int>(exp) - 7);
  return (v & 0x80u) ? -r : r;
}

/* Element i of a buffer of ABI type t, as f32 (CROQ_F32 and CROQ_TF32 are stored as f32). */
inline float load(const void* p, croq_dtype t, int64_t i) {
  switch (t) {
    case CROQ_F16: return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case CROQ_BF16: return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case CROQ_E4M3: return e4m3_to_f32(static_cast<const uint8_t*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

/* Writes v rounded to ABI type t at element i (f32, f16 or bf16: the output types). */
inline void store(void* p, croq_dtype t, int64_t i, float v) {
  switch (t) {
    case CROQ_F16: static_cast<uint16_t*>(p)[i] = f32_to_f16(v); break;
    case CROQ_BF16: static_cast<uint16_t*>(p)[i] = f32_to_bf16(v); break;
    default: static_cast<float*>(p)[i] = v; break;
  }
}

}  // namespace croq_host

#endif  // CROQ_HOST_SCALAR_H
