// The operators a shape key names (croq/workspace/operators.hpp): the seeds' sparse forms parse to
// gemm_sp, the dense ones to matmul, and a refusal names the accepted forms.
#include <gtest/gtest.h>

#include <functional>

#include "croq/measure/problem.hpp"
#include "croq/util/error.hpp"
#include "croq/workspace/operators.hpp"

namespace croq {
namespace {

std::string op_of(const std::string& key) { return shape_operator(parse_shape_key(key)); }

std::string usage_message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    return std::string(e.what()) + " | " + e.hint();
  }
  ADD_FAILURE() << "no error";
  return {};
}

TEST(Operators, TheSeedsSparseKeysAreGemmSp) {
  EXPECT_EQ(op_of("gemm_sp_f16fp32_4096x8192x8192"), "gemm_sp");
  EXPECT_EQ(op_of("gemm_sp_f16_4096x8192x8192"), "gemm_sp");
  EXPECT_EQ(op_of("gemm_sp_e4m3fp16_4096x8192x8192"), "gemm_sp");
  EXPECT_EQ(op_of("spmm_e4m3_768x768x768"), "gemm_sp");
  // The from-scratch sweep's keys: <dtype>_<M>x<N>x<K>_fs, with or without the operator.
  EXPECT_EQ(op_of("f16_768x768x768_fs"), "gemm_sp");
  EXPECT_EQ(op_of("e4m3_12288x12288x12288_fs"), "gemm_sp");
  EXPECT_EQ(op_of("gemm_sp_f16_768x768x768_fs"), "gemm_sp");
  ShapeKey k = parse_shape_key("gemm_sp_e4m3fp16_4096x8192x8192");
  EXPECT_EQ(parse_dtype_pair_or_throw(k.dtype_token).canonical, std::string("e4m3f16"));
  EXPECT_EQ(k.m(), 4096);
  EXPECT_EQ(k.n(), 8192);
  EXPECT_EQ(k.k(), 8192);
}

TEST(Operators, DenseKeysStayMatmul) {
  EXPECT_EQ(op_of("matmul_f16fp32_4096x4096x4096"), "matmul");
  EXPECT_EQ(op_of("gemm_bf16_1024x1024x1024"), "matmul");
  EXPECT_EQ(op_of("f16_768x768x768"), "matmul");
  EXPECT_EQ(op_of("f16_768x768x768_v2"), "matmul");
}

