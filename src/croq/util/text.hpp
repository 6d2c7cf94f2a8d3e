// Small text helpers: UTF-8 validation (records must hold text JSON can carry), trimming,
// and a bounded preview of arbitrary bytes for error messages.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace croq {

bool is_valid_utf8(std::string_view text);
std::string trim(std::string_view text);
std::vector<std::string> split_lines(std::string_view text);
// At most `max_chars` characters, control characters shown as \xNN, "..." when cut.
std::string preview(std::string_view text, size_t max_chars = 80);
bool starts_with(std::string_view text, std::string_view prefix);
bool ends_with(std::string_view text, std::string_view suffix);
std::string to_lower(std::string_view text);

}  // namespace croq
