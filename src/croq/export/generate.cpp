// The text of an export (generate.hpp). Templates use @NAME@-style placeholders (the generated
// C++ is full of braces, which fmt would need doubled).
#include "croq/export/generate.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include <fmt/format.h>

namespace croq {

namespace {

// Replaces every placeholder; @NAME@ last, so that the text other placeholders bring in may use it.
std::string subst(std::string text, const std::map<std::string, std::string>& values) {
  auto replace = [&](const std::string& key, const std::string& value) {
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size())) {
      text.replace(at, key.size(), value);
    }
  };
  for (const auto& [key, value] : values) {
    if (key != "@NAME@") replace(key, value);
  }
  if (auto it = values.find("@NAME@"); it != values.end()) replace(it->first, it->second);
  return text;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string c_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

const char* dtype_enum(croq_dtype t) {
  switch (t) {
    case CROQ_F16: return "CROQ_F16";
    case CROQ_BF16: return "CROQ_BF16";
    case CROQ_F32: return "CROQ_F32";
    case CROQ_TF32: return "CROQ_TF32";
    case CROQ_E4M3: return "CROQ_E4M3";
  }
  return "CROQ_F32";
}

// The raw string delimiter of the embedded manifest.
constexpr const char* k_raw_delim = "croqinfo";

}  // namespace

bool ExportText::any_cuda() const {
  return std::any_of(kernels.begin(), kernels.end(), [](const ExportKernel& k) { return k.language == "cuda"; });
}
bool ExportText::any_cpp() const {
  return std::any_of(kernels.begin(), kernels.end(), [](const ExportKernel& k) { return k.language == "cpp"; });
}
bool ExportText::any_gemm() const {
  return std::any_of(entries.begin(), entries.end(), [](const KernelEntries& e) { return e.gemm; });
}
bool ExportText::any_prepare() const {
  return std::any_of(entries.begin(), entries.end(),
                     [](const KernelEntries& e) { return e.gemm_prepare && e.gemm_prepared_bytes; });
}

std::string dispatch_rule_text() {
  return "The kernels that can compute the problem are those of its operator and element types (A's type, C's "
         "type, the compute type). They are tried in this order until one does not answer CROQ_UNSUPPORTED: "
         "(1) the kernel tuned for exactly this M, N, K and B layout; (2) the others with the same B layout, "
         "nearest first, the distance being |log2(M/Mt)| + |log2(N/Nt)| + |log2(K/Kt)| for a kernel tuned at "
         "Mt x Nt x Kt (so a shape twice as large in one dimension is as near as one half as large); ties go to "
         "the larger tuned shape, then to the order of the manifest; (3) the kernels of the other B layout, in the "
         "same order. The workspace asked for is the largest any of these kernels needs, so the fallback always "
         "has enough. A problem with a prepared A (ABI version 2) runs on the first kernel only, the one that "
         "prepared it.";
}

