// Reading Triton sources without Python (build/triton_source.hpp): the @triton.jit kernels (their
// names are the compiled kernels' names, croq profile's ncu filter) and the autotune rule.
#include <gtest/gtest.h>

#include "croq/build/triton_source.hpp"

namespace croq {
namespace {

const char* k_source =
    "import triton\n"
    "import triton.language as tl\n"
    "from triton import jit\n\n"
    "@triton.jit\n"
    "def _tile(x):\n"
    "    return x\n\n"
    "@triton.autotune(\n"
    "    configs=[triton.Config({'B': 64})],\n"
    "    key=['M'],\n"
    ")\n"
    "@triton.jit(do_not_specialize=['M'])\n"
    "def mm_kernel(a, M, B: tl.constexpr):\n"
    "    pass\n\n"
    "@jit\n"
    "def reduce_kernel(w):\n"
    "    pass\n\n"
    "def croq_matmul(problem, a, b, c):\n"
    "    mm_kernel[(1,)](a, 1)\n"
    "# @triton.autotune in a comment is not a decorator\n";

TEST(TritonSource, JitKernelsInSourceOrder) {
  EXPECT_EQ(triton_jit_kernels(k_source), (std::vector<std::string>{"_tile", "mm_kernel", "reduce_kernel"}));
  EXPECT_EQ(triton_kernel_regex(triton_jit_kernels(k_source)), "^(_tile|mm_kernel|reduce_kernel)$");
  EXPECT_EQ(triton_kernel_regex({}), "");
  EXPECT_TRUE(triton_jit_kernels("def croq_matmul(problem, a, b, c):\n    pass\n").empty());
}

TEST(TritonSource, AutotuneOnlyInIter000) {
  const auto found = triton_autotune_decorators(k_source);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].line, 9);
  EXPECT_EQ(triton_autotune_refusal(k_source, "iter000_autotuned"), "");
  const std::string no = triton_autotune_refusal(k_source, "iter003_pinned");
  EXPECT_NE(no.find("line 9"), std::string::npos) << no;
  EXPECT_NE(no.find("iter000"), std::string::npos) << no;
  EXPECT_NE(triton_autotune_refusal(k_source, "attemptAAAB_x"), "");
  EXPECT_EQ(triton_autotune_refusal("@triton.jit\ndef k(x):\n    pass\n", "iter005_x"), "");
  // An alias: `from triton import autotune` then `@autotune(...)`.
  EXPECT_NE(triton_autotune_refusal("from triton import autotune\n@autotune(configs=[], key=[])\n@jit\ndef k(x):\n  pass\n",
                                    "iter002_x"),
            "");
}

}  // namespace
}  // namespace croq
