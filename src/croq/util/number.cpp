// Strict decimal numbers (number.hpp).
#include "croq/util/number.hpp"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/util/text.hpp"

namespace croq {

namespace {

bool digit(char c) { return c >= '0' && c <= '9'; }

// Length of the run of digits at text[i...].
size_t digits_at(std::string_view text, size_t i) {
  size_t n = 0;
  while (i + n < text.size() && digit(text[i + n])) ++n;
  return n;
}

bool is_integer_text(std::string_view t) {
  size_t i = (!t.empty() && (t[0] == '+' || t[0] == '-')) ? 1 : 0;
  return i < t.size() && digits_at(t, i) == t.size() - i;
}

bool is_decimal_text(std::string_view t) {
  size_t i = (!t.empty() && (t[0] == '+' || t[0] == '-')) ? 1 : 0;
  const size_t whole = digits_at(t, i);
  i += whole;
  size_t frac = 0;
  if (i < t.size() && t[i] == '.') {
    frac = digits_at(t, i + 1);
    i += 1 + frac;
  }
  if (whole == 0 && frac == 0) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    const size_t exp = digits_at(t, i);
    if (exp == 0) return false;
    i += exp;
  }
  return i == t.size();
}

}  // namespace

std::optional<int64_t> parse_decimal_integer(std::string_view text) {
  if (!is_integer_text(text)) return std::nullopt;
  std::string_view body = text[0] == '+' ? text.substr(1) : text;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), v, 10);
  if (ec != std::errc() || end != body.data() + body.size()) return std::nullopt;  // out of range
  return v;
}

std::optional<uint64_t> parse_decimal_unsigned(std::string_view text) {
  if (text.empty() || digits_at(text, 0) != text.size()) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 10);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_decimal_number(std::string_view text) {
  if (!is_decimal_text(text)) return std::nullopt;
  std::string_view body = text[0] == '+' ? text.substr(1) : text;
  double v = 0;
  auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), v, std::chars_format::general);
  if (ec != std::errc() || end != body.data() + body.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string decimal_problem(std::string_view text, bool integer) {
  if (integer ? parse_decimal_integer(text).has_value() : parse_decimal_number(text).has_value()) return {};
  if (integer && is_integer_text(text)) return fmt::format("'{}' is out of range", preview(text));
  if (!integer && is_decimal_text(text)) return fmt::format("'{}' is out of range", preview(text));
  return fmt::format("'{}' is not a {} (decimal digits only: no hex, octal, spaces, inf or nan)", preview(text),
                     integer ? "whole number" : "decimal number");
}

int64_t parse_integer_arg(std::string_view text, std::string_view flag, int64_t lo, int64_t hi) {
  auto v = parse_decimal_integer(text);
  if (!v || *v < lo || *v > hi) {
    throw_usage(fmt::format("{} {}", flag,
                            v ? fmt::format("{} is outside [{}, {}]", *v, lo, hi) : decimal_problem(text, true)),
                fmt::format("give a whole number from {} to {}, in decimal", lo, hi));
  }
  return *v;
}

uint64_t parse_unsigned_arg(std::string_view text, std::string_view flag) {
  auto v = parse_decimal_unsigned(text);
  if (!v) {
    throw_usage(fmt::format("{} '{}' is not a non-negative whole number below 2^64 in decimal", flag, preview(text)),
                "e.g. 12345");
  }
  return *v;
}

double parse_number_arg(std::string_view text, std::string_view flag, double lo, double hi) {
  auto v = parse_decimal_number(text);
  if (!v || !(*v >= lo && *v <= hi)) {
    throw_usage(fmt::format("{} {}", flag,
                            v ? fmt::format("{} is outside [{}, {}]", *v, lo, hi) : decimal_problem(text, false)),
                fmt::format("give a decimal number from {} to {} (e.g. 12.5)", lo, hi));
  }
  return *v;
}

}  // namespace croq
