// Host conversions between f32 and the narrow storage types of the kernel ABI (f16, bf16,
// FP8 E4M3), bit-exact with the device intrinsics the CUDA runner uses: round to nearest even,
// E4M3 saturating to +-448 (its NaN is 0x7F/0xFF). Used by the CPU runner to build inputs and by
// both runners to read outputs on the host.
#pragma once
#include <croq/host_scalar.h>

#include <cstddef>
#include <cstdint>

#include "croq/workspace/dtype.hpp"

namespace croq {

// One copy of the conversions, shared with CPU candidates (include/croq/host_scalar.h).
using croq_host::bf16_to_f32;
using croq_host::e4m3_to_f32;
using croq_host::f16_to_f32;
using croq_host::f32_bits;
using croq_host::f32_from_bits;
using croq_host::f32_to_bf16;
using croq_host::f32_to_f16;
uint8_t f32_to_e4m3(float f);

// Reads element `index` of a buffer of type `t` as f32 (tf32 is stored as f32).
float load_as_f32(const void* data, ScalarType t, size_t index);
// Writes `value` rounded to type `t` at element `index`.
void store_from_f32(void* data, ScalarType t, size_t index, float value);

}  // namespace croq
