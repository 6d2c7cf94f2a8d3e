// The source purity rules: library calls are refused, comments and look-alikes are not.
#include <gtest/gtest.h>

#include "croq/build/purity.hpp"
#include "croq/util/fs.hpp"

namespace croq {
namespace {

std::vector<std::string> whats(const std::vector<PurityFinding>& fs) {
  std::vector<std::string> out;
  for (const auto& f : fs) out.push_back(f.rule + ":" + f.what);
  return out;
}

TEST(BuildPurity, CublasIncludeAndCallAreRefused) {
  std::string src =
      "#include <cublas_v2.h>\n"
      "#include <croq/kernel_abi.h>\n"
      "void f(cublasHandle_t h) {\n"
      "  cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, 0, 0, CUDA_R_16F, 1, 0, CUDA_R_16F, 1, 0, 0, CUDA_R_32F, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);\n"
      "}\n";
  auto f = check_source_purity("cuda", src, "k.cu");
  ASSERT_EQ(f.size(), 2u) << testing::PrintToString(whats(f));
  EXPECT_EQ(f[0].line, 1);
  EXPECT_EQ(f[0].rule, "forbidden_include");
  EXPECT_EQ(f[1].line, 4);
  EXPECT_EQ(f[1].rule, "forbidden_call");
  EXPECT_EQ(f[1].what, "cublasGemmEx(");
}

TEST(BuildPurity, CutlassDeviceGemmIsRefusedButCuteIsNot) {
  std::string src =
      "#include \"cutlass/gemm/device/gemm_universal_adapter.h\"\n"
      "#include <cute/tensor.hpp>\n"
      "#include <cutlass/numeric_types.h>\n"
      "using G = cutlass::gemm::device::GemmUniversalAdapter<K>;\n";
  auto f = check_source_purity("cuda", src, "k.cu");
  ASSERT_EQ(f.size(), 2u) << testing::PrintToString(whats(f));
  EXPECT_EQ(f[0].line, 1);
  EXPECT_EQ(f[1].line, 4);
}

TEST(BuildPurity, CommentsDoNotCount) {
  std::string src =
      "// unlike cublasGemmEx( this computes itself\n"
      "/* #include <cublas_v2.h>\n"
      "   cudnnConvolutionForward( */\n"
      "__global__ void k() {}\n";
  EXPECT_TRUE(check_source_purity("cuda", src, "k.cu").empty());
}

TEST(BuildPurity, LineNumbersSurviveBlockComments) {
  std::string src = "/* a\n b\n c */\nvoid* h = dlopen(\"libcublas.so\", 0);\n";
  auto f = check_source_purity("cuda", src, "k.cu");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].line, 4);
  EXPECT_EQ(f[0].rule, "runtime_loading");
}

TEST(BuildPurity, CppCandidatesMayNotCallBlas) {
  std::string src =
      "#include <cblas.h>\n"
      "void f(){ cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1,1,1,1.f,0,1,0,1,0.f,0,1); sgemm_(0); }\n"
      "static void sgemm(float* c) {}  // a candidate's own function of that name is fine\n";
  auto f = check_source_purity("cpp", src, "k.cpp");
  ASSERT_EQ(f.size(), 3u) << testing::PrintToString(whats(f));
  EXPECT_EQ(f[0].rule, "forbidden_include");
  EXPECT_EQ(f[1].what, "cblas_sgemm(");
  EXPECT_EQ(f[2].what, "sgemm_(");
  // The same source is not a cuda rule violation apart from nothing: cblas is a cpp-only rule.
  EXPECT_TRUE(check_source_purity("cuda", "void f(){ cblas_sgemm(1); }\n", "k.cu").empty());
}

TEST(BuildPurity, PythonForbiddenCallsAndImports) {
  std::string src =
      "import torch\n"
      "import torch.nn.functional as F\n"
      "from flash_attn import flash_attn_func\n"
      "def croq_matmul(problem, a, b, c):\n"
      "    c.copy_(torch.matmul(a, b))\n"
      "    torch.ops.aten.mm(a, b)\n"
      "    F.linear(a, b)\n";
  auto f = check_source_purity("triton", src, "k.py");
  ASSERT_EQ(f.size(), 4u) << testing::PrintToString(whats(f));
  EXPECT_EQ(f[0].line, 3);
  EXPECT_EQ(f[1].line, 5);
  EXPECT_EQ(f[2].line, 6);
  EXPECT_EQ(f[3].line, 7);
}

TEST(BuildPurity, PythonDocstringsAndCommentsDoNotCount) {
  std::string src =
      "\"\"\"Computes C = A @ B like torch.matmul would, without calling it.\"\"\"\n"
      "# torch.mm is forbidden\n"
      "s = 'torch.ops.aten.mm'\n"
      "def croq_matmul(problem, a, b, c):\n"
      "    pass\n";
  EXPECT_TRUE(check_source_purity("triton", src, "k.py").empty());
}

TEST(BuildPurity, BundledKernelsArePure) {
  for (const char* rel : {"cuda/matmul/naive.cu", "cuda/matmul/smem_tiled.cu", "cuda/matmul/wmma_tc.cu"}) {
    auto text = read_file_or_throw(std::string(CROQ_SOURCE_DIR) + "/kernels/" + rel);
    EXPECT_TRUE(check_source_purity("cuda", text, rel).empty()) << rel;
  }
  for (const char* rel : {"cpp/matmul/naive.cpp", "cpp/matmul/blocked.cpp"}) {
    auto text = read_file_or_throw(std::string(CROQ_SOURCE_DIR) + "/kernels/" + rel);
    EXPECT_TRUE(check_source_purity("cpp", text, rel).empty()) << rel;
  }
  auto py = read_file_or_throw(std::string(CROQ_SOURCE_DIR) + "/kernels/triton/matmul/tiled.py");
  EXPECT_TRUE(check_source_purity("triton", py, "tiled.py").empty());
}

}  // namespace
}  // namespace croq
