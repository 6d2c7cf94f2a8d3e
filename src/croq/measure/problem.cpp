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
  if (op != k_op_matmul && op != k_op_gemm_sp && op != k_op_blockscaled) {
    throw_usage(fmt::format("operator '{}' is not one croq measures (matmul, gemm_sp, blockscaled)", op));
  }
  ProblemSetup p;
  p.dtype = parse_dtype_pair_or_throw(dtype_token);
  p.sparse = op == k_op_gemm_sp;
  if (p.sparse && k % 8 != 0) {
    throw_usage(fmt::format("2:4 sparse GEMM needs K to be a multiple of 8 (K = {})", k),
                "A is pruned in groups of four along K, two groups per metadata byte");
  }
  if (p.sparse && p.dtype.compute == ScalarType::tf32) throw_usage("2:4 sparse GEMM is not defined for tf32");
  p.blockscaled = op == k_op_blockscaled;
  if (p.blockscaled && (p.dtype.input != ScalarType::e4m3 || p.dtype.output != ScalarType::bf16)) {
    throw_usage(fmt::format("the block-scaled operator takes e4m3 inputs and gives bf16 (dtype {})", p.dtype.canonical),
                "use the dtype e4m3bf16");
  }
  if (p.blockscaled && b_layout != "col") {
    throw_usage("the block-scaled operator's B is stored [N,K] (b_layout col): its scales are per 128x128 block of N x K",
                "use --b-layout col or auto");
  }
  p.scale_mode = p.blockscaled                                                  ? CROQ_SCALE_BLOCK
                 : (op == k_op_matmul && p.dtype.input == ScalarType::e4m3) ? CROQ_SCALE_TENSOR
                                                                              : CROQ_SCALE_NONE;
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
  if (p.scale_mode == CROQ_SCALE_TENSOR) p.desc.scaling = "tensor";
  // The scales' layouts too: records from before A's scales became M-major (2026-12-04) say
  // "block 1x128 (A), 128x128 (B), f32".
  if (p.scale_mode == CROQ_SCALE_BLOCK)
    p.desc.scaling = "block 1x128 (A, scales [K/128, M]), 128x128 (B, scales [N/128, K/128]), f32";
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
  g.op = p.sparse ? CROQ_OP_MATMUL_SPARSE24 : p.blockscaled ? CROQ_OP_MATMUL_BLOCKSCALED : CROQ_OP_MATMUL;
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
  g.scale_mode = p.scale_mode;
  if (p.blockscaled) {
    g.scale_block_m = 1;
    g.scale_block_n = k_blockscaled_block_n;
    g.scale_block_k = k_blockscaled_block_k;
  }
  return p;
}

size_t a_scale_count(const ProblemSetup& p) {
  if (p.scale_mode == CROQ_SCALE_TENSOR) return 1;
  if (p.scale_mode != CROQ_SCALE_BLOCK) return 0;
  const int64_t kb = (p.desc.k + p.gemm.scale_block_k - 1) / p.gemm.scale_block_k;
  return static_cast<size_t>(p.desc.m * kb);
}

size_t b_scale_count(const ProblemSetup& p) {
  if (p.scale_mode == CROQ_SCALE_TENSOR) return 1;
  if (p.scale_mode != CROQ_SCALE_BLOCK) return 0;
  const int64_t kb = (p.desc.k + p.gemm.scale_block_k - 1) / p.gemm.scale_block_k;
  const int64_t nb = (p.desc.n + p.gemm.scale_block_n - 1) / p.gemm.scale_block_n;
  return static_cast<size_t>(nb * kb);
}

std::vector<std::string> layout_order(const std::string& requested, const DtypePair& dtype, const std::string& op) {
  if (requested == "row" || requested == "col") return {requested};
  if (op == k_op_blockscaled) return {"col"};  // the operator's B is [N,K] (its scales are per N x K block)
  if (dtype.input == ScalarType::e4m3 || op == k_op_gemm_sp) return {"col", "row"};
  return {"row", "col"};
}

}  // namespace croq
