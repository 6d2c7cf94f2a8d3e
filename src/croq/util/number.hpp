// Numbers typed by a person or a script (command-line options, numbers quoted in hand-written
// records): strict decimal only, so that "0x10" is not 16, "010" is not 8, " 5" and "5abc" are not
// 5, and "inf", "nan" or "1e999" are not numbers at all. Every numeric option of croq's command
// line goes through these (cli.cpp attaches them to each integer and floating-point option).
//   integer:  [+-]?[0-9]+
//   decimal:  [+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?   finite
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace croq {

std::optional<int64_t> parse_decimal_integer(std::string_view text);
std::optional<double> parse_decimal_number(std::string_view text);
// [0-9]+ up to 2^64 - 1 (seeds).
std::optional<uint64_t> parse_decimal_unsigned(std::string_view text);

// For a command-line value of `flag`: throws Error(usage) naming the flag and the accepted form
// when `text` is not a decimal number in [lo, hi].
int64_t parse_integer_arg(std::string_view text, std::string_view flag, int64_t lo, int64_t hi);
uint64_t parse_unsigned_arg(std::string_view text, std::string_view flag);
double parse_number_arg(std::string_view text, std::string_view flag, double lo, double hi);

// Why `text` is not a decimal number ("" when it is one): for validators that only check.
std::string decimal_problem(std::string_view text, bool integer);

}  // namespace croq
