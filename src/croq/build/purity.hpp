// Purity of candidate sources (the seeds' pure implementation rule), checked before anything is
// compiled: a candidate must compute, not call a library that computes for it. Comments are
// ignored; everything else counts.
//
//   cuda, croqtile (.cu, .co, .cuh, .h): no #include of cublas*, cublasLt*, cudnn*, CUTLASS
//     device-level GEMM headers (cutlass/gemm/device/..., cutlass/gemm/kernel/..., the
//     collective builders), torch/ATen/c10; no calls to cublas*, cudnn*, cutlass::gemm::device::,
//     torch::/at:: ops; no dlopen/dlsym (loading a library at run time hides it from the symbol scan).
//   cpp (.cpp, .cc, .h, .hpp): the above plus cblas*/openblas/mkl/Eigen headers and cblas_*, *gemm_
//     calls (OpenBLAS is the cpp baseline, not a building block).
//   triton (.py): torch.matmul/mm/bmm/addmm/einsum/linear, torch.ops.*, triton.ops.*, flash_attn,
//     the `@` operator is left to the Python runner's AST check (src/python/croq_runner.py), which
//     also blocks these functions while the candidate runs.
// The measurement runner checks the built shared object's dynamic symbols and dependencies too.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "croq/util/json.hpp"

namespace croq {

struct PurityFinding {
  std::string file;   // as given
  int line = 0;       // 1-based
  std::string rule;   // "forbidden_include", "forbidden_call", "runtime_loading"
  std::string what;   // the matched text ("cublasGemmEx(", "#include <cublas_v2.h>")
  std::string text;   // the source line, trimmed

  json to_json() const;
};

// Checks one source text. `dsl` picks the rule set; `file` only labels the findings.
std::vector<PurityFinding> check_source_purity(const std::string& dsl, std::string_view text, const std::string& file);

// Replaces comments (C/C++ // and /* */; Python # comments and string contents) by spaces,
// keeping line breaks so line numbers stay right. C strings stay: #include names live in them.
std::string strip_comments_c(std::string_view text);
std::string strip_comments_python(std::string_view text);

}  // namespace croq