std::string dispatcher_source(const ExportText& x) {
  std::string decls, rows;
  for (size_t i = 0; i < x.kernels.size(); ++i) {
    const ExportKernel& k = x.kernels[i];
    const KernelEntries& e = x.entries[i];
    const std::string p = e.prefix;
    decls += fmt::format("// {} {} (round {})\n", k.task.id(), k.record.kernel, k.record.round);
    if (e.matmul) {
      decls += fmt::format("croq_status {}croq_matmul(const croq_matmul_problem*, const void*, const void*, void*, "
                           "void*, size_t, void*);\n", p);
    }
    if (e.matmul_workspace) decls += fmt::format("size_t {}croq_matmul_workspace_bytes(const croq_matmul_problem*);\n", p);
    if (e.gemm) decls += fmt::format("croq_status {}croq_gemm(const croq_gemm_desc*, const croq_gemm_operands*, void*);\n", p);
    if (e.gemm_workspace) decls += fmt::format("size_t {}croq_gemm_workspace_bytes(const croq_gemm_desc*);\n", p);
    if (e.gemm_prepared_bytes && e.gemm_prepare) {
      decls += fmt::format("size_t {}croq_gemm_prepared_bytes(const croq_gemm_desc*);\n", p);
      decls += fmt::format("croq_status {}croq_gemm_prepare(const croq_gemm_desc*, const croq_gemm_operands*, void*, size_t, "
                           "void*);\n", p);
    }
    auto fn = [&](bool has, const std::string& sym) { return has ? "&" + p + sym : std::string("nullptr"); };
    const bool prep = e.gemm_prepared_bytes && e.gemm_prepare;
    rows += fmt::format(
        "    {{{}, {}, {}, {}LL, {}LL, {}LL, {}, {}, {}, {}, {},\n     {}, {}, {}, {}, {}, {}}},\n",
        c_string(k.task.id()), c_string(k.record.kernel), k.record.round, k.m, k.n, k.k, static_cast<int>(k.op),
        dtype_enum(k.a_type), dtype_enum(k.c_type), dtype_enum(k.compute_type),
        k.b_layout == CROQ_ROW_MAJOR ? "CROQ_ROW_MAJOR" : "CROQ_COL_MAJOR", fn(e.matmul, "croq_matmul"),
        fn(e.matmul_workspace, "croq_matmul_workspace_bytes"), fn(e.gemm, "croq_gemm"),
        fn(e.gemm_workspace, "croq_gemm_workspace_bytes"), fn(prep, "croq_gemm_prepared_bytes"),
        fn(prep, "croq_gemm_prepare"));
  }
  std::string gemm_api;
  if (x.any_gemm()) {
    gemm_api = R"TXT(
@NAME@_API croq_status @NAME@_gemm(const croq_gemm_desc* d, const croq_gemm_operands* ops, void* stream) {
  if (!d || !ops || d->abi_version != CROQ_GEMM_ABI_VERSION) return CROQ_INVALID_ARGUMENT;
  int order[k_count];
  const int count = candidates_for_gemm(d, order);
  if (ops->a_prepared) return count > 0 ? call_gemm(k_entries[order[0]], d, ops, stream) : CROQ_UNSUPPORTED;
  for (int i = 0; i < count; ++i) {
    const croq_status st = call_gemm(k_entries[order[i]], d, ops, stream);
    if (st != CROQ_UNSUPPORTED) return st;
  }
  return CROQ_UNSUPPORTED;
}

@NAME@_API size_t @NAME@_gemm_workspace_bytes(const croq_gemm_desc* d) {
  if (!d) return 0;
  int order[k_count];
  const int count = candidates_for_gemm(d, order);
  size_t bytes = 0;
  for (int i = 0; i < count; ++i) bytes = std::max(bytes, gemm_workspace(k_entries[order[i]], d));
  return bytes;
}
)TXT";
    if (x.any_prepare()) {
      gemm_api += R"TXT(
@NAME@_API size_t @NAME@_gemm_prepared_bytes(const croq_gemm_desc* d) {
  if (!d) return 0;
  int order[k_count];
  const int count = candidates_for_gemm(d, order);
  if (count == 0 || !k_entries[order[0]].prepared_bytes) return 0;
  return k_entries[order[0]].prepared_bytes(d);
}

@NAME@_API croq_status @NAME@_gemm_prepare(const croq_gemm_desc* d, const croq_gemm_operands* ops, void* a_prepared,
                                         size_t bytes, void* stream) {
  if (!d || !ops) return CROQ_INVALID_ARGUMENT;
  int order[k_count];
  const int count = candidates_for_gemm(d, order);
  if (count == 0 || !k_entries[order[0]].prepare) return CROQ_UNSUPPORTED;
  return k_entries[order[0]].prepare(d, ops, a_prepared, bytes, stream);
}
)TXT";
    }
  }

  std::string text = R"TXT(// Generated by croq export: the dispatcher of the library @NAME@ (@COUNT@ kernel(s)). Do not edit;
// export again instead. Every kernel's ABI entry points were renamed with its own prefix
// (@NAME@_k<i>_croq_matmul, ...) so that kernels of one template with different configurations
// live side by side; this file is the only one that knows the table.
//
// Dispatch rule: @RULE@
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "croq/kernel_abi.h"

#define @NAME@_API extern "C" __attribute__((visibility("default")))

extern "C" {
@DECLS@}

