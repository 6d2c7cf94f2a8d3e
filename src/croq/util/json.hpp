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

// Bounds on every JSON text croq reads (files, arguments, HTTP bodies, database rows, child
// output). A document nested deeper than `max_depth` would be read, but copying, comparing or
// printing it recurses once per level and overflows the stack (a 100 000-deep line crashed every
// verb); one above `max_bytes` would take memory without bound. Both are refused as bad input.
struct JsonLimits {
  size_t max_depth = 128;        // arrays and objects inside one another
  size_t max_bytes = 64u << 20;  // of the text
};

// Why `text` exceeds `limits` ("JSON nested deeper than 128 levels (at byte 130)"), or nullopt.
// A linear scan that stops at the first violation; it does not validate the rest.
std::optional<std::string> json_limit_violation(std::string_view text, const JsonLimits& limits = {});

// The only JSON parser in croq: every reader goes through it. Parses text within `limits`;
// nullopt (and `error` filled with what is wrong) instead of an exception on bad input.
std::optional<json> try_parse_json(std::string_view text, std::string* error = nullptr,
                                   const JsonLimits& limits = {});

// Typed field access that tolerates missing or mistyped fields in hand-written records.
std::optional<std::string> get_string(const json& object, const char* key);
std::optional<double> get_number(const json& object, const char* key);
std::optional<long long> get_integer(const json& object, const char* key);

}  // namespace croq
