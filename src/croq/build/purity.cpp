// Source purity rules (purity.hpp).
#include "croq/build/purity.hpp"

#include <regex>

#include "croq/util/text.hpp"

namespace croq {

json PurityFinding::to_json() const {
  return json{{"file", file}, {"line", line}, {"rule", rule}, {"what", what}, {"text", text}};
}

std::string strip_comments_c(std::string_view text) {
  std::string out(text);
  enum { code, line_comment, block_comment, string_lit, char_lit } state = code;
  for (size_t i = 0; i < out.size(); ++i) {
    char c = out[i];
    char next = i + 1 < out.size() ? out[i + 1] : '\0';
    switch (state) {
      case code:
        if (c == '/' && next == '/') { state = line_comment; out[i] = ' '; }
        else if (c == '/' && next == '*') { state = block_comment; out[i] = ' '; out[i + 1] = ' '; ++i; }
        else if (c == '"') state = string_lit;
        else if (c == '\'') state = char_lit;
        break;
      case line_comment:
        if (c == '\n') state = code; else out[i] = ' ';
        break;
      case block_comment:
        if (c == '*' && next == '/') { out[i] = ' '; out[i + 1] = ' '; ++i; state = code; }
        else if (c != '\n') out[i] = ' ';
        break;
      case string_lit:
        if (c == '\\') ++i;
        else if (c == '"' || c == '\n') state = code;
        break;
      case char_lit:
        if (c == '\\') ++i;
        else if (c == '\'' || c == '\n') state = code;
        break;
    }
  }
  return out;
}

std::string strip_comments_python(std::string_view text) {
  // Comments and string contents become spaces; quotes and line breaks stay.
  std::string out(text);
  char quote = 0;
  bool triple = false;
  for (size_t i = 0; i < out.size(); ++i) {
    char c = out[i];
    if (quote) {
      // String contents are blanked too: a docstring that names torch.matmul calls nothing.
      if (c == '\\') {
        out[i] = ' ';
        if (i + 1 < out.size() && out[i + 1] != '\n') out[++i] = ' ';
        continue;
      }
      if (triple) {
        if (c == quote && i + 2 < out.size() && out[i + 1] == quote && out[i + 2] == quote) { i += 2; quote = 0; }
        else if (c != '\n') out[i] = ' ';
      } else if (c == quote || c == '\n') {
        quote = 0;
      } else {
        out[i] = ' ';
      }
      continue;
    }
    if (c == '#') {
      while (i < out.size() && out[i] != '\n') out[i++] = ' ';
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      triple = i + 2 < out.size() && out[i + 1] == c && out[i + 2] == c;
      if (triple) i += 2;
    }
  }
  return out;
}

namespace {

struct Rule {
  const char* name;
  std::regex re;
};

const std::vector<Rule>& c_family_rules() {
  static const std::vector<Rule> rules = [] {
    std::vector<Rule> r;
    auto add = [&r](const char* name, const char* pattern) { r.push_back({name, std::regex(pattern)}); };
    add("forbidden_include", R"(#\s*include\s*[<"]\s*(cublas\w*|cublasLt\w*|cudnn\w*)(\.h)?\s*[">])");
    add("forbidden_include", R"(#\s*include\s*[<"]\s*cutlass/gemm/(device|kernel)/[^">]*[">])");
    add("forbidden_include", R"(#\s*include\s*[<"]\s*cutlass/gemm/collective/collective_builder\.hpp\s*[">])");
    add("forbidden_include", R"(#\s*include\s*[<"]\s*(torch|ATen|c10)/[^">]*[">])");
    add("forbidden_call", R"(\b(cublas|cublasLt|cudnn)[A-Z]\w*\s*\()");
    add("forbidden_call", R"(\bcutlass\s*::\s*gemm\s*::\s*device\s*::)");
    add("forbidden_call", R"(\bcutlass\s*::\s*gemm\s*::\s*collective\s*::\s*CollectiveBuilder\b)");
    add("forbidden_call", R"(\b(torch|at)\s*::\s*(matmul|mm|bmm|addmm|linear|einsum)\s*\()");
    add("runtime_loading", R"(\b(dlopen|dlsym|dlmopen)\s*\()");
    return r;
  }();
  return rules;
}

const std::vector<Rule>& cpp_extra_rules() {
  static const std::vector<Rule> rules = [] {
    std::vector<Rule> r;
    auto add = [&r](const char* name, const char* pattern) { r.push_back({name, std::regex(pattern)}); };
    add("forbidden_include", R"(#\s*include\s*[<"]\s*(cblas\w*|openblas\w*|f77blas|mkl\w*|lapacke?|Eigen/[^">]*|blis\w*)(\.h)?\s*[">])");
    add("forbidden_call", R"(\bcblas_\w+\s*\()");
    add("forbidden_call", R"(\b[sdcz]gemm_\s*\()");
    add("forbidden_call", R"(\b(mkl|bli)_\w*gemm\w*\s*\()");
    return r;
  }();
  return rules;
}

const std::vector<Rule>& python_rules() {
  static const std::vector<Rule> rules = [] {
    std::vector<Rule> r;
    auto add = [&r](const char* name, const char* pattern) { r.push_back({name, std::regex(pattern)}); };
    add("forbidden_call",
        R"(\btorch\s*\.\s*(matmul|mm|bmm|addmm|addbmm|baddbmm|einsum|tensordot|chain_matmul|mv)\b)");
    add("forbidden_call", R"(\btorch\s*\.\s*linalg\s*\.\s*(matmul|multi_dot)\b)");
    add("forbidden_call", R"(\b(torch\s*\.\s*nn\s*\.\s*functional|F)\s*\.\s*(linear|bilinear)\s*\()");
    add("forbidden_call", R"(\btorch\s*\.\s*ops\s*\.)");
    add("forbidden_call", R"(\btriton\s*\.\s*ops\b)");
    add("forbidden_include", R"(^\s*(import|from)\s+(flash_attn|triton\.ops|xformers|apex)\b)");
    add("forbidden_include", R"(^\s*from\s+torch\s+import\s+[^\n]*\b(matmul|mm|bmm|ops|einsum)\b)");
    return r;
  }();
  return rules;
}

void apply_rules(const std::vector<Rule>& rules, const std::vector<std::string>& stripped, const std::vector<std::string>& raw,
           const std::string& file, std::vector<PurityFinding>& out) {
  for (size_t i = 0; i < stripped.size(); ++i) {
    for (const Rule& rule : rules) {
      std::smatch m;
      if (std::regex_search(stripped[i], m, rule.re)) {
        out.push_back({file, int(i + 1), rule.name, trim(m[0].str()), preview(trim(i < raw.size() ? raw[i] : ""), 200)});
      }
    }
  }
}

}  // namespace

std::vector<PurityFinding> check_source_purity(const std::string& dsl, std::string_view text, const std::string& file) {
  std::vector<PurityFinding> out;
  std::vector<std::string> raw = split_lines(text);
  if (dsl == "triton") {
    apply_rules(python_rules(), split_lines(strip_comments_python(text)), raw, file, out);
    return out;
  }
  std::vector<std::string> stripped = split_lines(strip_comments_c(text));
  apply_rules(c_family_rules(), stripped, raw, file, out);
  if (dsl == "cpp") apply_rules(cpp_extra_rules(), stripped, raw, file, out);
  return out;
}

}  // namespace croq
