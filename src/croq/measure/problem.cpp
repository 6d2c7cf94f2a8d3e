// Problem construction (problem.hpp).
#include "croq/measure/problem.hpp"

#include <fmt/format.h>

#include "croq/util/error.hpp"

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

ProblemSetup make_problem(int64_t m, int64_t n, int64_t k, const std::string& dtype_token, const std::string& b_layout) {
  if (b_layout != "row" && b_layout != "col") throw_usage(fmt::format("B layout '{}' is not row or col", b_layout));
  ProblemSetup p;
  p.dtype = parse_dtype_pair_or_throw(dtype_token);
  p.desc.op = "matmul";
  p.desc.m = m;
  p.desc.n = n;
  p.desc.k = k;
  p.desc.dtype = p.dtype.canonical;
  p.desc.a_type = scalar_type_name(p.dtype.input);
  p.desc.b_type = scalar_type_name(p.dtype.input);
  p.desc.c_type = scalar_type_name(p.dtype.output);
  p.desc.compute_type = scalar_type_name(p.dtype.compute);
  p.desc.b_layout = b_layout;
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
  return p;
}

std::vector<std::string> layout_order(const std::string& requested, const DtypePair& dtype) {
  if (requested == "row" || requested == "col") return {requested};
  if (dtype.input == ScalarType::e4m3) return {"col", "row"};
  return {"row", "col"};
}

}  // namespace croq