namespace {

struct Entry {
  const char* task;    // <gpu>/<dsl>/<shape_key>/<model>
  const char* kernel;  // iter<NNN>_<tag>: the task's best KEEP
  int round;
  long long m, n, k;   // the shape it was tuned for
  int op;              // croq_operator
  croq_dtype a_type, c_type, compute_type;
  croq_layout b_layout;
  croq_matmul_fn matmul;
  croq_matmul_workspace_bytes_fn matmul_workspace;
  croq_gemm_fn gemm;
  croq_gemm_workspace_bytes_fn gemm_workspace;
  croq_gemm_prepared_bytes_fn prepared_bytes;
  croq_gemm_prepare_fn prepare;
};

const Entry k_entries[] = {
@ROWS@};
constexpr int k_count = static_cast<int>(sizeof(k_entries) / sizeof(k_entries[0]));

double distance(const Entry& e, long long m, long long n, long long k) {
  return std::fabs(std::log2(static_cast<double>(m) / static_cast<double>(e.m))) +
         std::fabs(std::log2(static_cast<double>(n) / static_cast<double>(e.n))) +
         std::fabs(std::log2(static_cast<double>(k) / static_cast<double>(e.k)));
}

// The kernels that may compute the problem, in dispatch order (the rule above); returns how many.
int candidates(int op, croq_dtype a_type, croq_dtype c_type, croq_dtype compute_type, croq_layout layout,
               long long m, long long n, long long k, bool need_gemm, int* order) {
  int count = 0;
  for (int i = 0; i < k_count; ++i) {
    const Entry& e = k_entries[i];
    if (e.op != op || e.a_type != a_type || e.c_type != c_type || e.compute_type != compute_type) continue;
    if (need_gemm && !e.gemm) continue;
    if (!e.matmul && !e.gemm) continue;
    order[count++] = i;
  }
  if (m <= 0 || n <= 0 || k <= 0) return count;
  std::stable_sort(order, order + count, [&](int x, int y) {
    const Entry& a = k_entries[x];
    const Entry& b = k_entries[y];
    const bool ax = a.m == m && a.n == n && a.k == k && a.b_layout == layout;
    const bool bx = b.m == m && b.n == n && b.k == k && b.b_layout == layout;
    if (ax != bx) return ax;
    if ((a.b_layout == layout) != (b.b_layout == layout)) return a.b_layout == layout;
    const double da = distance(a, m, n, k), db = distance(b, m, n, k);
    if (da != db) return da < db;
    const double va = static_cast<double>(a.m) * a.n * a.k, vb = static_cast<double>(b.m) * b.n * b.k;
    if (va != vb) return va > vb;
    return x < y;
  });
  return count;
}

// The kernel tuned for exactly this problem, or -1 (the common call, decided without a sort).
int exact(const croq_matmul_problem* p) {
  for (int i = 0; i < k_count; ++i) {
    const Entry& e = k_entries[i];
    if (e.op == CROQ_OP_MATMUL && e.m == p->m && e.n == p->n && e.k == p->k && e.b_layout == p->b_layout &&
        e.a_type == p->a_type && e.c_type == p->c_type && e.compute_type == p->compute_type && (e.matmul || e.gemm)) {
      return i;
    }
  }
  return -1;
}

croq_gemm_desc to_desc(const croq_matmul_problem* p) {
  croq_gemm_desc d;
  std::memset(&d, 0, sizeof d);
  d.abi_version = CROQ_GEMM_ABI_VERSION;
  d.struct_bytes = sizeof d;
  d.op = CROQ_OP_MATMUL;
  d.m = p->m;
  d.n = p->n;
  d.k = p->k;
  d.a_type = p->a_type;
  d.b_type = p->b_type;
  d.c_type = p->c_type;
  d.compute_type = p->compute_type;
  d.b_layout = p->b_layout;
  d.lda = p->lda;
  d.ldb = p->ldb;
  d.ldc = p->ldc;
  d.scale_mode = CROQ_SCALE_NONE;
  return d;
}

[[maybe_unused]] croq_matmul_problem to_problem(const croq_gemm_desc* d) {
  croq_matmul_problem p;
  std::memset(&p, 0, sizeof p);
  p.abi_version = CROQ_ABI_VERSION;
  p.m = d->m;
  p.n = d->n;
  p.k = d->k;
  p.a_type = d->a_type;
  p.b_type = d->b_type;
  p.c_type = d->c_type;
  p.compute_type = d->compute_type;
  p.b_layout = d->b_layout;
  p.lda = d->lda;
  p.ldb = d->ldb;
  p.ldc = d->ldc;
  return p;
}

croq_status call_matmul(const Entry& e, const croq_matmul_problem* p, const void* a, const void* b, void* c,
                        void* workspace, size_t workspace_bytes, void* stream) {
  if (e.matmul) return e.matmul(p, a, b, c, workspace, workspace_bytes, stream);
  const croq_gemm_desc d = to_desc(p);
  croq_gemm_operands ops;
  std::memset(&ops, 0, sizeof ops);
  ops.a = a;
  ops.b = b;
  ops.c = c;
  ops.workspace = workspace;
  ops.workspace_bytes = workspace_bytes;
  return e.gemm(&d, &ops, stream);
}

size_t matmul_workspace(const Entry& e, const croq_matmul_problem* p) {
  if (e.matmul) return e.matmul_workspace ? e.matmul_workspace(p) : 0;
  const croq_gemm_desc d = to_desc(p);
  return e.gemm_workspace ? e.gemm_workspace(&d) : 0;
}

// A dense matmul without scales may run on a version-1 kernel too; other operators need croq_gemm.
[[maybe_unused]] bool plain_matmul(const croq_gemm_desc* d) { return d->op == CROQ_OP_MATMUL && d->scale_mode == CROQ_SCALE_NONE; }

[[maybe_unused]] int candidates_for_gemm(const croq_gemm_desc* d, int* order) {
  return candidates(d->op, d->a_type, d->c_type, d->compute_type, d->b_layout, d->m, d->n, d->k, !plain_matmul(d),
                    order);
}

[[maybe_unused]] croq_status call_gemm(const Entry& e, const croq_gemm_desc* d, const croq_gemm_operands* ops,
                                       void* stream) {
  if (e.gemm) return e.gemm(d, ops, stream);
  if (ops->a_prepared) return CROQ_UNSUPPORTED;
  const croq_matmul_problem p = to_problem(d);
  return e.matmul(&p, ops->a, ops->b, ops->c, ops->workspace, ops->workspace_bytes, stream);
}

[[maybe_unused]] size_t gemm_workspace(const Entry& e, const croq_gemm_desc* d) {
  if (e.gemm) return e.gemm_workspace ? e.gemm_workspace(d) : 0;
  const croq_matmul_problem p = to_problem(d);
  return e.matmul_workspace ? e.matmul_workspace(&p) : 0;
}

const char* const k_info = R"@DELIM@(@INFO@)@DELIM@";

}  // namespace

