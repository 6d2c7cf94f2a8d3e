// The operators croq measures, and how a shape key names them:
//
//   operator   kernel ABI                 shape key forms (M x N x K, exactly as written)
//   matmul     CROQ_OP_MATMUL (v1 or v2)  matmul_<dtype>_<M>x<N>x<K>, gemm_<dtype>_..., <dtype>_<M>x<N>x<K>
//   gemm_sp    CROQ_OP_MATMUL_SPARSE24    gemm_sp_<dtype>_<M>x<N>x<K>, spmm_<dtype>_..., and the
//              (A 2:4 structured sparse)  from-scratch sweep's <dtype>_<M>x<N>x<K>_fs
//   blockscaled CROQ_OP_MATMUL_BLOCKSCALED blockscaled_e4m3bf16_<M>x<N>x<K>, blockscale_gemm_e4m3bf16_...
//              (FP8, f32 scales per 1x128 block of A and 128x128 block of B; e4m3 in, bf16 out)
//
// An operator-less key is dense matmul, except with the suffix `_fs`: that is the from-scratch
// sweep's form (`f16_768x768x768_fs`), and the sweep is of 2:4 sparse GEMM. Any suffix may follow
// the dimensions (`gemm_sp_e4m3fp16_4096x8192x8192_v2`). The sparse operator needs K to be a
// multiple of 8 (groups of four along K, two groups per metadata byte).
#pragma once
#include <optional>
#include <string>

#include "croq/workspace/ids.hpp"

namespace croq {

inline constexpr const char* k_op_matmul = "matmul";
inline constexpr const char* k_op_gemm_sp = "gemm_sp";
inline constexpr const char* k_op_blockscaled = "blockscaled";
// The block-scaled operator's scale blocks: A per 1 x 128 (row, K block), B per 128 x 128 (N, K).
inline constexpr int k_blockscaled_block_k = 128;
inline constexpr int k_blockscaled_block_n = 128;

// The canonical operator of a shape key ("matmul" or "gemm_sp"), or nullopt with `why` naming the
// accepted forms.
std::optional<std::string> try_shape_operator(const ShapeKey& key, std::string* why = nullptr);
// Throws Error(usage) naming the accepted forms.
std::string shape_operator(const ShapeKey& key);
// The canonical operator when the key names a known one, else the operator as written (for
// lookups such as kernels/<dsl>/<operator>/ that also serve operators croq does not measure).
std::string operator_name(const ShapeKey& key);
// Checks that the key describes a problem croq can measure (its operator, M x N x K, the dtype, and
// the operator's constraints on the shape); returns the canonical operator. Throws Error(usage).
std::string check_measurable_shape(const ShapeKey& key);
bool is_sparse_operator(const std::string& canonical_op);
bool is_blockscaled_operator(const std::string& canonical_op);
// True when two keys written differently name the same problem: the same canonical operator and
// dtype (`matmul_F32_...`, `matmul_fp32_...`, `gemm_f32_...` and `f32_...` of `matmul_f32_...`), the
// same dimensions and suffix. Each spelling would otherwise be a task of its own.
bool same_problem(const ShapeKey& a, const ShapeKey& b);
// The accepted shape key forms, for error messages.
std::string accepted_shape_key_forms();

}  // namespace croq
