// Helpers of json.hpp.
#include "croq/util/json.hpp"

#include <fmt/format.h>
#include "croq/util/number.hpp"

#include <cmath>
#include <limits>

namespace croq {

std::string dump_compact(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string dump_pretty(const json& value) {
  return value.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::optional<std::string> json_limit_violation(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return fmt::format("JSON text of {} bytes; at most {} are read", text.size(), limits.max_bytes);
  }
  // Brackets outside strings; inside a string a backslash escapes the next byte. For a valid
  // prefix this is exactly the parser's nesting, so the parser never goes deeper than this.
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limits.max_depth) {
        return fmt::format("JSON nested deeper than {} levels (at byte {})", limits.max_depth, i);
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

std::optional<json> try_parse_json(std::string_view text, std::string* error, const JsonLimits& limits) {
  if (auto why = json_limit_violation(text, limits)) {
    if (error) *error = *why;
    return std::nullopt;
  }
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    if (error) {
      // "[json.exception.parse_error.101] parse error at line 1, ..." without the bracket.
      std::string what = e.what();
      auto close = what.find("] ");
      *error = what.rfind("[json.exception", 0) == 0 && close != std::string::npos ? what.substr(close + 2) : what;
    }
    return std::nullopt;
  }
}

std::optional<std::string> get_string(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::optional<double> get_number(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  auto it = object.find(key);
  if (it == object.end()) return std::nullopt;
  if (it->is_number()) return it->get<double>();
  // Hand-written records sometimes quote numbers: decimal text only ("0x10" is not 16).
  if (it->is_string()) return parse_decimal_number(it->get_ref<const std::string&>());
  return std::nullopt;
}

std::optional<long long> get_integer(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  auto it = object.find(key);
  if (it == object.end()) return std::nullopt;
  if (it->is_number_unsigned()) {
    auto u = it->get<unsigned long long>();
    if (u > static_cast<unsigned long long>(std::numeric_limits<long long>::max())) return std::nullopt;
    return static_cast<long long>(u);
  }
  if (it->is_number_integer()) return it->get<long long>();
  if (it->is_number_float()) {
    // Only a whole number within long long's range converts (the cast of one outside it is
    // undefined: found by the fuzzer with "round": 2e56).
    double d = it->get<double>();
    if (!(d >= -0x1p63 && d < 0x1p63) || d != std::trunc(d)) return std::nullopt;
    return static_cast<long long>(d);
  }
  if (it->is_string()) {
    if (auto v = parse_decimal_integer(it->get_ref<const std::string&>())) return static_cast<long long>(*v);
  }
  return std::nullopt;
}

}  // namespace croq