@NAME@_API croq_status @NAME@_matmul(const croq_matmul_problem* p, const void* a, const void* b, void* c,
                                   void* workspace, size_t workspace_bytes, void* stream) {
  if (!p || p->abi_version != CROQ_ABI_VERSION) return CROQ_INVALID_ARGUMENT;
  const int first = exact(p);
  if (first >= 0) {
    const croq_status st = call_matmul(k_entries[first], p, a, b, c, workspace, workspace_bytes, stream);
    if (st != CROQ_UNSUPPORTED) return st;
  }
  int order[k_count];
  const int count = candidates(CROQ_OP_MATMUL, p->a_type, p->c_type, p->compute_type, p->b_layout, p->m, p->n, p->k,
                               false, order);
  for (int i = 0; i < count; ++i) {
    if (order[i] == first) continue;
    const croq_status st = call_matmul(k_entries[order[i]], p, a, b, c, workspace, workspace_bytes, stream);
    if (st != CROQ_UNSUPPORTED) return st;
  }
  return CROQ_UNSUPPORTED;
}

@NAME@_API size_t @NAME@_matmul_workspace_bytes(const croq_matmul_problem* p) {
  if (!p) return 0;
  int order[k_count];
  const int count = candidates(CROQ_OP_MATMUL, p->a_type, p->c_type, p->compute_type, p->b_layout, p->m, p->n, p->k,
                               false, order);
  size_t bytes = 0;
  for (int i = 0; i < count; ++i) bytes = std::max(bytes, matmul_workspace(k_entries[order[i]], p));
  return bytes;
}
@GEMM_API
@NAME@_API croq_matmul_problem @NAME@_make_problem(long long m, long long n, long long k, croq_dtype a_type,
                                                   croq_dtype c_type, croq_layout b_layout) {
  croq_matmul_problem p;
  std::memset(&p, 0, sizeof p);
  p.abi_version = CROQ_ABI_VERSION;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = a_type == CROQ_TF32 ? CROQ_F32 : a_type;
  p.b_type = p.a_type;
  p.c_type = c_type;
  p.compute_type = a_type == CROQ_TF32 ? CROQ_TF32 : CROQ_F32;
  p.b_layout = b_layout;
  p.lda = k;
  p.ldb = b_layout == CROQ_ROW_MAJOR ? n : k;
  p.ldc = n;
  return p;
}

@NAME@_API const char* @NAME@_matmul_choice(const croq_matmul_problem* p) {
  if (!p) return nullptr;
  int order[k_count];
  const int count = candidates(CROQ_OP_MATMUL, p->a_type, p->c_type, p->compute_type, p->b_layout, p->m, p->n, p->k,
                               false, order);
  return count > 0 ? k_entries[order[0]].kernel : nullptr;
}

@NAME@_API const char* @NAME@_matmul_choice_task(const croq_matmul_problem* p) {
  if (!p) return nullptr;
  int order[k_count];
  const int count = candidates(CROQ_OP_MATMUL, p->a_type, p->c_type, p->compute_type, p->b_layout, p->m, p->n, p->k,
                               false, order);
  return count > 0 ? k_entries[order[0]].task : nullptr;
}

@NAME@_API int @NAME@_kernel_count(void) { return k_count; }

@NAME@_API const char* @NAME@_kernel_info(void) { return k_info; }
)TXT";
  return subst(text, {{"@GEMM_API", subst(gemm_api, {{"@NAME@", x.name}})},
                      {"@DECLS@", decls},
                      {"@ROWS@", rows},
                      {"@RULE@", dispatch_rule_text()},
                      {"@COUNT@", std::to_string(x.kernels.size())},
                      {"@INFO@", x.info_json},
                      {"@DELIM@", k_raw_delim},
                      {"@NAME@", x.name}});
}

