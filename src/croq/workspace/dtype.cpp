// The dtype table of dtype.hpp.
#include "croq/workspace/dtype.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <vector>

#include "croq/util/error.hpp"

namespace croq {

namespace {

struct Spelling {
  const char* name;
  DtypePair pair;
};

const std::vector<Spelling>& table() {
  using S = ScalarType;
  static const std::vector<Spelling> t = {
      {"f16f32", {S::f16, S::f32, S::f32, "f16f32"}},
      {"fp16fp32", {S::f16, S::f32, S::f32, "f16f32"}},
      {"f16fp32", {S::f16, S::f32, S::f32, "f16f32"}},
      {"fp16f32", {S::f16, S::f32, S::f32, "f16f32"}},
      {"hgemm32", {S::f16, S::f32, S::f32, "f16f32"}},
      {"f16", {S::f16, S::f16, S::f32, "f16"}},
      {"fp16", {S::f16, S::f16, S::f32, "f16"}},
      {"half", {S::f16, S::f16, S::f32, "f16"}},
      {"bf16f32", {S::bf16, S::f32, S::f32, "bf16f32"}},
      {"bf16fp32", {S::bf16, S::f32, S::f32, "bf16f32"}},
      {"bf16", {S::bf16, S::bf16, S::f32, "bf16"}},
      {"e4m3f16", {S::e4m3, S::f16, S::f32, "e4m3f16"}},
      {"e4m3", {S::e4m3, S::f16, S::f32, "e4m3f16"}},
      {"fp8", {S::e4m3, S::f16, S::f32, "e4m3f16"}},
      {"fp8e4m3", {S::e4m3, S::f16, S::f32, "e4m3f16"}},
      {"e4m3fp16", {S::e4m3, S::f16, S::f32, "e4m3f16"}},
      {"e4m3bf16", {S::e4m3, S::bf16, S::f32, "e4m3bf16"}},
      {"f32", {S::f32, S::f32, S::f32, "f32"}},
      {"fp32", {S::f32, S::f32, S::f32, "f32"}},
      {"float", {S::f32, S::f32, S::f32, "f32"}},
      {"tf32", {S::f32, S::f32, S::tf32, "tf32"}},
  };
  return t;
}

}  // namespace

const char* scalar_type_name(ScalarType t) {
  switch (t) {
    case ScalarType::f16: return "f16";
    case ScalarType::bf16: return "bf16";
    case ScalarType::f32: return "f32";
    case ScalarType::tf32: return "tf32";
    case ScalarType::e4m3: return "e4m3";
  }
  return "?";
}

int scalar_type_bytes(ScalarType t) {
  switch (t) {
    case ScalarType::f16:
    case ScalarType::bf16: return 2;
    case ScalarType::f32:
    case ScalarType::tf32: return 4;
    case ScalarType::e4m3: return 1;
  }
  return 0;
}

std::optional<DtypePair> parse_dtype_pair(const std::string& token) {
  std::string lower = token;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const auto& s : table()) {
    if (lower == s.name) return s.pair;
  }
  return std::nullopt;
}

std::string known_dtype_spellings() {
  std::string out;
  for (const auto& s : table()) {
    if (!out.empty()) out += ", ";
    out += s.name;
  }
  return out;
}

DtypePair parse_dtype_pair_or_throw(const std::string& token) {
  auto p = parse_dtype_pair(token);
  if (!p) {
    throw_usage(fmt::format("unknown dtype '{}'", token),
                fmt::format("use a canonical spelling (f16f32, f16, bf16f32, bf16, e4m3f16, "
                            "e4m3bf16, f32, tf32) or one of: {}",
                            known_dtype_spellings()));
  }
  return *p;
}

}  // namespace croq
