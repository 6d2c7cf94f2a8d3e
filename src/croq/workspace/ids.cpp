// Validation of the artifact tree's names (see ids.hpp for the rules).
#include "croq/workspace/ids.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "croq/util/error.hpp"
#include "croq/workspace/dtype.hpp"

namespace croq {

namespace {

bool has_control_or_separator(const std::string& s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f || c == '/' || c == '\\') return true;
  }
  return false;
}

std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
    if (out.size() > 80) {
      out += "...";
      break;
    }
  }
  return out;
}

bool all_of(const std::string& s, size_t from, bool (*pred)(unsigned char)) {
  return std::all_of(s.begin() + static_cast<long>(from), s.end(),
                     [&](char c) { return pred(static_cast<unsigned char>(c)); });
}

bool tag_char(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

bool is_tag(const std::string& v) {
  return v.size() >= 2 && v.size() <= 31 && v[0] >= 'a' && v[0] <= 'z' && all_of(v, 1, tag_char);
}

}  // namespace

void validate_path_component(const std::string& value, const char* what) {
  if (value.empty()) throw_usage(fmt::format("{} is empty", what));
  if (value.find('\0') != std::string::npos || has_control_or_separator(value)) {
    throw_usage(fmt::format("{} '{}' contains a path separator or a control character", what,
                            printable(value)),
                "names in the artifact tree are single folder names");
  }
  if (value == "." || value == ".." || value.find("..") != std::string::npos) {
    throw_usage(fmt::format("{} '{}' contains '..'", what, printable(value)),
                "names in the artifact tree may not point outside the workspace");
  }
}

void validate_tag(const std::string& value) {
  validate_path_component(value, "tag");
  if (!is_tag(value)) {
    throw_usage(fmt::format("invalid tag '{}'", printable(value)),
                "a tag is 2-31 characters: a lowercase letter, then lowercase letters, digits or '_' "
                "(e.g. stages4, swz128_bn256)");
  }
}

void validate_model(const std::string& value) {
  validate_path_component(value, "model");
  auto ok = [](unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
  };
  if (value.size() > 64 || !std::isalnum(static_cast<unsigned char>(value[0])) ||
      !all_of(value, 0, +ok) ||
      std::any_of(value.begin(), value.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); })) {
    throw_usage(fmt::format("invalid model name '{}'", printable(value)),
                "a model name is lowercase letters, digits, '-', '.' or '_', starting with a letter "
                "or digit, at most 64 characters (e.g. opus-4, gpt-5, croq-search)");
  }
}

const std::vector<std::string>& known_dsls() {
  static const std::vector<std::string> dsls = {"cuda", "croqtile", "triton", "cpp"};
  return dsls;
}

void validate_dsl(const std::string& value) {
  validate_path_component(value, "dsl");
  auto ok = [](unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'; };
  if (value.size() > 32 || !(value[0] >= 'a' && value[0] <= 'z') || !all_of(value, 0, +ok)) {
    throw_usage(fmt::format("invalid dsl name '{}'", printable(value)),
                "a dsl name is lowercase letters, digits, '-' or '_', starting with a letter, at most 32 "
                "characters (croq builds cuda, croqtile, triton and cpp; folders of other DSLs such as "
                "tilelang, helion or cute-dsl are read, resumed and stored)");
  }
}

bool is_buildable_dsl(const std::string& value) {
  const auto& dsls = known_dsls();
  return std::find(dsls.begin(), dsls.end(), value) != dsls.end();
}

void require_buildable_dsl(const std::string& value, const std::string& what) {
  validate_dsl(value);
  if (!is_buildable_dsl(value)) {
    throw_usage(fmt::format("croq cannot {} dsl '{}': it builds and runs cuda, croqtile, triton and cpp", what, value),
                "the task's records can still be read and stored: croq resume, store-round (with --tflops), "
                "next-iter, checkpoint, session validate, serve and report work for any dsl");
  }
}

void validate_gpu_key(const std::string& value) {
  validate_path_component(value, "gpu key");
  auto ok = [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '-' || c == '.'; };
  if (value.size() > 96 || !std::isalnum(static_cast<unsigned char>(value[0])) || !all_of(value, 0, +ok)) {
    throw_usage(fmt::format("invalid gpu key '{}'", printable(value)),
                "a gpu key is letters, digits, '_', '-' or '.', as printed by `croq gpu key` "
                "(e.g. sm90_NVIDIA_H200)");
  }
}

std::optional<ShapeKey> try_parse_shape_key(const std::string& text, std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<ShapeKey> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (text.empty()) return fail("the shape key is empty");
  if (text.size() > 160) return fail("the shape key is longer than 160 characters");
  for (unsigned char c : text) {
    if (!(std::isalnum(c) || c == '_')) {
      return fail(fmt::format("character '{}' is not allowed (letters, digits and '_' only)",
                              printable(std::string(1, static_cast<char>(c)))));
    }
  }
  // Split on '_' and find the dimensions token (digits joined by 'x'), scanning from the right.
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find('_', start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); })) {
    return fail("empty part between underscores");
  }
  auto parse_dims = [](const std::string& token, std::vector<int64_t>& dims) {
    dims.clear();
    size_t s = 0;
    while (s <= token.size()) {
      size_t e = token.find('x', s);
      std::string num = token.substr(s, e == std::string::npos ? std::string::npos : e - s);
      if (num.empty() || num.size() > 9 || !std::all_of(num.begin(), num.end(), ::isdigit)) return false;
      int64_t v = std::stoll(num);
      if (v <= 0) return false;
      dims.push_back(v);
      if (e == std::string::npos) break;
      s = e + 1;
    }
    return dims.size() >= 2;
  };
  ShapeKey key;
  key.text = text;
  int dims_at = -1;
  for (int i = static_cast<int>(parts.size()) - 1; i >= 1; --i) {
    std::vector<int64_t> dims;
    if (parse_dims(parts[static_cast<size_t>(i)], dims)) {
      dims_at = i;
      key.dims = dims;
      break;
    }
  }
  if (dims_at < 0) {
    return fail("no dimensions found: expected <operator>_<dtype>_<M>x<N>x<K> "
                "(e.g. matmul_f16fp32_4096x4096x4096); dimension values are positive integers");
  }
  key.dtype_token = parts[static_cast<size_t>(dims_at - 1)];
  if (!parse_dtype_pair(key.dtype_token)) {
    return fail(fmt::format("unknown dtype '{}' (known: {})", key.dtype_token, known_dtype_spellings()));
  }
  for (int i = 0; i < dims_at - 1; ++i) {
    if (i) key.op += "_";
    key.op += parts[static_cast<size_t>(i)];
  }
  for (size_t i = static_cast<size_t>(dims_at) + 1; i < parts.size(); ++i) {
    if (!key.suffix.empty()) key.suffix += "_";
    key.suffix += parts[i];
  }
  if (!key.op.empty() && !(key.op[0] >= 'a' && key.op[0] <= 'z')) {
    return fail(fmt::format("operator '{}' must start with a lowercase letter", key.op));
  }
  return key;
}