std::string header_text(const ExportText& x) {
  std::string gemm;
  if (x.any_gemm()) {
    gemm = R"TXT(
/* ABI version 2: any operator the exported kernels implement (dense matmul also on version-1
 * kernels). A problem with a prepared A runs on the kernel that @NAME@_gemm_prepare used. */
croq_status @NAME@_gemm(const croq_gemm_desc* desc, const croq_gemm_operands* operands, void* stream);
size_t @NAME@_gemm_workspace_bytes(const croq_gemm_desc* desc);
)TXT";
    if (x.any_prepare()) {
      gemm += R"TXT(size_t @NAME@_gemm_prepared_bytes(const croq_gemm_desc* desc);
croq_status @NAME@_gemm_prepare(const croq_gemm_desc* desc, const croq_gemm_operands* operands, void* a_prepared,
                                size_t a_prepared_bytes, void* stream);
)TXT";
    }
  }
  std::string where = x.any_cuda() ? "device pointers and a cudaStream_t (as void*)" : "host pointers, stream NULL";
  if (x.any_cuda() && x.any_cpp()) where = "device pointers and a cudaStream_t for GPU kernels, host pointers for CPU kernels";
  std::string list;
  for (const auto& k : x.kernels) {
    list += fmt::format(" *   {} {}x{}x{} {} B {}: {} (round {}, {})\n", k.task.shape.op, k.m, k.n, k.k, k.dtype,
                        k.b_layout == CROQ_ROW_MAJOR ? "row" : "col", k.record.kernel, k.record.round, k.task.id());
  }
  std::string text = R"TXT(/*
 * @NAME@: GPU/CPU kernels tuned by croq, exported as one library (generated by croq export; see
 * manifest.json for where each kernel came from). C = A * B through croq's kernel ABI
 * (croq/kernel_abi.h): A row-major, B row-major (K x N) or "col" (stored N x K), C row-major, with
 * @WHERE@.
 *
 * Kernels (tuned shape: kernel):
@LIST@ *
 * Any shape is accepted: @NAME@_matmul dispatches to the kernel of the nearest tuned shape.
 * @RULE_WRAPPED@
 *
 *   croq_matmul_problem p = @NAME@_make_problem(m, n, k, CROQ_F16, CROQ_F32, CROQ_ROW_MAJOR);
 *   size_t ws = @NAME@_matmul_workspace_bytes(&p);   // allocate once (device memory for GPU kernels)
 *   croq_status st = @NAME@_matmul(&p, a, b, c, workspace, ws, stream);
 */
#ifndef @GUARD@
#define @GUARD@

#include <stddef.h>
#include <stdint.h>

#include "croq/kernel_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* C = A * B: enqueues the work on `stream` (GPU) or computes it (CPU). CROQ_UNSUPPORTED when no
 * exported kernel handles the element types. */
croq_status @NAME@_matmul(const croq_matmul_problem* problem, const void* a, const void* b, void* c, void* workspace,
                          size_t workspace_bytes, void* stream);
/* Scratch memory @NAME@_matmul needs for this problem (0: none). */
size_t @NAME@_matmul_workspace_bytes(const croq_matmul_problem* problem);
@GEMM@
/* A filled problem: leading dimensions K, N (or K for a "col" B) and N; f32 accumulation
 * (a_type CROQ_TF32 gives f32 storage with tf32 multiplies). */
croq_matmul_problem @NAME@_make_problem(long long m, long long n, long long k, croq_dtype a_type, croq_dtype c_type,
                                        croq_layout b_layout);
/* The kernel (iter<NNN>_<tag>) and its task that @NAME@_matmul tries first for this problem, or NULL. */
const char* @NAME@_matmul_choice(const croq_matmul_problem* problem);
const char* @NAME@_matmul_choice_task(const croq_matmul_problem* problem);
int @NAME@_kernel_count(void);
/* The manifest as JSON: every kernel with its task, round, kernel name and tuned shape. */
const char* @NAME@_kernel_info(void);

#ifdef __cplusplus
}
#endif

#endif /* @GUARD@ */
)TXT";
  // The rule as a wrapped comment.
  std::string rule, line;
  for (size_t s = 0; s <= dispatch_rule_text().size();) {
    const std::string r = dispatch_rule_text();
    size_t e = r.find(' ', s);
    std::string word = r.substr(s, e == std::string::npos ? std::string::npos : e - s);
    if (line.size() + word.size() + 1 > 96) {
      rule += line + "\n * ";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    if (e == std::string::npos) break;
    s = e + 1;
  }
  rule += line;
  return subst(text, {{"@GEMM@", subst(gemm, {{"@NAME@", x.name}})},
                      {"@LIST@", list},
                      {"@WHERE@", where},
                      {"@RULE_WRAPPED@", rule},
                      {"@GUARD@", upper(x.name) + "_EXPORT_H"},
                      {"@NAME@", x.name}});
}

