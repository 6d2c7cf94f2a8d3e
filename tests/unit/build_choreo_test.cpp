// Reading choreo's generated scripts: heredoc extraction and the CFLAGS line on real outputs of
// the compiler (tests/data/choreo/*.cute.result, generated from its own tests/gpu/end2end/*.co),
// variable expansion, word splitting, and the matmul signature used by the ABI wrapper.
#include <gtest/gtest.h>

#include <tuple>

#include "croq/build/choreo.hpp"
#include "croq/search/croqtile_gemm_family.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/process.hpp"
#include "croq/workspace/dtype.hpp"

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
  ChoreoMatmulSignature sig;
  sig.function = "matmul";
  sig.a_type = "bf16";
  sig.c_type = "f32";
  sig.b_col_major = false;
  std::string w = abi_wrapper_source(sig, "/ws/srcs/iter001_x.cu");
  EXPECT_NE(w.find("#include \"/ws/srcs/iter001_x.cu\""), std::string::npos);
  EXPECT_NE(w.find("p->a_type != CROQ_BF16"), std::string::npos);
  EXPECT_NE(w.find("p->b_layout != CROQ_ROW_MAJOR"), std::string::npos);
  EXPECT_NE(w.find("p->ldb != p->n"), std::string::npos);
  EXPECT_NE(w.find("choreo::make_spanview<choreo::bf16, 2>"), std::string::npos);
  EXPECT_NE(w.find("matmul(lhs, rhs, out);"), std::string::npos);
  EXPECT_NE(w.find("CROQ_EXPORT croq_status croq_matmul("), std::string::npos);
}


// The croqtile_gemm family's rendered sources name their element types by macros (CROQ_IN_T,
// CROQ_OUT_T, #defined in front of the template): the ABI wrapper must check the problem against the
// types those macros stand for, or every family kernel would answer CROQ_UNSUPPORTED (an f16 kernel
// checked as if it took f32).
TEST(BuildChoreo, TheFamilysMacroTypesAreResolvedForTheWrapper) {
  CroqtileGemmFamily f;
  for (const char* dt : {"f16f32", "bf16f32", "bf16", "f16"}) {
    FamilyProblem p;
    p.m = p.n = p.k = 4096;
    p.dtype = parse_dtype_pair_or_throw(dt);
    p.arch = "sm_90a";
    std::string why;
    auto sig = find_matmul_signature(f.render_source(f.default_config(p), p), &why);
    ASSERT_TRUE(sig) << dt << ": " << why;
    const std::string in = std::string(dt).rfind("bf16", 0) == 0 ? "bf16" : "f16";
    const std::string out = std::string(dt).size() > in.size() ? "f32" : in;
    EXPECT_EQ(sig->a_type, in) << dt;
    EXPECT_EQ(sig->c_type, out) << dt;
    const std::string w = abi_wrapper_source(*sig, "/ws/x.cu");
    EXPECT_NE(w.find(in == "bf16" ? "p->a_type != CROQ_BF16" : "p->a_type != CROQ_F16"), std::string::npos) << dt;
    EXPECT_NE(w.find(out == "f32" ? "p->c_type != CROQ_F32" : out == "bf16" ? "p->c_type != CROQ_BF16"
                                                                           : "p->c_type != CROQ_F16"),
              std::string::npos)
        << dt;
  }
  // A type macro that is not defined as a choreo type is refused with the reason, not bound as f32.
  std::string why;
  EXPECT_FALSE(find_matmul_signature("__co__ void mm(global T [M, K] a, global T [N, K] b, global f32 [M, N] c) {}", &why));
  EXPECT_NE(why.find("T"), std::string::npos) << why;
}

std::string bundled(const std::string& rel) { return read_file_or_throw(std::string(CROQ_SOURCE_DIR) + "/kernels/croqtile/" + rel); }

TEST(BuildChoreo, BundledDenseKernelsTakeTheStreamAndCheckTheirShapes) {
  for (auto [file, type] : {std::pair{"matmul/matmul_f16f32_ws.co", "f16"}, std::pair{"matmul/matmul_bf16f32_ws.co", "bf16"}}) {
    std::string why;
    auto sig = find_matmul_signature(bundled(file), &why);
    ASSERT_TRUE(sig) << file << ": " << why;
    EXPECT_EQ(sig->function, "matmul");
    EXPECT_EQ(sig->a_type, type);
    EXPECT_EQ(sig->c_type, "f32");
    EXPECT_TRUE(sig->b_col_major);
    EXPECT_FALSE(sig->sparse24);
    EXPECT_TRUE(sig->takes_stream) << file;
    EXPECT_TRUE(sig->shape_check) << file;
    std::string w = abi_wrapper_source(*sig, "/k.cu");
    EXPECT_NE(w.find("if (!croq_shape_ok(p->m, p->n, p->k)) return CROQ_UNSUPPORTED;"), std::string::npos);
    EXPECT_NE(w.find("matmul(lhs, rhs, out, static_cast<cudaStream_t>(stream));"), std::string::npos);
    EXPECT_NE(w.find("void* stream)"), std::string::npos);
  }
}

