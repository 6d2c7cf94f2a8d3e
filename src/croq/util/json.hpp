// JSON type used throughout croq: nlohmann's ordered_json, so that documents keep the field order
// they were written in (records read the same way they are documented in docs/formats.md).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace croq {

using json = nlohmann::ordered_json;

// One-line compact form (records, stdout documents).
std::string dump_compact(const json& value);
// Indented form (files people read: checkpoints, measurement files).
std::string dump_pretty(const json& value);

// Parses text; nullopt (and `error` filled) instead of an exception on bad input.
std::optional<json> try_parse_json(std::string_view text, std::string* error = nullptr);

// Typed field access that tolerates missing or mistyped fields in hand-written records.
std::optional<std::string> get_string(const json& object, const char* key);
std::optional<double> get_number(const json& object, const char* key);
std::optional<long long> get_integer(const json& object, const char* key);

}  // namespace croq