std::string cmake_config_text(const ExportText& x, bool shared, bool static_lib) {
  std::string deps = "find_dependency(Threads)\n";
  // The C++ runtime too when the program is linked by a C compiler (a C project: CMake leaves out
  // the runtime IMPORTED_LINK_INTERFACE_LANGUAGES asks for when CXX is not enabled).
  std::string static_links = "Threads::Threads;${CMAKE_DL_LIBS};$<$<NOT:$<LINK_LANGUAGE:CXX>>:stdc++>";
  if (x.any_cuda()) {
    deps += "find_dependency(CUDAToolkit)\n";
    static_links += ";CUDA::cudart_static";
    if (x.any_cuda()) static_links += ";rt";
  }
  std::string targets;
  if (shared) {
    targets += R"TXT(  add_library(@NAME@::@NAME@ SHARED IMPORTED)
  set_target_properties(@NAME@::@NAME@ PROPERTIES
    IMPORTED_LOCATION "${_@NAME@_prefix}/lib/lib@NAME@.so"
    IMPORTED_SONAME "lib@NAME@.so"
    INTERFACE_INCLUDE_DIRECTORIES "${_@NAME@_prefix}/include")
)TXT";
  }
  if (static_lib) {
    targets += R"TXT(  add_library(@NAME@::@NAME@_static STATIC IMPORTED)
  set_target_properties(@NAME@::@NAME@_static PROPERTIES
    IMPORTED_LOCATION "${_@NAME@_prefix}/lib/lib@NAME@.a"
    IMPORTED_LINK_INTERFACE_LANGUAGES "CXX"
    INTERFACE_INCLUDE_DIRECTORIES "${_@NAME@_prefix}/include"
    INTERFACE_LINK_LIBRARIES "@STATIC_LINKS@")
)TXT";
    if (!shared) {
      targets += R"TXT(  add_library(@NAME@::@NAME@ INTERFACE IMPORTED)
  set_target_properties(@NAME@::@NAME@ PROPERTIES INTERFACE_LINK_LIBRARIES @NAME@::@NAME@_static)
)TXT";
    }
  }
  std::string text = R"TXT(# @NAME@: kernels tuned by croq (generated by croq export). Use:
#   find_package(@NAME@ REQUIRED PATHS <export folder>)
#   target_link_libraries(app PRIVATE @NAME@::@NAME@)          # the shared library
#   target_link_libraries(app PRIVATE @NAME@::@NAME@_static)   # the static library (C++ runtime@CUDA_NOTE@)
include(CMakeFindDependencyMacro)
@DEPS@get_filename_component(_@NAME@_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET @NAME@::@NAME@)
@TARGETS@endif()
set(@NAME@_INCLUDE_DIRS "${_@NAME@_prefix}/include")
set(@NAME@_MANIFEST "${_@NAME@_prefix}/manifest.json")
)TXT";
  // @TARGETS@ holds @STATIC_LINKS@: filled in first (subst replaces its keys in their sorted order).
  return subst(text, {{"@DEPS@", deps},
                      {"@TARGETS@", subst(targets, {{"@STATIC_LINKS@", static_links}})},
                      {"@CUDA_NOTE@", x.any_cuda() ? ", CUDA runtime" : ""},
                      {"@STATIC_LINKS@", static_links},
                      {"@NAME@", x.name}});
}

std::string cmake_version_text(const std::string& version) {
  return subst(R"TXT(# Generated by croq export: any version request is satisfied (an export has no API versions of its own).
set(PACKAGE_VERSION "@VERSION@")
set(PACKAGE_VERSION_COMPATIBLE TRUE)
if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
  set(PACKAGE_VERSION_EXACT TRUE)
endif()
)TXT",
               {{"@VERSION@", version}});
}

std::string torch_extension_source(const ExportText& x) {
  std::string text = R"TXT(// torch.ops.@NAME@.matmul: the exported kernels as a PyTorch operator (generated by croq export).
// Built by setup.py beside this file, which links ../lib/lib@NAME@.a (the same objects as the
// shared library). a [M,K] and b [K,N], contiguous or not (copied to contiguous), of one dtype;
// out_dtype defaults to float32 when a kernel with f32 output exists for the input type, else to
// the input type. The call dispatches like @NAME@_matmul (nearest tuned shape).
#include <optional>

#include <torch/extension.h>
#include <torch/library.h>
@CUDA_INCLUDE@
#include "@NAME@.h"

namespace {

croq_dtype to_croq(at::ScalarType t) {
  switch (t) {
    case at::kHalf: return CROQ_F16;
    case at::kBFloat16: return CROQ_BF16;
    case at::kFloat: return CROQ_F32;
    default: TORCH_CHECK(false, "@NAME@.matmul: unsupported dtype ", t);
  }
  return CROQ_F32;
}

at::ScalarType to_torch(croq_dtype t) {
  return t == CROQ_F16 ? at::kHalf : t == CROQ_BF16 ? at::kBFloat16 : at::kFloat;
}

at::Tensor matmul(const at::Tensor& a, const at::Tensor& b, std::optional<at::ScalarType> out_dtype) {
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2, "@NAME@.matmul: a and b must be matrices");
  TORCH_CHECK(a.size(1) == b.size(0), "@NAME@.matmul: a is ", a.sizes(), " and b is ", b.sizes());
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "@NAME@.matmul: a and b must have one dtype");
  TORCH_CHECK(a.device() == b.device(), "@NAME@.matmul: a and b must be on one device");
  const at::Tensor A = a.contiguous();
  const at::Tensor B = b.contiguous();
  const long long m = A.size(0), k = A.size(1), n = B.size(1);
  const croq_dtype in = to_croq(A.scalar_type());
  croq_dtype out = in;
  if (out_dtype) {
    out = to_croq(*out_dtype);
  } else {
    croq_matmul_problem probe = @NAME@_make_problem(m, n, k, in, CROQ_F32, CROQ_ROW_MAJOR);
    if (@NAME@_matmul_choice(&probe) != nullptr) out = CROQ_F32;
  }
  croq_matmul_problem p = @NAME@_make_problem(m, n, k, in, out, CROQ_ROW_MAJOR);
  at::Tensor C = at::empty({m, n}, A.options().dtype(to_torch(out)));
  if (m == 0 || n == 0) return C;
  const size_t ws_bytes = @NAME@_matmul_workspace_bytes(&p);
  at::Tensor ws;
  if (ws_bytes > 0) ws = at::empty({static_cast<int64_t>(ws_bytes)}, A.options().dtype(at::kByte));
  void* stream = nullptr;
@STREAM@
  const croq_status st = @NAME@_matmul(&p, A.data_ptr(), B.data_ptr(), C.data_ptr(),
                                       ws_bytes > 0 ? ws.data_ptr() : nullptr, ws_bytes, stream);
  const char* kernel = @NAME@_matmul_choice(&p);
  TORCH_CHECK(st == CROQ_OK, "@NAME@.matmul: status ", static_cast<int>(st), " (kernel ",
              kernel ? kernel : "none for these dtypes", ")");
  return C;
}

}  // namespace