ShapeKey parse_shape_key(const std::string& text) {
  std::string why;
  auto key = try_parse_shape_key(text, &why);
  if (!key) {
    throw_usage(fmt::format("invalid shape key '{}': {}", printable(text), why),
                "a shape key is <operator>_<dtype>_<M>x<N>x<K>, used exactly as given "
                "(e.g. matmul_f16fp32_4096x4096x4096)");
  }
  return *key;
}

std::string iter_number_name(int number) { return fmt::format("iter{:03}", number); }

std::string IterId::name() const { return iter_number_name(number) + "_" + tag; }
std::string IterId::number_name() const { return iter_number_name(number); }

std::optional<IterId> try_parse_iter_id(const std::string& text) {
  if (text.rfind("iter", 0) != 0) return std::nullopt;
  size_t i = 4;
  size_t digits_end = i;
  while (digits_end < text.size() && std::isdigit(static_cast<unsigned char>(text[digits_end]))) ++digits_end;
  size_t nd = digits_end - i;
  if (nd < 3 || nd > 6) return std::nullopt;
  if (digits_end >= text.size() || text[digits_end] != '_') return std::nullopt;
  IterId id;
  id.number = std::stoi(text.substr(i, nd));
  id.tag = text.substr(digits_end + 1);
  if (!is_tag(id.tag)) return std::nullopt;
  return id;
}

IterId parse_iter_id(const std::string& text) {
  auto id = try_parse_iter_id(text);
  if (!id) {
    throw_usage(fmt::format("invalid iteration id '{}'", printable(text)),
                "an iteration id is iter<NNN>_<tag> (e.g. iter007_stages4); a bare iter<NNN> "
                "without a tag is not accepted");
  }
  return *id;
}

std::optional<int> try_parse_iter_number(const std::string& text) {
  std::string digits = text;
  if (digits.rfind("iter", 0) == 0) digits = digits.substr(4);
  if (auto us = digits.find('_'); us != std::string::npos) {
    if (!is_tag(digits.substr(us + 1))) return std::nullopt;
    digits.resize(us);
  }
  if (digits.empty() || digits.size() > 6 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    return std::nullopt;
  }
  return std::stoi(digits);
}

int parse_iter_number(const std::string& text) {
  if (auto n = try_parse_iter_number(text)) return *n;
  throw_usage(fmt::format("invalid iteration '{}'", printable(text)), "give iter<NNN> (e.g. iter007) or iter<NNN>_<tag>");
}

std::string attempt_letters(int index) {
  if (index < 0 || index >= k_max_attempts) {
    throw Error(ExitCode::failure, fmt::format("attempt index {} is outside AAAA..ZZZZ", index),
                "a task holds at most 456,976 attempts; start a new task (another model name)");
  }
  std::string s(4, 'A');
  for (int i = 3; i >= 0 && index > 0; --i) {
    s[static_cast<size_t>(i)] = static_cast<char>('A' + index % 26);
    index /= 26;
  }
  return s;
}

std::optional<int> parse_attempt_letters(const std::string& letters) {
  if (letters.size() != 4) return std::nullopt;
  int v = 0;
  for (char c : letters) {
    if (c < 'A' || c > 'Z') return std::nullopt;
    v = v * 26 + (c - 'A');
  }
  return v;
}

std::string AttemptId::letters() const { return attempt_letters(index); }
std::string AttemptId::name() const { return "attempt" + letters() + "_" + tag; }

std::optional<AttemptId> try_parse_attempt_id(const std::string& text) {
  if (text.rfind("attempt", 0) != 0 || text.size() < 7 + 4 + 1 + 2) return std::nullopt;
  auto idx = parse_attempt_letters(text.substr(7, 4));
  if (!idx || text[11] != '_') return std::nullopt;
  AttemptId id;
  id.index = *idx;
  id.tag = text.substr(12);
  if (!is_tag(id.tag)) return std::nullopt;
  return id;
}

AttemptId parse_attempt_id(const std::string& text) {
  auto id = try_parse_attempt_id(text);
  if (!id) {
    throw_usage(fmt::format("invalid attempt id '{}'", printable(text)),
                "an attempt id is attempt<AAAA>_<tag> (e.g. attemptAAAB_stages6)");
  }
  return *id;
}

}  // namespace croq
