// Parsing of choreo's generated scripts and the ABI wrapper (choreo.hpp).
#include "croq/build/choreo.hpp"

#include <cctype>
#include <map>
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

namespace {

// croq's ABI type of a choreo element type.
std::optional<std::string> croq_dtype_of(const std::string& choreo_type) {
  if (choreo_type == "f16") return "CROQ_F16";
  if (choreo_type == "bf16") return "CROQ_BF16";
  if (choreo_type == "f32") return "CROQ_F32";
  if (choreo_type == "f8_e4m3") return "CROQ_E4M3";
  return std::nullopt;
}

// The .co's object-like macros whose value is one word (`#define CROQ_IN_T f16`, as a rendered family
// configuration names its element types): a parameter's type may be such a macro.
std::map<std::string, std::string> word_macros(const std::string& code) {
  static const std::regex define_re(R"((?:^|\n)[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+(\w+)[ \t]*(?=\n|$))");
  std::map<std::string, std::string> out;
  for (auto it = std::sregex_iterator(code.begin(), code.end(), define_re); it != std::sregex_iterator(); ++it) {
    out[(*it)[1].str()] = (*it)[2].str();
  }
  return out;
}

}  // namespace

std::optional<ChoreoMatmulSignature> find_matmul_signature(std::string_view co_source, std::string* why) {
  std::string code = strip_comments_c(co_source);
  static const std::regex fn_re(R"(__co__\s+[\w:<>]+\s+(\w+)\s*\(([^)]*)\))");
  static const std::regex param_re(R"(^\s*global\s+(\w+)\s*\[\s*(\w+)\s*,\s*(\w+)\s*\]\s*(\w+)\s*$)");
  static const std::regex stream_re(R"(^\s*stream\s+\w+\s*$)");
  static const std::regex shape_check_re(R"(\bbool\s+croq_shape_ok\s*\()");
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
  ChoreoMatmulSignature sig;
  sig.function = name;
  if (!params.empty() && std::regex_match(params.back(), stream_re)) {
    sig.takes_stream = true;
    params.pop_back();
  }
  if (params.size() != 3 && params.size() != 4) {
    return fail(fmt::format("{} takes {} tensor parameters; a matmul takes (a, b, c), a 2:4 sparse GEMM "
                            "(a_packed, a_meta, b, c), each optionally followed by a stream",
                            name, params.size()));
  }
  sig.sparse24 = params.size() == 4;
  std::vector<std::smatch> m(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    if (!std::regex_match(params[i], m[i], param_re)) {
      return fail(name + "'s parameters are not 2-D global tensors with named dimensions");
    }
  }
  const std::smatch& pa = m[0];
  const std::smatch& pb = m[sig.sparse24 ? 2 : 1];
  const std::smatch& pc = m.back();
  std::string rows = pa[2];
  if (pc[2].str() != rows) return fail(fmt::format("the output's rows ({}) are not A's rows ({})", pc[2].str(), rows));
  std::string n = pc[3];
  // Element types, through the .co's one-word macros (a few levels at most).
  const auto macros = word_macros(code);
  auto type_of = [&](std::string t) {
    for (int depth = 0; depth < 8; ++depth) {
      auto it = macros.find(t);
      if (it == macros.end()) break;
      t = it->second;
    }
    return t;
  };
  sig.a_type = type_of(pa[1]);
  sig.c_type = type_of(pc[1]);
  if (type_of(pb[1]) != sig.a_type) return fail("A and B have different element types");
  for (const auto& [what, t] : {std::pair{"A", sig.a_type}, std::pair{"the output", sig.c_type}}) {
    if (!croq_dtype_of(t)) {
      return fail(fmt::format("{}'s element type '{}' is not one croq's kernel ABI passes (f16, bf16, f32, f8_e4m3)",
                              what, t));
    }
  }
  if (sig.sparse24) {
    const std::smatch& pm = m[1];
    if (type_of(pm[1]) != "u8") return fail(fmt::format("the sparse metadata is {}, not u8", pm[1].str()));
    if (pm[2].str() != rows) return fail(fmt::format("the metadata's rows ({}) are not A's rows ({})", pm[2].str(), rows));
    // B names K; A's second dimension is K/2 (its own name)
    if (pb[2].str() == n) sig.b_col_major = true;
    else if (pb[3].str() == n) sig.b_col_major = false;
    else return fail(fmt::format("B is [{}, {}]; expected [{}, K] or [K, {}]", pb[2].str(), pb[3].str(), n, n));
  } else {
    std::string k = pa[3];
    if (pb[2].str() == n && pb[3].str() == k) sig.b_col_major = true;
    else if (pb[2].str() == k && pb[3].str() == n) sig.b_col_major = false;
    else return fail(fmt::format("B is [{}, {}]; expected [{}, {}] or [{}, {}]", pb[2].str(), pb[3].str(), n, k, k, n));
  }
  sig.shape_check = std::regex_search(code, shape_check_re);
  return sig;
}