TEST(BuildChoreo, BundledSparseKernelsBindToTheSparseOperator) {
  for (auto [file, a, c] : {std::tuple{"gemm_sp/gemm_sp_f16.co", "f16", "f32"},
                            std::tuple{"gemm_sp/gemm_sp_e4m3.co", "f8_e4m3", "f16"}}) {
    std::string why;
    auto sig = find_matmul_signature(bundled(file), &why);
    ASSERT_TRUE(sig) << file << ": " << why;
    EXPECT_TRUE(sig->sparse24);
    EXPECT_EQ(sig->function, "gemm_sp");
    EXPECT_EQ(sig->a_type, a);
    EXPECT_EQ(sig->c_type, c);
    EXPECT_TRUE(sig->b_col_major);
    EXPECT_TRUE(sig->takes_stream);
    EXPECT_TRUE(sig->shape_check);
  }
}

TEST(BuildChoreo, SparseWrapperPreparesTheCompressedOperandAndCallsTheKernel) {
  auto sig = find_matmul_signature(
      "__co__ void sp(global f8_e4m3 [M, PK] a, global u8 [M, MK] meta, global f8_e4m3 [N, K] b, global f16 [M, N] c, "
      "stream s) {}\nstatic bool croq_shape_ok(long long m, long long n, long long k) { return true; }\n");
  ASSERT_TRUE(sig);
  std::string w = abi_wrapper_source(*sig, "/ws/iter002_sp.cu");
  EXPECT_NE(w.find("#include \"/ws/iter002_sp.cu\""), std::string::npos);
  // Version 2 for the sparse operator, the prepare pair, no version-1 entry.
  EXPECT_NE(w.find("CROQ_EXPORT croq_status croq_gemm(const croq_gemm_desc* d, const croq_gemm_operands* o, void* stream)"),
            std::string::npos);
  EXPECT_NE(w.find("CROQ_EXPORT size_t croq_gemm_prepared_bytes("), std::string::npos);
  EXPECT_NE(w.find("CROQ_EXPORT croq_status croq_gemm_prepare("), std::string::npos);
  EXPECT_EQ(w.find("croq_matmul("), std::string::npos);
  EXPECT_NE(w.find("d->op != CROQ_OP_MATMUL_SPARSE24"), std::string::npos);
  EXPECT_NE(w.find("d->a_type != CROQ_E4M3"), std::string::npos);
  EXPECT_NE(w.find("d->c_type != CROQ_F16"), std::string::npos);
  EXPECT_NE(w.find("d->b_layout != CROQ_COL_MAJOR"), std::string::npos);
  EXPECT_NE(w.find("if (!croq_shape_ok(d->m, d->n, d->k)) return CROQ_UNSUPPORTED;"), std::string::npos);
  // The compression reads the metadata's nibbles (idx0 | idx1 << 2, low nibble first) and moves
  // e4m3 values as bytes; the kernel gets the values [M, K/2] and the metadata [M, K/8].
  EXPECT_NE(w.find("using croq_raw_t = unsigned char;"), std::string::npos);
  EXPECT_NE(w.find("packed[dst] = a[src + (nibble & 3u)];"), std::string::npos);
  EXPECT_NE(w.find("packed[dst + 1] = a[src + (nibble >> 2)];"), std::string::npos);
  EXPECT_NE(w.find("{size_t(d->m), size_t(d->k / 2)}"), std::string::npos);
  EXPECT_NE(w.find("{size_t(d->m), size_t(d->k / 8)}"), std::string::npos);
  EXPECT_NE(w.find("sp(lhs, meta, rhs, out, static_cast<cudaStream_t>(stream));"), std::string::npos);
  // f16 values move as 16-bit words.
  auto f16 = find_matmul_signature("__co__ void sp(global f16 [M, PK] a, global u8 [M, MK] m, global f16 [N, K] b, "
                                   "global f32 [M, N] c) {}");
  ASSERT_TRUE(f16);
  EXPECT_FALSE(f16->takes_stream);
  EXPECT_FALSE(f16->shape_check);
  std::string w16 = abi_wrapper_source(*f16, "/x.cu");
  EXPECT_NE(w16.find("using croq_raw_t = unsigned short;"), std::string::npos);
  EXPECT_NE(w16.find("sp(lhs, meta, rhs, out);"), std::string::npos);
  EXPECT_EQ(w16.find("croq_shape_ok"), std::string::npos);
}

TEST(BuildChoreo, SparseSignatureRefusesWhatItCannotBind) {
  std::string why;
  EXPECT_FALSE(find_matmul_signature("__co__ void sp(global f16 [M, PK] a, global f16 [M, MK] m, global f16 [N, K] b, "
                                     "global f32 [M, N] c) {}",
                                     &why));
  EXPECT_NE(why.find("metadata is f16, not u8"), std::string::npos) << why;
  EXPECT_FALSE(find_matmul_signature("__co__ void sp(global f16 [M, PK] a, global u8 [R, MK] m, global f16 [N, K] b, "
                                     "global f32 [M, N] c) {}",
                                     &why));
  EXPECT_NE(why.find("metadata's rows"), std::string::npos) << why;
  EXPECT_FALSE(find_matmul_signature("__co__ void f(global f16 [M, K] a, stream s) {}", &why));
  EXPECT_NE(why.find("takes 1 tensor parameters"), std::string::npos) << why;
}

TEST(BuildChoreo, MacroFlagsOfChoreoGoToNvccToo) {
  EXPECT_EQ(choreo_macro_flags({"--stmatrix=false", "-DMATMUL_STAGES=3", "-D", "X=1", "-DFLAG", "-O3"}),
            (std::vector<std::string>{"-DMATMUL_STAGES=3", "-DX=1", "-DFLAG"}));
  EXPECT_TRUE(choreo_macro_flags({"--use-prepack-v2"}).empty());
}


}  // namespace
}  // namespace croq
