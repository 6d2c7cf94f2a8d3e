// Data types of a problem: the dtype token of a shape key ("f16fp32", "bf16", "e4m3", ...) names
// the input type, the output type and the accumulation, with the seeds' spelling variants
// accepted and one canonical spelling per pair.
//
//   canonical  inputs  output  accumulate   accepted variants
//   f16f32     f16     f32     f32          fp16fp32 f16fp32 fp16f32 hgemm32
//   f16        f16     f16     f32          fp16 half
//   bf16f32    bf16    f32     f32          bf16fp32
//   bf16       bf16    bf16    f32
//   e4m3f16    e4m3    f16     f32          e4m3 fp8 fp8e4m3 e4m3fp16
//   e4m3bf16   e4m3    bf16    f32
//   f32        f32     f32     f32          fp32 float
//   tf32       f32     f32     f32 (tf32 multiplies)
#pragma once
#include <optional>
#include <string>

namespace croq {

enum class ScalarType { f16, bf16, f32, tf32, e4m3 };

const char* scalar_type_name(ScalarType t);
int scalar_type_bytes(ScalarType t);

struct DtypePair {
  ScalarType input = ScalarType::f32;   // A and B
  ScalarType output = ScalarType::f32;  // C
  ScalarType compute = ScalarType::f32; // multiply precision (tf32 for the tf32 form)
  const char* canonical = "f32";
};

std::optional<DtypePair> parse_dtype_pair(const std::string& token);
// Throws croq::Error(usage) naming the accepted spellings.
DtypePair parse_dtype_pair_or_throw(const std::string& token);
std::string known_dtype_spellings();

}  // namespace croq