TORCH_LIBRARY(@NAME@, m) { m.def("matmul(Tensor a, Tensor b, ScalarType? out_dtype=None) -> Tensor"); }
@IMPLS@
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.doc() = "torch.ops.@NAME@.matmul (croq export)"; }
)TXT";
  std::string impls;
  if (x.any_cuda()) impls += "TORCH_LIBRARY_IMPL(@NAME@, CUDA, m) { m.impl(\"matmul\", &matmul); }\n";
  if (x.any_cpp()) impls += "TORCH_LIBRARY_IMPL(@NAME@, CPU, m) { m.impl(\"matmul\", &matmul); }\n";
  const std::string stream = x.any_cuda()
      ? "  if (A.is_cuda()) stream = static_cast<void*>(at::cuda::getCurrentCUDAStream().stream());"
      : "  TORCH_CHECK(!A.is_cuda(), \"@NAME@.matmul: the exported kernels run on the CPU\");";
  return subst(text, {{"@CUDA_INCLUDE@", x.any_cuda() ? "#include <ATen/cuda/CUDAContext.h>\n" : ""},
                      {"@IMPLS@", subst(impls, {{"@NAME@", x.name}})},
                      {"@STREAM@", subst(stream, {{"@NAME@", x.name}})},
                      {"@NAME@", x.name}});
}

std::string torch_setup_py(const ExportText& x) {
  std::string text = R"PY(# Builds torch.ops.@NAME@.matmul (generated by croq export): the extension in @NAME@_torch.cpp,
# linked with ../lib/lib@NAME@.a, the same kernels as the shared library. Needs PyTorch@CUDA_NEED@.
#   cd torch && python3 setup.py build_ext --inplace && python3 test_@NAME@_torch.py
import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, @EXT@

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)

setup(
    name="@NAME@_torch",
    ext_modules=[
        @EXT@(
            "@NAME@_torch",
            [os.path.join(here, "@NAME@_torch.cpp")],
            include_dirs=[os.path.join(root, "include")],
            extra_objects=[os.path.join(root, "lib", "lib@NAME@.a")],
            extra_compile_args=@COMPILE_ARGS@,
            extra_link_args=@LINK_ARGS@,
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
)PY";
  const bool cuda = x.any_cuda();
  return subst(text, {{"@EXT@", cuda ? "CUDAExtension" : "CppExtension"},
                      {"@CUDA_NEED@", cuda ? " with CUDA and the CUDA toolkit" : ""},
                      {"@COMPILE_ARGS@", cuda ? "{\"cxx\": [\"-O2\"], \"nvcc\": []}" : "[\"-O2\"]"},
                      {"@LINK_ARGS@", x.any_cpp() ? "[\"-pthread\"]" : "[]"},
                      {"@NAME@", x.name}});
}

std::string torch_test_py(const ExportText& x) {
  std::string shapes;
  for (const auto& k : x.kernels) {
    if (k.op != CROQ_OP_MATMUL || k.b_layout != CROQ_ROW_MAJOR) continue;
    const char* in = k.a_type == CROQ_F16 ? "torch.float16" : k.a_type == CROQ_BF16 ? "torch.bfloat16" : "torch.float32";
    const char* out = k.c_type == CROQ_F16 ? "torch.float16" : k.c_type == CROQ_BF16 ? "torch.bfloat16" : "torch.float32";
    shapes += fmt::format("    ({}, {}, {}, {}, {}),\n", k.m, k.n, k.k, in, out);
  }
  std::string text = R"PY(# Checks torch.ops.@NAME@.matmul against torch.matmul at every tuned shape and at a few others
# (generated by croq export). Run after `python3 setup.py build_ext --inplace` in this folder.
import sys

import torch

import @NAME@_torch  # noqa: F401  (registers torch.ops.@NAME@)

DEVICE = "@DEVICE@"
TUNED = [
@SHAPES@]
OTHERS = [(m + 8, n + 8, k + 16, i, o) for (m, n, k, i, o) in TUNED[:3]]

failed = 0
for m, n, k, in_dtype, out_dtype in TUNED + OTHERS:
    torch.manual_seed(m * 7 + n * 3 + k)
    a = torch.randn(m, k, device=DEVICE).to(in_dtype)
    b = torch.randn(k, n, device=DEVICE).to(in_dtype)
    c = torch.ops.@NAME@.matmul(a, b, out_dtype)
    ref = torch.matmul(a.float(), b.float())
    err = ((c.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-6)).item()
    ok = err < (2e-2 if in_dtype != torch.float32 else 1e-4)
    failed += not ok
    print(f"{m}x{n}x{k} {in_dtype} -> {out_dtype}: max relative error {err:.2e} {'ok' if ok else 'WRONG'}")
sys.exit(1 if failed else 0)
)PY";
  return subst(text, {{"@SHAPES@", shapes}, {"@DEVICE@", x.any_cuda() ? "cuda" : "cpu"}, {"@NAME@", x.name}});
}

