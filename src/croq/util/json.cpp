// Helpers of json.hpp.
#include "croq/util/json.hpp"

namespace croq {

std::string dump_compact(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string dump_pretty(const json& value) {
  return value.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::optional<json> try_parse_json(std::string_view text, std::string* error) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    if (error) *error = e.what();
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
  if (it->is_string()) {
    // Hand-written records sometimes quote numbers.
    try {
      size_t used = 0;
      const std::string s = it->get<std::string>();
      double v = std::stod(s, &used);
      if (used == s.size()) return v;
    } catch (...) {
    }
  }
  return std::nullopt;
}

std::optional<long long> get_integer(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  auto it = object.find(key);
  if (it == object.end()) return std::nullopt;
  if (it->is_number_integer()) return it->get<long long>();
  if (it->is_number_float()) {
    double d = it->get<double>();
    if (d == static_cast<double>(static_cast<long long>(d))) return static_cast<long long>(d);
    return std::nullopt;
  }
  if (it->is_string()) {
    try {
      size_t used = 0;
      const std::string s = it->get<std::string>();
      long long v = std::stoll(s, &used);
      if (used == s.size()) return v;
    } catch (...) {
    }
  }
  return std::nullopt;
}

}  // namespace croq
