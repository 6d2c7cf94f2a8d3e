// Operators named by shape keys (operators.hpp).
#include "croq/workspace/operators.hpp"

#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/workspace/dtype.hpp"

namespace croq {

std::string accepted_shape_key_forms() {
  return "matmul_<dtype>_<M>x<N>x<K> (dense; also gemm_<dtype>_... or <dtype>_<M>x<N>x<K>), "
         "gemm_sp_<dtype>_<M>x<N>x<K> (2:4 sparse A; also spmm_... or the from-scratch form "
         "<dtype>_<M>x<N>x<K>_fs), e.g. matmul_f16fp32_4096x4096x4096, gemm_sp_f16_4096x8192x8192, "
         "gemm_sp_e4m3fp16_768x768x768, f16_768x768x768_fs, blockscaled_e4m3bf16_<M>x<N>x<K> (FP8 with f32 "
         "scales per 1x128 block of A and 128x128 block of B; also blockscale_gemm_...), e.g. "
         "blockscaled_e4m3bf16_4096x7168x7168";
}

std::optional<std::string> try_shape_operator(const ShapeKey& key, std::string* why) {
  const std::string& op = key.op;
  if (op.empty()) return key.suffix == "fs" ? k_op_gemm_sp : k_op_matmul;
  if (op == "matmul" || op == "gemm") return std::string(k_op_matmul);
  if (op == "gemm_sp" || op == "spmm") return std::string(k_op_gemm_sp);
  if (op == "blockscaled" || op == "blockscale_gemm") return std::string(k_op_blockscaled);
  if (why) {
    *why = fmt::format("operator '{}' is not one croq measures (matmul, gemm_sp, blockscaled); shape keys: {}", op,
                       accepted_shape_key_forms());
  }
  return std::nullopt;
}

std::string shape_operator(const ShapeKey& key) {
  std::string why;
  auto op = try_shape_operator(key, &why);
  if (!op) {
    throw_usage(why, "name the operator in the shape key: matmul_... or gemm_sp_...");
  }
  return *op;
}

std::string operator_name(const ShapeKey& key) {
  if (auto op = try_shape_operator(key)) return *op;
  return key.op;
}

bool same_problem(const ShapeKey& a, const ShapeKey& b) {
  if (a.text == b.text || a.dims != b.dims || a.suffix != b.suffix) return false;
  const auto oa = try_shape_operator(a), ob = try_shape_operator(b);
  if (!oa || !ob || *oa != *ob) return false;
  const auto da = parse_dtype_pair(a.dtype_token), db = parse_dtype_pair(b.dtype_token);
  return da && db && std::string(da->canonical) == db->canonical;
}

bool is_sparse_operator(const std::string& canonical_op) { return canonical_op == k_op_gemm_sp; }
bool is_blockscaled_operator(const std::string& canonical_op) { return canonical_op == k_op_blockscaled; }

std::string check_measurable_shape(const ShapeKey& key) {
  const std::string op = shape_operator(key);
  if (key.dims.size() != 3) {
    throw_usage(fmt::format("shape key {} does not give M x N x K", key.text),
                "shape keys: " + accepted_shape_key_forms());
  }
  const DtypePair d = parse_dtype_pair_or_throw(key.dtype_token);
  if (is_sparse_operator(op)) {
    if (key.k() % 8 != 0) {
      throw_usage(fmt::format("2:4 sparse GEMM needs K to be a multiple of 8, and {} has K = {}", key.text, key.k()),
                  "A is pruned in groups of four along K, two groups per metadata byte: choose such a K");
    }
    if (d.compute == ScalarType::tf32) {
      throw_usage(fmt::format("2:4 sparse GEMM is not defined for tf32 ({})", key.text),
                  "sparse tensor cores use 1:2 for tf32; use f16, bf16, e4m3 or f32 inputs");
    }
  }
  if (is_blockscaled_operator(op) && std::string(d.canonical) != "e4m3bf16") {
    throw_usage(fmt::format("the block-scaled operator takes e4m3 inputs and gives bf16 ({} has dtype {})", key.text,
                            d.canonical),
                "write the key as blockscaled_e4m3bf16_<M>x<N>x<K>");
  }
  return op;
}

}  // namespace croq