std::string readme_text(const ExportText& x, bool shared, bool static_lib) {
  std::string kernels;
  for (const auto& k : x.kernels) {
    kernels += fmt::format("| {}x{}x{} | {} | {} | {} | {} | {} |\n", k.m, k.n, k.k, k.dtype,
                           k.b_layout == CROQ_ROW_MAJOR ? "row" : "col", k.record.kernel, k.record.round,
                           k.task.id());
  }
  std::string libs;
  if (shared) libs += "- `lib/lib" + x.name + ".so`: the shared library (exports only `" + x.name + "_*`).\n";
  if (static_lib) {
    libs += "- `lib/lib" + x.name + ".a`: the static library (link the C++ runtime" +
            std::string(x.any_cuda() ? " and the CUDA runtime, `-lcudart_static -ldl -lrt -pthread`" : ", `-pthread`") +
            ").\n";
  }
  std::string text = R"TXT(# @NAME@: kernels tuned by croq

Generated by `croq export`. One entry, `@NAME@_matmul(problem, a, b, c, workspace, workspace_bytes, stream)`
(croq's kernel ABI, `include/croq/kernel_abi.h`), for any shape: it dispatches to the kernel tuned
for the nearest shape.

| tuned shape | dtype | B | kernel | round | task |
|---|---|---|---|---|---|
@KERNELS@
## Dispatch

@RULE@

`@NAME@_matmul_choice(&problem)` names the kernel tried first.

## Files

@LIBS@- `include/@NAME@.h` and `include/croq/kernel_abi.h`: the C header.
- `lib/cmake/@NAME@/`: `find_package(@NAME@ REQUIRED PATHS <this folder>)`, then
  `target_link_libraries(app PRIVATE @NAME@::@NAME@)` (or `@NAME@::@NAME@_static`).
- `torch/`: `torch.ops.@NAME@.matmul` (`cd torch && python3 setup.py build_ext --inplace`; needs PyTorch).
- `src/`: the kernels' sources, the generated dispatcher and `build.sh`, the exact commands that built the
  libraries.
- `manifest.json`: for every kernel, its task, round, measured TFLOPS, source sha256 and flags.

## Use

```c
#include "@NAME@.h"
croq_matmul_problem p = @NAME@_make_problem(m, n, k, CROQ_F16, CROQ_F32, CROQ_ROW_MAJOR);
size_t bytes = @NAME@_matmul_workspace_bytes(&p);   /* allocate once */
croq_status st = @NAME@_matmul(&p, a, b, c, workspace, bytes, stream);
```
)TXT";
  return subst(text, {{"@KERNELS@", kernels}, {"@RULE@", dispatch_rule_text()}, {"@LIBS@", libs}, {"@NAME@", x.name}});
}

std::vector<std::string> entry_points(const ExportText& x) {
  std::vector<std::string> names = {"matmul", "matmul_workspace_bytes", "make_problem", "matmul_choice",
                                    "matmul_choice_task", "kernel_count", "kernel_info"};
  if (x.any_gemm()) names.insert(names.end(), {"gemm", "gemm_workspace_bytes"});
  if (x.any_prepare()) names.insert(names.end(), {"gemm_prepared_bytes", "gemm_prepare"});
  for (auto& n : names) n = x.name + "_" + n;
  return names;
}

std::string version_script_text(const ExportText& x) {
  std::string out = "{\n  global:\n";
  for (const auto& n : entry_points(x)) out += "    " + n + ";\n";
  return out + "  local:\n    *;\n};\n";
}

}  // namespace croq