TEST(Operators, AnUnknownOperatorIsRefusedNamingTheAcceptedForms) {
  const std::string msg = usage_message([] { op_of("conv_f16_64x64x64"); });
  EXPECT_NE(msg.find("operator 'conv'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("gemm_sp_<dtype>_<M>x<N>x<K>"), std::string::npos) << msg;
  EXPECT_NE(msg.find("_fs"), std::string::npos) << msg;
  EXPECT_NE(msg.find("matmul_<dtype>_<M>x<N>x<K>"), std::string::npos) << msg;
  EXPECT_EQ(operator_name(parse_shape_key("conv_f16_64x64x64")), "conv") << "lookups keep the operator as written";
}

TEST(Operators, TheSparseOperatorNeedsKAMultipleOfEightAndNoTf32) {
  EXPECT_EQ(check_measurable_shape(parse_shape_key("gemm_sp_f16_64x64x64")), "gemm_sp");
  std::string msg = usage_message([] { check_measurable_shape(parse_shape_key("gemm_sp_f16_64x64x60")); });
  EXPECT_NE(msg.find("multiple of 8"), std::string::npos) << msg;
  msg = usage_message([] { check_measurable_shape(parse_shape_key("gemm_sp_tf32_64x64x64")); });
  EXPECT_NE(msg.find("tf32"), std::string::npos) << msg;
  msg = usage_message([] { check_measurable_shape(parse_shape_key("gemm_sp_f16_64x64")); });
  EXPECT_NE(msg.find("M x N x K"), std::string::npos) << msg;
}

TEST(Operators, TheProblemCarriesTheOperatorInBothAbiForms) {
  ProblemSetup p = make_problem("gemm_sp", 128, 64, 256, "e4m3fp16", "col");
  EXPECT_TRUE(p.sparse);
  EXPECT_EQ(p.desc.op, "gemm_sp");
  EXPECT_EQ(p.desc.sparsity, "2:4");
  EXPECT_EQ(p.gemm.abi_version, static_cast<uint32_t>(CROQ_GEMM_ABI_VERSION));
  EXPECT_EQ(p.gemm.struct_bytes, sizeof(croq_gemm_desc));
  EXPECT_EQ(p.gemm.op, CROQ_OP_MATMUL_SPARSE24);
  EXPECT_EQ(p.gemm.a_type, CROQ_E4M3);
  EXPECT_EQ(p.gemm.c_type, CROQ_F16);
  EXPECT_EQ(p.gemm.b_layout, CROQ_COL_MAJOR);
  EXPECT_EQ(p.gemm.lda, 256);
  EXPECT_EQ(p.gemm.ldb, 256);
  EXPECT_EQ(p.gemm.ldc, 64);
  EXPECT_EQ(p.gemm.scale_mode, CROQ_SCALE_NONE);
  ProblemSetup d = make_problem("matmul", 128, 64, 256, "f16f32", "row");
  EXPECT_FALSE(d.sparse);
  EXPECT_EQ(d.gemm.op, CROQ_OP_MATMUL);
  EXPECT_EQ(d.abi.abi_version, static_cast<uint32_t>(CROQ_ABI_VERSION));
  EXPECT_EQ(d.desc.sparsity, "");
  // B's layouts: the sparse operator and fp8 read B as [N,K] first.
  EXPECT_EQ(layout_order("auto", p.dtype, "gemm_sp"), (std::vector<std::string>{"col", "row"}));
  EXPECT_EQ(layout_order("auto", d.dtype, "gemm_sp"), (std::vector<std::string>{"col", "row"}));
  EXPECT_EQ(layout_order("auto", d.dtype, "matmul"), (std::vector<std::string>{"row", "col"}));
  EXPECT_THROW(make_problem("gemm_sp", 8, 8, 12, "f16", "row"), Error);
}

// FP8 scales: dense e4m3 matmul carries per-tensor scales, the block-scaled operator scales per
// 1x128 block of A and 128x128 block of B (e4m3 in, bf16 out, B [N,K]); its shape keys, its
// refusals and the sizes of the scale arrays.
TEST(Operators, Fp8ProblemsCarryTheirScales) {
  EXPECT_EQ(check_measurable_shape(parse_shape_key("blockscaled_e4m3bf16_4096x7168x7168")), "blockscaled");
  EXPECT_EQ(check_measurable_shape(parse_shape_key("blockscale_gemm_e4m3bf16_256x256x256")), "blockscaled");
  std::string msg = usage_message([] { check_measurable_shape(parse_shape_key("blockscaled_f16_64x64x64")); });
  EXPECT_NE(msg.find("e4m3bf16"), std::string::npos) << msg;
  ProblemSetup b = make_problem("blockscaled", 200, 300, 400, "e4m3bf16", "col");
  EXPECT_TRUE(b.blockscaled);
  EXPECT_EQ(b.gemm.op, CROQ_OP_MATMUL_BLOCKSCALED);
  EXPECT_EQ(b.gemm.scale_mode, CROQ_SCALE_BLOCK);
  EXPECT_EQ(b.gemm.scale_block_m, 1);
  EXPECT_EQ(b.gemm.scale_block_n, 128);
  EXPECT_EQ(b.gemm.scale_block_k, 128);
  EXPECT_EQ(a_scale_count(b), 200u * 4u);  // [ceil(400/128), M]
  EXPECT_EQ(b_scale_count(b), 3u * 4u);    // [ceil(300/128), ceil(400/128)]
  EXPECT_EQ(b.desc.scaling.substr(0, 5), "block");
  EXPECT_EQ(layout_order("auto", b.dtype, "blockscaled"), (std::vector<std::string>{"col"}));
  EXPECT_THROW(make_problem("blockscaled", 8, 8, 128, "e4m3bf16", "row"), Error);
  EXPECT_THROW(make_problem("blockscaled", 8, 8, 128, "e4m3f16", "col"), Error);
  ProblemSetup t = make_problem("matmul", 64, 64, 64, "e4m3bf16", "col");
  EXPECT_EQ(t.gemm.scale_mode, CROQ_SCALE_TENSOR);
  EXPECT_EQ(t.desc.scaling, "tensor");
  EXPECT_EQ(a_scale_count(t), 1u);
  EXPECT_EQ(b_scale_count(t), 1u);
  ProblemSetup h = make_problem("matmul", 64, 64, 64, "f16f32", "row");
  EXPECT_EQ(h.gemm.scale_mode, CROQ_SCALE_NONE);
  EXPECT_EQ(a_scale_count(h), 0u);
}

}  // namespace
}  // namespace croq
