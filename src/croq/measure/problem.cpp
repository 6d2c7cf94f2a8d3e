// Problem construction (problem.hpp).
#include "croq/measure/problem.hpp"

#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/workspace/operators.hpp"

namespace croq {

croq_dtype abi_dtype(ScalarType t) {
  switch (t) {
    case ScalarType::f16: return CROQ_F16;
    case ScalarType::bf16: return CROQ_BF16;
    case ScalarType::f32: return CROQ_F32;
    case ScalarType::tf32: return CROQ_TF32;
    case ScalarType::e4m3: return CROQ_E4M3;
  }
  return CROQ_F32;
}

ProblemSetup make_problem(const std::string& op, int64_t m, int64_t n, int64_t k, const std::string& dtype_token,
                          const std::string& b_layout) {
  if (b_layout != "row" && b_layout != "col") throw_usage(fmt::format("B layout '{}' is not row or col", b_layout));
  if (op != k_op_matmul && op != k_op_gemm_sp) {
    throw_usage(fmt::format("operator '{}' is not one croq measures (matmul, gemm_sp)", op));
  }
  ProblemSetup p;
  p.dtype = parse_dtype_pair_or_throw(dtype_token);
  p.sparse = op == k_op_gemm_sp;
  if (p.sparse && k % 8 != 0) {
    throw_usage(fmt::format("2:4 sparse GEMM needs K to be a multiple of 8 (K = {})", k),
                "A is pruned in groups of four along K, two groups per metadata byte");
  }
  if (p.sparse && p.dtype.compute == ScalarType::tf32) throw_usage("2:4 sparse GEMM is not defined for tf32");
  p.desc.op = op;
  p.desc.m = m;
  p.desc.n = n;
  p.desc.k = k;
  p.desc.dtype = p.dtype.canonical;
  p.desc.a_type = scalar_type_name(p.dtype.input);
  p.desc.b_type = scalar_type_name(p.dtype.input);
  p.desc.c_type = scalar_type_name(p.dtype.output);
  p.desc.compute_type = scalar_type_name(p.dtype.compute);
  p.desc.b_layout = b_layout;
  if (p.sparse) p.desc.sparsity = "2:4";
  croq_matmul_problem& a = p.abi;
  a.abi_version = CROQ_ABI_VERSION;
  a.m = m;
  a.n = n;
  a.k = k;
  a.a_type = abi_dtype(p.dtype.input == ScalarType::tf32 ? ScalarType::f32 : p.dtype.input);
  a.b_type = a.a_type;
  a.c_type = abi_dtype(p.dtype.output);
  a.compute_type = p.dtype.compute == ScalarType::tf32 ? CROQ_TF32 : CROQ_F32;
  a.b_layout = b_layout == "row" ? CROQ_ROW_MAJOR : CROQ_COL_MAJOR;
  a.lda = k;
  a.ldb = b_layout == "row" ? n : k;
  a.ldc = n;
  croq_gemm_desc& g = p.gemm;
  g.abi_version = CROQ_GEMM_ABI_VERSION;
  g.struct_bytes = sizeof(croq_gemm_desc);
  g.op = p.sparse ? CROQ_OP_MATMUL_SPARSE24 : CROQ_OP_MATMUL;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a_type = a.a_type;
  g.b_type = a.b_type;
  g.c_type = a.c_type;
  g.compute_type = a.compute_type;
  g.b_layout = a.b_layout;
  g.lda = a.lda;
  g.ldb = a.ldb;
  g.ldc = a.ldc;
  g.scale_mode = CROQ_SCALE_NONE;
  return p;
}

std::vector<std::string> layout_order(const std::string& requested, const DtypePair& dtype, const std::string& op) {
  if (requested == "row" || requested == "col") return {requested};
  if (dtype.input == ScalarType::e4m3 || op == k_op_gemm_sp) return {"col", "row"};
  return {"row", "col"};
}

}  // namespace croq
