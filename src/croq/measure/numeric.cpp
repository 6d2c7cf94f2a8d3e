// Narrow-type conversions (numeric.hpp).
#include "croq/measure/numeric.hpp"

#include <cmath>

namespace croq {

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
