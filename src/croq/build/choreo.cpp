// Parsing of choreo's generated scripts and the ABI wrapper (choreo.hpp).
#include "croq/build/choreo.hpp"

#include <cctype>
#include <regex>

#include <fmt/format.h>

#include "croq/build/purity.hpp"
#include "croq/util/text.hpp"

namespace croq {

const Heredoc* ChoreoScript::kernel() const {
  for (const Heredoc& h : files) {
    std::string name = h.path.substr(h.path.find_last_of('/') + 1);
    if (starts_with(name, "__choreo_cute_") && ends_with(name, ".cu")) return &h;
  }
  return nullptr;
}

std::vector<const Heredoc*> ChoreoScript::headers() const {
  std::vector<const Heredoc*> out;
  for (const Heredoc& h : files) {
    if (ends_with(h.path, ".h") || ends_with(h.path, ".hpp") || ends_with(h.path, ".cuh")) out.push_back(&h);
  }
  return out;
}

ChoreoScript parse_cute_result(std::string_view script) {
  // cat <<'EOF' > path    cat << "EOF" > path    cat <<EOF >path    cat > path <<'EOF'
  static const std::regex cat_re(
      R"(^\s*cat\s+(?:<<-?\s*['"]?(\w+)['"]?\s*>\s*(\S+)|>\s*(\S+)\s+<<-?\s*['"]?(\w+)['"]?)\s*$)");
  static const std::regex cflags_re(R"xx(^\s*export\s+CFLAGS="(.*)"\s*$)xx");
  static const std::regex arch_re(R"(^\s*nv_arch=(\S+)\s*$)");
  ChoreoScript out;
  std::vector<std::string> lines = split_lines(script);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    std::smatch m;
    if (line.find("cat") != std::string::npos && std::regex_match(line, m, cat_re)) {
      Heredoc h;
      h.delimiter = m[1].matched ? m[1].str() : m[4].str();
      h.path = m[2].matched ? m[2].str() : m[3].str();
      h.first_line = int(i + 1);
      size_t j = i + 1;
      for (; j < lines.size() && lines[j] != h.delimiter; ++j) {
        h.content += lines[j];
        h.content += '\n';
      }
      out.files.push_back(std::move(h));
      i = j;  // the delimiter line (or the end)
      continue;
    }
    if (std::regex_match(line, m, cflags_re)) {
      out.cflags = m[1].str();
    } else if (std::regex_match(line, m, arch_re)) {
      out.nv_arch = m[1].str();
    }
  }
  return out;
}

std::string expand_shell_vars(const std::string& text, const std::map<std::string, std::string>& vars,
                              std::vector<std::string>* unknown) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$' || i + 1 >= text.size()) {
      out += text[i];
      continue;
    }
    std::string name;
    size_t j = i + 1;
    if (text[j] == '{') {
      size_t close = text.find('}', j);
      if (close == std::string::npos) {
        out += text.substr(i);
        break;
      }
      name = text.substr(j + 1, close - j - 1);
      j = close + 1;
    } else {
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) name += text[j++];
      if (name.empty()) {
        out += '$';
        continue;
      }
    }
    if (auto it = vars.find(name); it != vars.end()) {
      out += it->second;
    } else if (unknown) {
      unknown->push_back(name);
    }
    i = j - 1;
  }
  return out;
}

std::vector<std::string> split_shell_words(const std::string& text) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
      else if (c == '\\' && quote == '"' && i + 1 < text.size()) cur += text[++i];
      else cur += c;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      cur += text[++i];
      in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) words.push_back(cur);
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(cur);
  return words;
}

