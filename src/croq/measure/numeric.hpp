// Host conversions between f32 and the narrow storage types of the kernel ABI (f16, bf16,
// FP8 E4M3), bit-exact with the device intrinsics the CUDA runner uses: round to nearest even,
// E4M3 saturating to +-448 (its NaN is 0x7F/0xFF). Used by the CPU runner to build inputs and by
// both runners to read outputs on the host.
#pragma once
#include <cstdint>
#include <cstring>

#include "croq/workspace/dtype.hpp"

namespace croq {

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

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);
float e4m3_to_f32(uint8_t v);
uint8_t f32_to_e4m3(float f);

// Reads element `index` of a buffer of type `t` as f32 (tf32 is stored as f32).
float load_as_f32(const void* data, ScalarType t, size_t index);
// Writes `value` rounded to type `t` at element `index`.
void store_from_f32(void* data, ScalarType t, size_t index, float value);

}  // namespace croq
