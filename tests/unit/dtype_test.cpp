// The dtype token of a shape key: the seeds' spellings map to one canonical pair each.
#include <gtest/gtest.h>

#include <string>

#include "croq/util/error.hpp"
#include "croq/workspace/dtype.hpp"

namespace croq {
namespace {

TEST(Dtype, SeedSpellingsMapToOneCanonicalPair) {
  struct Case {
    const char* token;
    const char* canonical;
    ScalarType input, output, compute;
  };
  const Case cases[] = {
      {"f16fp32", "f16f32", ScalarType::f16, ScalarType::f32, ScalarType::f32},
      {"fp16fp32", "f16f32", ScalarType::f16, ScalarType::f32, ScalarType::f32},
      {"fp16f32", "f16f32", ScalarType::f16, ScalarType::f32, ScalarType::f32},
      {"f16f32", "f16f32", ScalarType::f16, ScalarType::f32, ScalarType::f32},
      {"hgemm32", "f16f32", ScalarType::f16, ScalarType::f32, ScalarType::f32},
      {"f16", "f16", ScalarType::f16, ScalarType::f16, ScalarType::f32},
      {"fp16", "f16", ScalarType::f16, ScalarType::f16, ScalarType::f32},
      {"half", "f16", ScalarType::f16, ScalarType::f16, ScalarType::f32},
      {"bf16fp32", "bf16f32", ScalarType::bf16, ScalarType::f32, ScalarType::f32},
      {"bf16", "bf16", ScalarType::bf16, ScalarType::bf16, ScalarType::f32},
      {"e4m3", "e4m3f16", ScalarType::e4m3, ScalarType::f16, ScalarType::f32},
      {"fp8", "e4m3f16", ScalarType::e4m3, ScalarType::f16, ScalarType::f32},
      {"fp8e4m3", "e4m3f16", ScalarType::e4m3, ScalarType::f16, ScalarType::f32},
      {"e4m3bf16", "e4m3bf16", ScalarType::e4m3, ScalarType::bf16, ScalarType::f32},
      {"fp32", "f32", ScalarType::f32, ScalarType::f32, ScalarType::f32},
      {"float", "f32", ScalarType::f32, ScalarType::f32, ScalarType::f32},
      {"tf32", "tf32", ScalarType::f32, ScalarType::f32, ScalarType::tf32},
      {"FP16FP32", "f16f32", ScalarType::f16, ScalarType::f32, ScalarType::f32},
  };
  for (const auto& c : cases) {
    auto p = parse_dtype_pair(c.token);
    ASSERT_TRUE(p.has_value()) << c.token;
    EXPECT_STREQ(p->canonical, c.canonical) << c.token;
    EXPECT_EQ(p->input, c.input) << c.token;
    EXPECT_EQ(p->output, c.output) << c.token;
    EXPECT_EQ(p->compute, c.compute) << c.token;
  }
}

TEST(Dtype, UnknownSpellingsAreRefusedWithTheList) {
  for (const char* bad : {"", "f17", "int8", "fp16 fp32", "f16_f32", "e5m2"}) {
    EXPECT_FALSE(parse_dtype_pair(bad).has_value()) << bad;
  }
  try {
    parse_dtype_pair_or_throw("int8");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    EXPECT_NE(e.hint().find("fp16fp32"), std::string::npos);
  }
}

TEST(Dtype, ScalarSizes) {
  EXPECT_EQ(scalar_type_bytes(ScalarType::f16), 2);
  EXPECT_EQ(scalar_type_bytes(ScalarType::bf16), 2);
  EXPECT_EQ(scalar_type_bytes(ScalarType::f32), 4);
  EXPECT_EQ(scalar_type_bytes(ScalarType::tf32), 4);
  EXPECT_EQ(scalar_type_bytes(ScalarType::e4m3), 1);
  EXPECT_STREQ(scalar_type_name(ScalarType::bf16), "bf16");
}

}  // namespace
}  // namespace croq
