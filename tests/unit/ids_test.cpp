// Names in the artifact tree: shape keys (used exactly as given, never permuted), tags, iteration
// and attempt ids, models, dsls, gpu keys, and the refusal of anything that could leave the root.
#include <gtest/gtest.h>

#include <string>

#include "croq/util/error.hpp"
#include "croq/workspace/ids.hpp"

namespace croq {
namespace {

ExitCode code_of(void (*fn)(const std::string&), const std::string& value) {
  try {
    fn(value);
  } catch (const Error& e) {
    return e.code();
  }
  return ExitCode::ok;
}

TEST(ShapeKey, PlainMatmulKeyKeepsItsDimensionOrder) {
  ShapeKey k = parse_shape_key("matmul_f16fp32_4096x2048x512");
  EXPECT_EQ(k.text, "matmul_f16fp32_4096x2048x512");
  EXPECT_EQ(k.op, "matmul");
  EXPECT_EQ(k.dtype_token, "f16fp32");
  ASSERT_EQ(k.dims.size(), 3u);
  EXPECT_EQ(k.m(), 4096);
  EXPECT_EQ(k.n(), 2048);
  EXPECT_EQ(k.k(), 512);
  EXPECT_TRUE(k.suffix.empty());
}

TEST(ShapeKey, ExtendedFormsOfTheSeedsAreAccepted) {
  ShapeKey a = parse_shape_key("matmul_fp16fp32_16384x16384x512");
  EXPECT_EQ(a.op, "matmul");
  EXPECT_EQ(a.dtype_token, "fp16fp32");
  EXPECT_EQ(a.m(), 16384);
  EXPECT_EQ(a.k(), 512);

  ShapeKey b = parse_shape_key("gemm_sp_f16fp32_4096x8192x8192");
  EXPECT_EQ(b.op, "gemm_sp");
  EXPECT_EQ(b.dtype_token, "f16fp32");
  EXPECT_EQ(b.m(), 4096);
  EXPECT_EQ(b.n(), 8192);

  ShapeKey c = parse_shape_key("f16_768x768x768_fs");
  EXPECT_EQ(c.op, "");
  EXPECT_EQ(c.dtype_token, "f16");
  EXPECT_EQ(c.suffix, "fs");
  EXPECT_EQ(c.text, "f16_768x768x768_fs");

  ShapeKey d = parse_shape_key("matmul_bf16_1024x1024");
  EXPECT_EQ(d.dims.size(), 2u);
  ShapeKey e = parse_shape_key("matmul_e4m3_128x256x64_splitk_v2");
  EXPECT_EQ(e.suffix, "splitk_v2");
}

TEST(ShapeKey, IsNeverPermutedOrRewritten) {
  for (const char* text : {"matmul_bf16fp32_16384x16384x512", "matmul_bf16fp32_512x16384x16384",
                           "matmul_FP16FP32_0064x128x256", "matmul_half_3x5x7"}) {
    ShapeKey k = parse_shape_key(text);
    EXPECT_EQ(k.text, text);
  }
  ShapeKey a = parse_shape_key("matmul_bf16fp32_16384x16384x512");
  ShapeKey b = parse_shape_key("matmul_bf16fp32_512x16384x16384");
  EXPECT_NE(a.text, b.text);
  EXPECT_NE(a.dims, b.dims);
  EXPECT_EQ(b.m(), 512);
}

TEST(ShapeKey, InvalidKeysAreRefusedWithAReason) {
  const char* bad[] = {"",
                       "matmul",
                       "matmul_f16fp32",
                       "matmul_f16fp32_4096",            // one dimension is not a shape
                       "matmul_f16fp32_4096x0x512",      // zero
                       "matmul_f16fp32_4096xx512",
                       "matmul_f17_4096x4096x4096",      // unknown dtype
                       "matmul__f16_4096x4096x4096",     // empty part
                       "_f16_64x64x64",
                       "Matmul_f16_64x64x64",            // operator must start lowercase
                       "matmul_f16_64x64x64 ",
                       "matmul-f16-64x64x64",
                       "matmul_f16_1234567890x2x2"};    // too many digits
  for (const char* text : bad) {
    std::string why;
    EXPECT_FALSE(try_parse_shape_key(text, &why).has_value()) << text;
    EXPECT_FALSE(why.empty()) << text;
    EXPECT_THROW(parse_shape_key(text), Error) << text;
  }
  try {
    parse_shape_key("matmul_f17_64x64x64");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    EXPECT_NE(std::string(e.what()).find("unknown dtype 'f17'"), std::string::npos) << e.what();
    EXPECT_FALSE(e.hint().empty());
  }
}

TEST(ShapeKey, EscapesFromTheRootAreRefused) {
  const std::string bad[] = {"..", "../matmul_f16_64x64x64", "matmul_f16_64x64x64/..",
                             "matmul_f16_64x64x64/x", std::string("matmul_f16_64x64x64\0x", 21),
                             "matmul_f16_64x64x64\n", "matmul_f16\t64x64x64", "matmul_f16_64x64x64\x7f",
                             "..matmul_f16_64x64x64", "matmul_f16_64x64x64\\..", std::string(200, 'a')};
  for (const auto& text : bad) EXPECT_FALSE(try_parse_shape_key(text).has_value()) << text;
}

TEST(Tag, FollowsTheSeedsPattern) {
  for (const std::string& ok : {std::string("ab"), std::string("stages4"), std::string("swz128_bn256"),
                                std::string("a_"), std::string(31, 'z')}) {
    EXPECT_EQ(code_of(validate_tag, ok), ExitCode::ok) << ok;
  }
  for (const std::string& bad : {std::string("a"), std::string(32, 'z'), std::string("4stages"), std::string("_ab"),
                                std::string("Stages"), std::string("st-ages"), std::string("st ages"),
                                std::string(""), std::string(".."), std::string("a/b"), std::string("ab\n"),
                                std::string("ab\0c", 4)}) {
    EXPECT_EQ(code_of(validate_tag, bad), ExitCode::usage) << bad;
  }
}

TEST(IterId, ParsesAndFormats) {
  IterId id = parse_iter_id("iter007_stages4");
  EXPECT_EQ(id.number, 7);
  EXPECT_EQ(id.tag, "stages4");
  EXPECT_EQ(id.name(), "iter007_stages4");
  EXPECT_EQ(id.number_name(), "iter007");
  EXPECT_EQ(iter_number_name(0), "iter000");
  EXPECT_EQ(iter_number_name(42), "iter042");
  EXPECT_EQ(iter_number_name(1234), "iter1234");
  EXPECT_EQ(parse_iter_id("iter1234_big").number, 1234);
}

TEST(IterId, BareOrMalformedIdsAreRefused) {
  for (const char* bad : {"iter007", "iter07_ab", "iter007_", "iter007_A", "iter007-ab", "itr007_ab",
                          "iter0000001_ab", "iter007_ab/..", "iter007_a"}) {
    EXPECT_FALSE(try_parse_iter_id(bad).has_value()) << bad;
    EXPECT_THROW(parse_iter_id(bad), Error) << bad;
  }
}

TEST(IterId, IterArgumentAcceptsTheSeedsSpellings) {
  EXPECT_EQ(parse_iter_number("iter007"), 7);
  EXPECT_EQ(parse_iter_number("7"), 7);
  EXPECT_EQ(parse_iter_number("007"), 7);
  EXPECT_EQ(parse_iter_number("iter012_stages4"), 12);
  EXPECT_EQ(try_parse_iter_number("iter012_stages4"), 12);
  EXPECT_EQ(try_parse_iter_number("iter999999"), 999999);
  for (const char* bad : {"", "iter", "1.5", "-1", "iter7x", "iter012_", "iter012_Bad", "1234567", "abc"}) {
    EXPECT_THROW(parse_iter_number(bad), Error) << bad;
    EXPECT_FALSE(try_parse_iter_number(bad).has_value()) << bad;  // the same forms, without throwing
  }
}

TEST(AttemptId, LettersCountInBase26FromAAAA) {
  EXPECT_EQ(attempt_letters(0), "AAAA");
  EXPECT_EQ(attempt_letters(1), "AAAB");
  EXPECT_EQ(attempt_letters(25), "AAAZ");
  EXPECT_EQ(attempt_letters(26), "AABA");
  EXPECT_EQ(attempt_letters(27), "AABB");
  EXPECT_EQ(attempt_letters(26 * 26), "ABAA");
  EXPECT_EQ(attempt_letters(26 * 26 * 26 * 26 - 1), "ZZZZ");
  for (int i : {0, 1, 25, 26, 27, 675, 676, 17575, 456975}) {
    EXPECT_EQ(parse_attempt_letters(attempt_letters(i)), i) << i;
  }
  EXPECT_THROW(attempt_letters(26 * 26 * 26 * 26), Error);
  EXPECT_THROW(attempt_letters(-1), Error);
}

TEST(AttemptId, ParsesAndRefuses) {
  AttemptId a = parse_attempt_id("attemptAABA_stages6");
  EXPECT_EQ(a.index, 26);
  EXPECT_EQ(a.tag, "stages6");
  EXPECT_EQ(a.name(), "attemptAABA_stages6");
  EXPECT_EQ(a.letters(), "AABA");
  for (const char* bad : {"attemptAAA_ab", "attemptaaaa_ab", "attemptAAAA", "attemptAAAA_", "attemptAAAAA_ab",
                          "attemptAAAA_Ab", "attempt0000_ab", "attemptAAAA-ab"}) {
    EXPECT_FALSE(try_parse_attempt_id(bad).has_value()) << bad;
    EXPECT_THROW(parse_attempt_id(bad), Error) << bad;
  }
  EXPECT_FALSE(parse_attempt_letters("AAA").has_value());
  EXPECT_FALSE(parse_attempt_letters("AA1A").has_value());
}

TEST(Model, LowercaseNamesOnly) {
  for (const char* ok : {"opus-4", "gpt-5", "sonnet-4.5", "croq_search", "a", "4o"}) {
    EXPECT_EQ(code_of(validate_model, ok), ExitCode::ok) << ok;
  }
  for (const std::string& bad : {std::string(""), std::string("Opus"), std::string("-opus"), std::string(".opus"),
                                std::string("op us"), std::string("a/b"), std::string(".."), std::string("a..b"),
                                std::string(65, 'a'), std::string("a\x01"), std::string("a\0b", 3)}) {
    EXPECT_EQ(code_of(validate_model, bad), ExitCode::usage) << bad;
  }
}

TEST(Dsl, AnyWellFormedNameIsReadableOnlyKnownDslsAreBuilt) {
  for (const auto& d : known_dsls()) {
    EXPECT_EQ(code_of(validate_dsl, d), ExitCode::ok) << d;
    EXPECT_TRUE(is_buildable_dsl(d)) << d;
  }
  // Folders of DSLs croq cannot build are read, resumed and stored.
  for (const char* other : {"tilelang", "helion", "cute-dsl", "cute_dsl", "python", "thunderkittens2"}) {
    EXPECT_EQ(code_of(validate_dsl, other), ExitCode::ok) << other;
    EXPECT_FALSE(is_buildable_dsl(other)) << other;
    try {
      require_buildable_dsl(other, "build");
      ADD_FAILURE() << other << " was accepted for building";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::usage);
      EXPECT_NE(std::string(e.what()).find("croq cannot build dsl"), std::string::npos) << e.what();
    }
  }
  for (const std::string& bad : {std::string("CUDA"), std::string(""), std::string("../cuda"), std::string("cuda/"),
                                 std::string("-cuda"), std::string("9cuda"), std::string("a b"), std::string(33, 'a')}) {
    EXPECT_EQ(code_of(validate_dsl, bad), ExitCode::usage) << bad;
  }
}

TEST(GpuKey, AcceptsDetectedKeysRefusesPaths) {
  for (const char* ok : {"sm90_NVIDIA_H200", "sm86_NVIDIA_GeForce_RTX_3070", "cpu_x86_64", "sm90_H100"}) {
    EXPECT_EQ(code_of(validate_gpu_key, ok), ExitCode::ok) << ok;
  }
  for (const std::string& bad : {std::string(""), std::string("../x"), std::string("sm90/H200"), std::string(".."),
                                std::string("sm90 H200"), std::string("_sm90"), std::string("sm90\n"),
                                std::string("a\0b", 3)}) {
    EXPECT_EQ(code_of(validate_gpu_key, bad), ExitCode::usage) << bad;
  }
}

TEST(PathComponent, RefusesSeparatorsDotsAndControlCharacters) {
  auto check = [](const std::string& v) {
    try {
      validate_path_component(v, "name");
    } catch (const Error& e) {
      return e.code();
    }
    return ExitCode::ok;
  };
  EXPECT_EQ(check("plain_name-1.2"), ExitCode::ok);
  for (const std::string& bad : {std::string(""), std::string("."), std::string(".."), std::string("a/b"),
                                std::string("a\\b"), std::string("x..y"), std::string("a\tb"),
                                std::string("a\x1b[31m"), std::string("a\0b", 3)}) {
    EXPECT_EQ(check(bad), ExitCode::usage) << bad;
  }
}

}  // namespace
}  // namespace croq