std::vector<std::string> choreo_macro_flags(const std::vector<std::string>& choreo_flags) {
  std::vector<std::string> out;
  for (size_t i = 0; i < choreo_flags.size(); ++i) {
    const std::string& f = choreo_flags[i];
    if (f == "-D" && i + 1 < choreo_flags.size()) {
      out.push_back("-D" + choreo_flags[++i]);
    } else if (f.size() > 2 && f.compare(0, 2, "-D") == 0) {
      out.push_back(f);
    }
  }
  return out;
}

namespace {


// Bytes of one element of a choreo type (the compress kernel moves values as raw bits).
int element_bytes(const std::string& choreo_type) {
  if (choreo_type == "f32") return 4;
  if (choreo_type == "f8_e4m3" || choreo_type == "f8_e5m2") return 1;
  return 2;
}

std::string dense_wrapper(const ChoreoMatmulSignature& sig, const std::string& cu_path) {
  const std::string a = croq_dtype_of(sig.a_type).value();  // find_matmul_signature checked both
  const std::string c = croq_dtype_of(sig.c_type).value();
  std::string ldb = sig.b_col_major ? "p->k" : "p->n";
  std::string b_dims = sig.b_col_major ? "size_t(p->n), size_t(p->k)" : "size_t(p->k), size_t(p->n)";
  return fmt::format(
      R"(// Generated by croq build: binds the CroqTile kernel {fn} to croq's kernel ABI.
// {stream_note}
#include "{cu}"
#include <croq/kernel_abi.h>

CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void* a, const void* b, void* c,
                                    void* /*workspace*/, size_t /*workspace_bytes*/, void* {stream_param}) {{
  if (p == nullptr || p->abi_version != CROQ_ABI_VERSION) return CROQ_INVALID_ARGUMENT;
  if (p->a_type != {a} || p->b_type != {a} || p->c_type != {c} || p->compute_type != CROQ_F32)
    return CROQ_UNSUPPORTED;
  if (p->b_layout != {layout}) return CROQ_UNSUPPORTED;
  if (p->lda != p->k || p->ldb != {ldb} || p->ldc != p->n) return CROQ_UNSUPPORTED;
  if (p->m <= 0 || p->n <= 0 || p->k <= 0) return CROQ_UNSUPPORTED;
{shape_check}  auto lhs = choreo::make_spanview<choreo::{at}, 2>(reinterpret_cast<choreo::{at}*>(const_cast<void*>(a)),
                                                   {{size_t(p->m), size_t(p->k)}});
  auto rhs = choreo::make_spanview<choreo::{at}, 2>(reinterpret_cast<choreo::{at}*>(const_cast<void*>(b)), {{{b_dims}}});
  auto out = choreo::make_spanview<choreo::{ct}, 2>(reinterpret_cast<choreo::{ct}*>(c), {{size_t(p->m), size_t(p->n)}});
  {fn}(lhs, rhs, out{stream_arg});
  return cudaGetLastError() == cudaSuccess ? CROQ_OK : CROQ_LAUNCH_FAILED;
}}

CROQ_EXPORT const char* croq_kernel_info(void) {{
  return "{{\"name\": \"{fn}\", \"dsl\": \"croqtile\", \"params\": {{\"binding\": \"abi_wrapper\"}}}}";
}}
)",
      fmt::arg("fn", sig.function), fmt::arg("cu", cu_path), fmt::arg("a", a), fmt::arg("c", c),
      fmt::arg("layout", sig.b_col_major ? "CROQ_COL_MAJOR" : "CROQ_ROW_MAJOR"), fmt::arg("ldb", ldb),
      fmt::arg("b_dims", b_dims), fmt::arg("at", sig.a_type), fmt::arg("ct", sig.c_type),
      fmt::arg("stream_note", sig.takes_stream
                                  ? "The kernel takes croq's stream: its host function enqueues on it."
                                  : "The kernel's host function launches on the default stream; croq's harness "
                                    "synchronises the device around every timed launch, so the timing still "
                                    "covers all of its work."),
      fmt::arg("stream_param", sig.takes_stream ? "stream" : "/*stream*/"),
      fmt::arg("stream_arg", sig.takes_stream ? ", static_cast<cudaStream_t>(stream)" : ""),
      fmt::arg("shape_check", sig.shape_check ? "  if (!croq_shape_ok(p->m, p->n, p->k)) return CROQ_UNSUPPORTED;\n" : ""));
}

