// Reading choreo's generated scripts: heredoc extraction and the CFLAGS line on real outputs of
// the compiler (tests/data/choreo/*.cute.result, generated from its own tests/gpu/end2end/*.co),
// variable expansion, word splitting, and the matmul signature used by the ABI wrapper.
#include <gtest/gtest.h>

#include "croq/build/choreo.hpp"
#include "croq/util/fs.hpp"

namespace croq {
namespace {

std::string data(const std::string& name) { return read_file_or_throw(std::string(CROQ_TEST_DATA_DIR) + "/choreo/" + name); }

// The compiler's real outputs are generated with a locally built choreo (see the README there).
#define REQUIRE_DATA(name)                                                                            \
  if (!fs::exists(std::string(CROQ_TEST_DATA_DIR) + "/choreo/" + name)) GTEST_SKIP() << name << " not recorded"

std::vector<std::string> names(const std::vector<const Heredoc*>& hs) {
  std::vector<std::string> out;
  for (const Heredoc* h : hs) out.push_back(h->path.substr(h->path.find_last_of('/') + 1));
  return out;
}

TEST(BuildChoreo, RealHopperScriptGivesKernelHeadersAndFlags) {
  REQUIRE_DATA("wgmma_ss.cute.result");
  ChoreoScript s = parse_cute_result(data("wgmma_ss.cute.result"));
  ASSERT_NE(s.kernel(), nullptr);
  EXPECT_NE(s.kernel()->path.find("__choreo_cute_wgmma_ss.cu"), std::string::npos) << s.kernel()->path;
  const std::string& cu = s.kernel()->content;
  EXPECT_NE(cu.find("__global__"), std::string::npos);
  EXPECT_NE(cu.find("matmul_f16_ws_1p3c"), std::string::npos);
  EXPECT_EQ(cu.find("\nEOF\n"), std::string::npos);  // the delimiter is not part of the file
  auto headers = names(s.headers());
  for (const char* h : {"choreo.h", "choreo_types.h", "choreo_types_cute.h", "choreo_cute.h"}) {
    EXPECT_NE(std::find(headers.begin(), headers.end(), h), headers.end()) << h;
  }
  EXPECT_EQ(s.nv_arch, "sm_90a");
  EXPECT_NE(s.cflags.find("-gencode arch=compute_90a,code=sm_90a"), std::string::npos) << s.cflags;
  EXPECT_NE(s.cflags.find("-I${CUTE_HOME}/include"), std::string::npos);
  EXPECT_NE(s.cflags.find("-lcuda"), std::string::npos);
}

TEST(BuildChoreo, RealAmpereScriptUsesTheArchVariable) {
  REQUIRE_DATA("ampere_mma.cute.result");
  ChoreoScript s = parse_cute_result(data("ampere_mma.cute.result"));
  ASSERT_NE(s.kernel(), nullptr);
  EXPECT_EQ(s.nv_arch, "sm_86");
  EXPECT_NE(s.cflags.find("-arch ${nv_arch}"), std::string::npos) << s.cflags;
  std::vector<std::string> unknown;
  auto words = split_shell_words(expand_shell_vars(
      s.cflags, {{"nv_arch", s.nv_arch}, {"CUTE_HOME", "/cute"}, {"CUDA_HOME", "/cuda"}, {"EXTRA_TARGET_CFLAGS", ""}},
      &unknown));
  EXPECT_TRUE(unknown.empty());
  auto at = std::find(words.begin(), words.end(), "-arch");
  ASSERT_NE(at, words.end());
  EXPECT_EQ(*(at + 1), "sm_86");
  EXPECT_NE(std::find(words.begin(), words.end(), "-I/cute/include"), words.end());
  EXPECT_NE(std::find(words.begin(), words.end(), "-L/cuda/lib64"), words.end());
}

TEST(BuildChoreo, HeredocForms) {
  std::string script =
      "cat <<'EOF' > /tmp/a/x.h\nline1\n  EOF not the end\n\nEOF\n"
      "cat << \"END\" >/tmp/a/__choreo_cute_k.cu\nint k;\nEND\n"
      "cat > /tmp/a/y.h <<EOF\ny\nEOF\n"
      "nv_arch=sm_86\n"
      "export CFLAGS=\"-arch ${nv_arch} -O3\"\n";
  ChoreoScript s = parse_cute_result(script);
  ASSERT_EQ(s.files.size(), 3u);
  EXPECT_EQ(s.files[0].content, "line1\n  EOF not the end\n\n");
  EXPECT_EQ(s.files[1].delimiter, "END");
  EXPECT_EQ(s.kernel()->content, "int k;\n");
  EXPECT_EQ(s.files[2].path, "/tmp/a/y.h");
  EXPECT_EQ(s.cflags, "-arch ${nv_arch} -O3");
  EXPECT_EQ(s.nv_arch, "sm_86");
  EXPECT_EQ(parse_cute_result("echo no heredocs\n").kernel(), nullptr);
}

TEST(BuildChoreo, ExpansionAndSplitting) {
  std::vector<std::string> unknown;
  EXPECT_EQ(expand_shell_vars("-I${A}/inc $B-x ${C} $$ $", {{"A", "/a"}, {"B", "b"}}, &unknown), "-I/a/inc b-x  $$ $");
  EXPECT_EQ(unknown, std::vector<std::string>{"C"});
  EXPECT_EQ(split_shell_words("  -a 'b c'  \"d e\" f\\ g "), (std::vector<std::string>{"-a", "b c", "d e", "f g"}));
}

TEST(BuildChoreo, MatmulSignatureOfASingleFunctionCo) {
  std::string why;
  auto sig = find_matmul_signature(data("matmul_f16f32_wgmma.co"), &why);
  ASSERT_TRUE(sig) << why;
  EXPECT_EQ(sig->function, "matmul");
  EXPECT_EQ(sig->a_type, "f16");
  EXPECT_EQ(sig->c_type, "f32");
  EXPECT_TRUE(sig->b_col_major);
  auto row = find_matmul_signature("__co__ void mm(global bf16 [M, K] a, global bf16 [K, N] b, global bf16 [M, N] c) {}");
  ASSERT_TRUE(row);
  EXPECT_FALSE(row->b_col_major);
  EXPECT_FALSE(find_matmul_signature("__co__ void a(global f16 [M, K] x) {}\n__co__ void b(global f16 [M, K] x) {}\n", &why));
  EXPECT_NE(why.find("__co__ functions"), std::string::npos);
  EXPECT_FALSE(find_matmul_signature("__co__ void f(global f16 [M, K] a, global f16 [M, K] b, global f32 [M, N] c) {}", &why));
}

TEST(BuildChoreo, WrapperChecksTheProblemAndCallsTheKernel) {
  ChoreoMatmulSignature sig{"matmul", "bf16", "f32", false};
  std::string w = abi_wrapper_source(sig, "/ws/srcs/iter001_x.cu");
  EXPECT_NE(w.find("#include \"/ws/srcs/iter001_x.cu\""), std::string::npos);
  EXPECT_NE(w.find("p->a_type != CROQ_BF16"), std::string::npos);
  EXPECT_NE(w.find("p->b_layout != CROQ_ROW_MAJOR"), std::string::npos);
  EXPECT_NE(w.find("p->ldb != p->n"), std::string::npos);
  EXPECT_NE(w.find("choreo::make_spanview<choreo::bf16, 2>"), std::string::npos);
  EXPECT_NE(w.find("matmul(lhs, rhs, out);"), std::string::npos);
  EXPECT_NE(w.find("CROQ_EXPORT croq_status croq_matmul("), std::string::npos);
}


}  // namespace
}  // namespace croq