std::optional<ChoreoMatmulSignature> find_matmul_signature(std::string_view co_source, std::string* why) {
  std::string code = strip_comments_c(co_source);
  static const std::regex fn_re(R"(__co__\s+[\w:<>]+\s+(\w+)\s*\(([^)]*)\))");
  static const std::regex param_re(R"(^\s*global\s+(\w+)\s*\[\s*(\w+)\s*,\s*(\w+)\s*\]\s*(\w+)\s*$)");
  std::vector<std::pair<std::string, std::string>> functions;
  for (auto it = std::sregex_iterator(code.begin(), code.end(), fn_re); it != std::sregex_iterator(); ++it) {
    functions.emplace_back((*it)[1].str(), (*it)[2].str());
  }
  auto fail = [&](std::string reason) -> std::optional<ChoreoMatmulSignature> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (functions.size() != 1) {
    return fail(fmt::format("the .co has {} __co__ functions; the ABI wrapper needs exactly one", functions.size()));
  }
  const auto& [name, params_text] = functions.front();
  std::vector<std::string> params;
  size_t s = 0;
  while (s <= params_text.size()) {
    size_t e = params_text.find(',', s);
    // commas inside [..] belong to the shape
    size_t open = params_text.find('[', s);
    if (open != std::string::npos && e != std::string::npos && open < e) {
      size_t close = params_text.find(']', open);
      e = close == std::string::npos ? std::string::npos : params_text.find(',', close);
    }
    params.push_back(params_text.substr(s, e == std::string::npos ? std::string::npos : e - s));
    if (e == std::string::npos) break;
    s = e + 1;
  }
  if (params.size() != 3) return fail(fmt::format("{} takes {} parameters; a matmul takes (a, b, c)", name, params.size()));
  std::smatch pa, pb, pc;
  if (!std::regex_match(params[0], pa, param_re) || !std::regex_match(params[1], pb, param_re) ||
      !std::regex_match(params[2], pc, param_re)) {
    return fail(name + "'s parameters are not three 2-D global tensors with named dimensions");
  }
  std::string m = pa[2], k = pa[3];
  if (pc[2].str() != m) return fail(fmt::format("the output's rows ({}) are not A's rows ({})", pc[2].str(), m));
  std::string n = pc[3];
  ChoreoMatmulSignature sig;
  sig.function = name;
  sig.a_type = pa[1];
  sig.c_type = pc[1];
  if (pb[1].str() != sig.a_type) return fail("A and B have different element types");
  if (pb[2].str() == n && pb[3].str() == k) sig.b_col_major = true;
  else if (pb[2].str() == k && pb[3].str() == n) sig.b_col_major = false;
  else return fail(fmt::format("B is [{}, {}]; expected [{}, {}] or [{}, {}]", pb[2].str(), pb[3].str(), n, k, k, n));
  return sig;
}

namespace {

std::optional<std::string> croq_dtype_of(const std::string& choreo_type) {
  if (choreo_type == "f16") return "CROQ_F16";
  if (choreo_type == "bf16") return "CROQ_BF16";
  if (choreo_type == "f32") return "CROQ_F32";
  if (choreo_type == "f8_e4m3") return "CROQ_E4M3";
  return std::nullopt;
}

}  // namespace

std::string abi_wrapper_source(const ChoreoMatmulSignature& sig, const std::string& cu_path) {
  std::string a = croq_dtype_of(sig.a_type).value_or("CROQ_F32");
  std::string c = croq_dtype_of(sig.c_type).value_or("CROQ_F32");
  std::string ldb = sig.b_col_major ? "p->k" : "p->n";
  std::string b_dims = sig.b_col_major ? "size_t(p->n), size_t(p->k)" : "size_t(p->k), size_t(p->n)";
  return fmt::format(
      R"(// Generated by croq build: binds the CroqTile kernel {fn} to croq's kernel ABI.
// The generated program's host function launches on the default stream; croq's harness
// synchronises the device around every timed launch, so the timing still covers all of its work.
#include "{cu}"
#include <croq/kernel_abi.h>

CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void* a, const void* b, void* c,
                                    void* /*workspace*/, size_t /*workspace_bytes*/, void* /*stream*/) {{
  if (p == nullptr || p->abi_version != CROQ_ABI_VERSION) return CROQ_INVALID_ARGUMENT;
  if (p->a_type != {a} || p->b_type != {a} || p->c_type != {c} || p->compute_type != CROQ_F32)
    return CROQ_UNSUPPORTED;
  if (p->b_layout != {layout}) return CROQ_UNSUPPORTED;
  if (p->lda != p->k || p->ldb != {ldb} || p->ldc != p->n) return CROQ_UNSUPPORTED;
  if (p->m <= 0 || p->n <= 0 || p->k <= 0) return CROQ_UNSUPPORTED;
  auto lhs = choreo::make_spanview<choreo::{at}, 2>(reinterpret_cast<choreo::{at}*>(const_cast<void*>(a)),
                                                   {{size_t(p->m), size_t(p->k)}});
  auto rhs = choreo::make_spanview<choreo::{at}, 2>(reinterpret_cast<choreo::{at}*>(const_cast<void*>(b)), {{{b_dims}}});
  auto out = choreo::make_spanview<choreo::{ct}, 2>(reinterpret_cast<choreo::{ct}*>(c), {{size_t(p->m), size_t(p->n)}});
  {fn}(lhs, rhs, out);
  return cudaGetLastError() == cudaSuccess ? CROQ_OK : CROQ_LAUNCH_FAILED;
}}

CROQ_EXPORT const char* croq_kernel_info(void) {{
  return "{{\"name\": \"{fn}\", \"dsl\": \"croqtile\", \"params\": {{\"binding\": \"abi_wrapper\"}}}}";
}}
)",
      fmt::arg("fn", sig.function), fmt::arg("cu", cu_path), fmt::arg("a", a), fmt::arg("c", c),
      fmt::arg("layout", sig.b_col_major ? "CROQ_COL_MAJOR" : "CROQ_ROW_MAJOR"), fmt::arg("ldb", ldb),
      fmt::arg("b_dims", b_dims), fmt::arg("at", sig.a_type), fmt::arg("ct", sig.c_type));
}

}  // namespace croq