std::string sparse_wrapper(const ChoreoMatmulSignature& sig, const std::string& cu_path) {
  const std::string a = croq_dtype_of(sig.a_type).value();  // find_matmul_signature checked both
  const std::string c = croq_dtype_of(sig.c_type).value();
  std::string ldb = sig.b_col_major ? "d->k" : "d->n";
  std::string b_dims = sig.b_col_major ? "size_t(d->n), size_t(d->k)" : "size_t(d->k), size_t(d->n)";
  const int eb = element_bytes(sig.a_type);
  std::string raw = eb == 1 ? "unsigned char" : eb == 2 ? "unsigned short" : "unsigned int";
  return fmt::format(
      R"(// Generated by croq build: binds the CroqTile 2:4 sparse kernel {fn} to croq's kernel ABI (version 2,
// CROQ_OP_MATMUL_SPARSE24). The kernel reads A compressed (a_packed [M, K/2]: the two kept values of
// every group of four; a_meta [M, K/8]: their positions, the nibble order croq's metadata already
// has): croq_gemm_prepare builds both from croq's dense pruned A and its metadata once per input
// set, off the clock, into the prepared buffer (values first, then the metadata).
// {stream_note}
#include "{cu}"
#include <croq/kernel_abi.h>

namespace croq_abi_wrapper {{  // named: nvcc's stubs cannot refer to kernels in an anonymous namespace

using croq_raw_t = {raw};  // one {at} element, moved as raw bits

__global__ void croq_compress_24(const croq_raw_t* a, const unsigned char* meta, croq_raw_t* packed,
                                 unsigned char* packed_meta, long long m, long long k) {{
  const long long bytes_per_row = k / 8, total = m * bytes_per_row;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {{
    const long long row = i / bytes_per_row, byte = i % bytes_per_row;
    const unsigned char b = meta[i];
    packed_meta[i] = b;
    for (int g = 0; g < 2; ++g) {{
      const unsigned nibble = (b >> (4 * g)) & 0xFu;
      const long long src = row * k + byte * 8 + 4 * g, dst = row * (k / 2) + byte * 4 + 2 * g;
      packed[dst] = a[src + (nibble & 3u)];
      packed[dst + 1] = a[src + (nibble >> 2)];
    }}
  }}
}}

size_t croq_packed_bytes(const croq_gemm_desc* d) {{
  return ((size_t(d->m) * size_t(d->k / 2) * sizeof(croq_raw_t)) + 255) / 256 * 256;
}}

croq_status croq_check(const croq_gemm_desc* d) {{
  if (d == nullptr || d->abi_version != CROQ_GEMM_ABI_VERSION) return CROQ_INVALID_ARGUMENT;
  if (d->op != CROQ_OP_MATMUL_SPARSE24) return CROQ_UNSUPPORTED;
  if (d->a_type != {a} || d->b_type != {a} || d->c_type != {c} || d->compute_type != CROQ_F32) return CROQ_UNSUPPORTED;
  if (d->scale_mode != CROQ_SCALE_NONE) return CROQ_UNSUPPORTED;
  if (d->b_layout != {layout}) return CROQ_UNSUPPORTED;
  if (d->lda != d->k || d->ldb != {ldb} || d->ldc != d->n) return CROQ_UNSUPPORTED;
  if (d->m <= 0 || d->n <= 0 || d->k <= 0 || d->k % 8 != 0) return CROQ_UNSUPPORTED;
{shape_check}  return CROQ_OK;
}}

}}  // namespace croq_abi_wrapper

using namespace croq_abi_wrapper;

CROQ_EXPORT size_t croq_gemm_workspace_bytes(const croq_gemm_desc*) {{ return 0; }}

CROQ_EXPORT size_t croq_gemm_prepared_bytes(const croq_gemm_desc* d) {{
  if (croq_check(d) != CROQ_OK) return 0;
  return croq_packed_bytes(d) + size_t(d->m) * size_t(d->k / 8);
}}

CROQ_EXPORT croq_status croq_gemm_prepare(const croq_gemm_desc* d, const croq_gemm_operands* o, void* a_prepared,
                                          size_t a_prepared_bytes, void* stream) {{
  if (croq_status st = croq_check(d); st != CROQ_OK) return st;
  if (o == nullptr || o->a == nullptr || o->a_meta == nullptr || a_prepared == nullptr) return CROQ_INVALID_ARGUMENT;
  if (a_prepared_bytes < croq_gemm_prepared_bytes(d)) return CROQ_INVALID_ARGUMENT;
  auto* packed = static_cast<croq_raw_t*>(a_prepared);
  auto* packed_meta = static_cast<unsigned char*>(a_prepared) + croq_packed_bytes(d);
  const long long total = d->m * (d->k / 8);
  const int threads = 256;
  const long long blocks = (total + threads - 1) / threads;
  croq_compress_24<<<int(blocks < 65535 * 32 ? blocks : 65535 * 32), threads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const croq_raw_t*>(o->a), o->a_meta, packed, packed_meta, d->m, d->k);
  return cudaGetLastError() == cudaSuccess ? CROQ_OK : CROQ_LAUNCH_FAILED;
}}

CROQ_EXPORT croq_status croq_gemm(const croq_gemm_desc* d, const croq_gemm_operands* o, void* {stream_param}) {{
  if (croq_status st = croq_check(d); st != CROQ_OK) return st;
  if (o == nullptr || o->a_prepared == nullptr || o->a_prepared_bytes < croq_gemm_prepared_bytes(d))
    return CROQ_INVALID_ARGUMENT;
  auto* packed = reinterpret_cast<choreo::{at}*>(const_cast<void*>(o->a_prepared));
  auto* packed_meta = reinterpret_cast<choreo::u8*>(static_cast<unsigned char*>(const_cast<void*>(o->a_prepared)) +
                                                    croq_packed_bytes(d));
  auto lhs = choreo::make_spanview<choreo::{at}, 2>(packed, {{size_t(d->m), size_t(d->k / 2)}});
  auto meta = choreo::make_spanview<choreo::u8, 2>(packed_meta, {{size_t(d->m), size_t(d->k / 8)}});
  auto rhs = choreo::make_spanview<choreo::{at}, 2>(reinterpret_cast<choreo::{at}*>(const_cast<void*>(o->b)), {{{b_dims}}});
  auto out = choreo::make_spanview<choreo::{ct}, 2>(reinterpret_cast<choreo::{ct}*>(o->c), {{size_t(d->m), size_t(d->n)}});
  {fn}(lhs, meta, rhs, out{stream_arg});
  return cudaGetLastError() == cudaSuccess ? CROQ_OK : CROQ_LAUNCH_FAILED;
}}

CROQ_EXPORT const char* croq_kernel_info(void) {{
  return "{{\"name\": \"{fn}\", \"dsl\": \"croqtile\", \"params\": {{\"binding\": \"abi_wrapper\", \"operator\": \"gemm_sp\"}}}}";
}}
)",
      fmt::arg("fn", sig.function), fmt::arg("cu", cu_path), fmt::arg("a", a), fmt::arg("c", c),
      fmt::arg("layout", sig.b_col_major ? "CROQ_COL_MAJOR" : "CROQ_ROW_MAJOR"), fmt::arg("ldb", ldb),
      fmt::arg("b_dims", b_dims), fmt::arg("at", sig.a_type), fmt::arg("ct", sig.c_type), fmt::arg("raw", raw),
      fmt::arg("stream_note", sig.takes_stream
                                  ? "The kernel takes croq's stream: its host function enqueues on it."
                                  : "The kernel's host function launches on the default stream; croq's harness "
                                    "synchronises the device around every timed launch."),
      fmt::arg("stream_param", sig.takes_stream ? "stream" : "/*stream*/"),
      fmt::arg("stream_arg", sig.takes_stream ? ", static_cast<cudaStream_t>(stream)" : ""),
      fmt::arg("shape_check", sig.shape_check ? "  if (!croq_shape_ok(d->m, d->n, d->k)) return CROQ_UNSUPPORTED;\n" : ""));
}

}  // namespace

std::string abi_wrapper_source(const ChoreoMatmulSignature& sig, const std::string& cu_path) {
  return sig.sparse24 ? sparse_wrapper(sig, cu_path) : dense_wrapper(sig, cu_path);
}

}  // namespace croq
