// One GEMM problem in the forms croq needs: the measurement record's description, the dtype pair
// (storage and accumulation types) and the kernel ABI structs handed to a candidate (version 1's
// croq_matmul_problem for dense matmul, version 2's croq_gemm_desc for every operator).
#pragma once
#include <string>
#include <vector>

#include <croq/kernel_abi.h>

#include "croq/measure/measurement.hpp"
#include "croq/workspace/dtype.hpp"

namespace croq {

struct ProblemSetup {
  ProblemDesc desc;
  DtypePair dtype;
  bool sparse = false;           // op gemm_sp: A is 2:4 structured sparse (CROQ_OP_MATMUL_SPARSE24)
  bool blockscaled = false;      // op blockscaled: CROQ_OP_MATMUL_BLOCKSCALED (scales per block)
  // CROQ_SCALE_TENSOR for dense matmul with e4m3 inputs, CROQ_SCALE_BLOCK for the block-scaled
  // operator, else CROQ_SCALE_NONE (portable.hpp says how croq draws the scales).
  croq_scale_mode scale_mode = CROQ_SCALE_NONE;
  croq_matmul_problem abi{};     // version 1 (dense matmul only)
  croq_gemm_desc gemm{};         // version 2
};

// `op` is a canonical operator ("matmul", "gemm_sp" or "blockscaled",
// croq/workspace/operators.hpp). Throws Error(usage) for an unknown operator or dtype, a layout
// other than row/col, or a shape the operator does not allow (gemm_sp: K a multiple of 8, no
// tf32; blockscaled: e4m3 in, bf16 out).
ProblemSetup make_problem(const std::string& op, int64_t m, int64_t n, int64_t k, const std::string& dtype_token,
                          const std::string& b_layout);
croq_dtype abi_dtype(ScalarType t);
// Number of f32 scales of A and of B (1 each per tensor, the block grids for the block-scaled
// operator, 0 without scales).
size_t a_scale_count(const ProblemSetup& p);
size_t b_scale_count(const ProblemSetup& p);
// The B layouts to try, in order, for a requested one ("row", "col" or "auto"): "row" first, then
// "col", except for fp8 inputs and the sparse operator, whose tensor-core kernels (and cuBLASLt's
// fp8, and cuSPARSELt) read B as [N,K].
std::vector<std::string> layout_order(const std::string& requested, const DtypePair& dtype, const std::string& op);

}  // namespace croq
