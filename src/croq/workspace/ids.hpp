// Names in the artifact tree and their validation (the seeds' naming contract):
//   shape key  <operator>_<dtype>_<M>x<N>x<K>[_<suffix>]   used exactly as given, never permuted; the
//              operators croq measures and their forms: operators.hpp
//   tag        [a-z][a-z0-9_]{1,30}
//   iteration  iter<NNN>_<tag>    (NNN: 3 or more digits; iter000 = library baseline)
//   attempt    attempt<AAAA>_<tag> (AAAA, AAAB, ... base-26 letters; attempts use no iter number)
//   model      [a-z0-9][a-z0-9._-]{0,63}, no ".."
//   dsl        cuda | croqtile | triton | cpp
//   gpu key    sm90_NVIDIA_H200, cpu_x86_64, ...  [A-Za-z0-9][A-Za-z0-9_.-]{0,95}
// Every validator refuses what could escape the workspace root: '/', '\\', "..", NUL and other
// control characters.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace croq {

// Throws croq::Error(usage) with a message that names the rule, if `value` is not a valid `what`.
void validate_tag(const std::string& value);
void validate_model(const std::string& value);
// Any well-formed DSL name (lowercase letters, digits, '-', '_'): the folders of DSLs croq cannot
// build (tilelang, helion, cute-dsl, ...) are read, resumed, stored and monitored like any other.
void validate_dsl(const std::string& value);
void validate_gpu_key(const std::string& value);
// A single path component chosen by a user (no separators, no "..", no control characters).
void validate_path_component(const std::string& value, const char* what);

// The DSLs croq builds, measures and profiles (cuda, croqtile, triton, cpp).
const std::vector<std::string>& known_dsls();
bool is_buildable_dsl(const std::string& value);
// validate_dsl, then refuses (usage) a DSL croq cannot build: "croq cannot <what> dsl 'x'".
void require_buildable_dsl(const std::string& value, const std::string& what);

// A parsed shape key. `text` is the key exactly as given; nothing is re-derived from the parts.
struct ShapeKey {
  std::string text;
  std::string op;            // "matmul", "gemm_sp", ... (may be empty: "f16_768x768x768_fs")
  std::string dtype_token;   // as written: "fp16fp32", "f16fp32", "bf16", ...
  std::vector<int64_t> dims; // in the order written: M, N, K for matmul
  std::string suffix;        // "fs" in "..._fs", empty otherwise

  int64_t m() const { return dims.size() > 0 ? dims[0] : 0; }
  int64_t n() const { return dims.size() > 1 ? dims[1] : 0; }
  int64_t k() const { return dims.size() > 2 ? dims[2] : 0; }
};

// Throws croq::Error(usage) on an invalid key.
ShapeKey parse_shape_key(const std::string& text);
std::optional<ShapeKey> try_parse_shape_key(const std::string& text, std::string* why = nullptr);

// iter<NNN>_<tag>
struct IterId {
  int number = 0;
  std::string tag;
  std::string name() const;          // "iter007_stages4"
  std::string number_name() const;   // "iter007"
};
// iter<NNN> holds 3 to 6 digits: iter000 .. iter999999.
inline constexpr int k_max_iter_number = 999999;
// How far past the next free id (iteration or attempt) a stored id may lie: the seeds' rule "do
// not skip large ranges", so that one record cannot use up the ids of a task (iter999999,
// attemptZZZZ).
inline constexpr int k_max_id_skip = 100;
std::string iter_number_name(int number);  // 7 -> "iter007"
IterId parse_iter_id(const std::string& text);              // throws usage
std::optional<IterId> try_parse_iter_id(const std::string& text);
// Accepts "iter007", "7", "007" -> 7 (for --iter arguments); throws usage otherwise.
int parse_iter_number(const std::string& text);
// The same forms as parse_iter_number; nullopt for anything else (never throws).
std::optional<int> try_parse_iter_number(const std::string& text);

// attempt<AAAA>_<tag>
struct AttemptId {
  int index = 0;  // AAAA = 0, AAAB = 1, ..., AABA = 26
  std::string tag;
  std::string name() const;
  std::string letters() const;
};
inline constexpr int k_max_attempts = 26 * 26 * 26 * 26;
std::string attempt_letters(int index);                      // 0 -> "AAAA"; throws past ZZZZ
std::optional<int> parse_attempt_letters(const std::string& letters);
AttemptId parse_attempt_id(const std::string& text);         // throws usage
std::optional<AttemptId> try_parse_attempt_id(const std::string& text);

}  // namespace croq
