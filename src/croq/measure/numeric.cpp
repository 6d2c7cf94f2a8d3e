// Narrow-type conversions (numeric.hpp).
#include "croq/measure/numeric.hpp"

#include <cmath>

namespace croq {

float f16_to_f32(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t man = h & 0x3FF;
  if (exp == 0) {
    if (man == 0) return f32_from_bits(sign);
    // subnormal: man * 2^-24
    float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return f32_from_bits(sign | 0x7F800000u | (man << 13));
  return f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t f32_to_f16(float f) {
  uint32_t u = f32_bits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);  // NaN
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u); // rounds to >= 65520: inf
  int exp = static_cast<int>(abs >> 23) - 127;
  if (exp < -14) {
    // subnormal or zero in f16: value / 2^-24, rounded to nearest even
    float a = f32_from_bits(abs);
    float scaled = a * 16777216.0f;  // exact (power of two)
    float r = std::nearbyint(scaled);  // default rounding mode: nearest even
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(r));  // r == 1024 carries into exp 1
  }
  uint32_t man = abs & 0x7FFFFFu;
  uint32_t h = (static_cast<uint32_t>(exp + 15) << 10) | (man >> 13);
  uint32_t rest = man & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent
  return static_cast<uint16_t>(sign | h);
}

float bf16_to_f32(uint16_t h) { return f32_from_bits(static_cast<uint32_t>(h) << 16); }

uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  uint32_t rounding = 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

float e4m3_to_f32(uint8_t v) {
  uint32_t sign = v & 0x80u;
  uint32_t exp = (v >> 3) & 0xF;
  uint32_t man = v & 0x7;
  float r;
  if (exp == 0xF && man == 0x7) return std::nanf("");
  if (exp == 0) r = std::ldexp(static_cast<float>(man), -9);  // subnormal: man * 2^-6 * 2^-3
  else r = std::ldexp(1.0f + static_cast<float>(man) / 8.0f, static_cast<int>(exp) - 7);
  return sign ? -r : r;
}

uint8_t f32_to_e4m3(float f) {
  if (std::isnan(f)) return 0x7F;
  uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  float a = std::fabs(f);
  if (a >= 448.0f) return static_cast<uint8_t>(sign | 0x7E);  // saturate to the largest finite
  // Pick the representable neighbours by brute force over the 127 finite magnitudes: exact
  // round-to-nearest-even without bit tricks (this runs on the host only, on test-sized data).
  uint8_t best = 0;
  float best_d = a;
  for (uint8_t code = 1; code <= 0x7E; ++code) {
    float v = e4m3_to_f32(code);
    float d = std::fabs(v - a);
    if (d < best_d || (d == best_d && (code & 1) == 0 && (best & 1) == 1)) {
      best = code;
      best_d = d;
    }
  }
  return static_cast<uint8_t>(sign | best);
}

float load_as_f32(const void* data, ScalarType t, size_t index) {
  switch (t) {
    case ScalarType::f16: return f16_to_f32(static_cast<const uint16_t*>(data)[index]);
    case ScalarType::bf16: return bf16_to_f32(static_cast<const uint16_t*>(data)[index]);
    case ScalarType::e4m3: return e4m3_to_f32(static_cast<const uint8_t*>(data)[index]);
    case ScalarType::f32:
    case ScalarType::tf32: return static_cast<const float*>(data)[index];
  }
  return 0.0f;
}

void store_from_f32(void* data, ScalarType t, size_t index, float value) {
  switch (t) {
    case ScalarType::f16: static_cast<uint16_t*>(data)[index] = f32_to_f16(value); break;
    case ScalarType::bf16: static_cast<uint16_t*>(data)[index] = f32_to_bf16(value); break;
    case ScalarType::e4m3: static_cast<uint8_t*>(data)[index] = f32_to_e4m3(value); break;
    case ScalarType::f32:
    case ScalarType::tf32: static_cast<float*>(data)[index] = value; break;
  }
}

}  // namespace croq
