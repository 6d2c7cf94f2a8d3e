// Strict decimal numbers for everything a person or a script types (util/number.hpp): issue 25
// found `--tflops 0x10` read as 16.
#include <gtest/gtest.h>

#include "croq/util/error.hpp"
#include "croq/util/json.hpp"
#include "croq/util/number.hpp"

namespace croq {
namespace {

TEST(Number, DecimalTextIsRead) {
  EXPECT_EQ(parse_decimal_integer("42"), 42);
  EXPECT_EQ(parse_decimal_integer("-7"), -7);
  EXPECT_EQ(parse_decimal_integer("+7"), 7);
  EXPECT_EQ(parse_decimal_integer("007"), 7) << "leading zeros are decimal, not octal";
  EXPECT_DOUBLE_EQ(*parse_decimal_number("512.3"), 512.3);
  EXPECT_DOUBLE_EQ(*parse_decimal_number(".5"), 0.5);
  EXPECT_DOUBLE_EQ(*parse_decimal_number("5."), 5.0);
  EXPECT_DOUBLE_EQ(*parse_decimal_number("3.6e6"), 3.6e6);
  EXPECT_DOUBLE_EQ(*parse_decimal_number("-1E-3"), -1e-3);
  EXPECT_EQ(parse_decimal_unsigned("18446744073709551615"), UINT64_MAX);
}

TEST(Number, EverythingElseIsRefused) {
  for (const char* bad : {"0x10", "0X1F", "010x", "0b101", "1e5", " 5", "5 ", "5abc", "", "-", "+", "1_000", "١٢",
                          "9223372036854775808"}) {
    EXPECT_FALSE(parse_decimal_integer(bad)) << bad;
  }
  for (const char* bad : {"0x10", "0x1p4", "inf", "-inf", "nan", "NaN", "infinity", "1e999", " 5", "5 ", "5.5.5",
                          ".", "e5", "1e", "1e+", "--1", "1,5", ""}) {
    EXPECT_FALSE(parse_decimal_number(bad)) << bad;
  }
  EXPECT_FALSE(parse_decimal_unsigned("-1"));
  EXPECT_FALSE(parse_decimal_unsigned("18446744073709551616"));
}

TEST(Number, ArgumentErrorsNameTheFlagAndTheForm) {
  try {
    parse_number_arg("0x10", "--tflops", 0, 1e6);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    EXPECT_NE(std::string(e.what()).find("--tflops '0x10' is not a decimal number"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_integer_arg("101", "--round", 0, 100), Error);
  EXPECT_EQ(parse_integer_arg("100", "--round", 0, 100), 100);
}

TEST(Number, QuotedNumbersInRecordsAreDecimalOnly) {
  json rec = {{"tflops", "0x10"}, {"round", "0x10"}, {"ok", "301.5"}, {"n", "12"}};
  EXPECT_FALSE(get_number(rec, "tflops"));
  EXPECT_FALSE(get_integer(rec, "round"));
  EXPECT_DOUBLE_EQ(*get_number(rec, "ok"), 301.5);
  EXPECT_EQ(get_integer(rec, "n"), 12);
}

}  // namespace
}  // namespace croq
