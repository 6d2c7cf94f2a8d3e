// Pieces of croq export and of the legacy-folder readers that need no compiler: the flags taken
// from a build record, the iteration numbers found in file names, the generated texts.
#include <gtest/gtest.h>

#include "croq/export/generate.hpp"
#include "croq/export/plan.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/ledger/store.hpp"
#include "croq/util/fs.hpp"
#include "croq/workspace/sources.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

TEST(ExportFlags, ObjectFlagsDropLinkingVerbosityAndCroqsIncludeOfAnotherMachine) {
  const std::vector<std::string> recorded = {
      "-O3", "-std=c++17", "--shared", "-Xcompiler", "-fPIC", "-Xptxas", "-v", "-I/nowhere/croq/include",
      "-gencode=arch=compute_90a,code=sm_90a", "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17",
      "-DCROQ_BM=128", "-Xcompiler", "-fvisibility=hidden", "-Xcompiler", "-fno-gnu-unique"};
  const std::vector<std::string> want = {"-O3", "-std=c++17", "-Xcompiler", "-fPIC",
                                         "-gencode=arch=compute_90a,code=sm_90a", "-DCROQ_BM=128", "-Xcompiler",
                                         "-fvisibility=hidden", "-Xcompiler", "-fno-gnu-unique"};
  EXPECT_EQ(object_flags_from_build(recorded), want);
  // An include folder that exists and is not croq's is kept.
  const std::string tmp = "-I" + std::filesystem::temp_directory_path().string();
  EXPECT_EQ(object_flags_from_build({"-O2", tmp}), (std::vector<std::string>{"-O2", tmp}));
}

TEST(IterationNumbers, FoundInEveryNamingOfTheOriginalLayout) {
  EXPECT_EQ(max_iteration_number_in_name("iter030_bn64.cu"), 30);
  EXPECT_EQ(max_iteration_number_in_name("build_iter031.txt"), 31);
  EXPECT_EQ(max_iteration_number_in_name("ncu_iter029_swz_round7.ncu-rep"), 29);
  EXPECT_EQ(max_iteration_number_in_name("pair_iter012_1_iter009_x.json"), 12);
  EXPECT_EQ(max_iteration_number_in_name("iter1000_big"), 1000);
  EXPECT_FALSE(max_iteration_number_in_name("attemptAAAB_x.cu"));
  EXPECT_FALSE(max_iteration_number_in_name("reiter030.cu")) << "not at a word start";
  EXPECT_FALSE(max_iteration_number_in_name("iter03_x")) << "fewer than three digits";
  EXPECT_FALSE(max_iteration_number_in_name("iter_fix.py"));
}

TEST(ExportText, TheHeaderDeclaresTheEntriesTheDispatcherDefines) {
  ExportText x;
  x.name = "gemm";
  ExportKernel k;
  k.task = make_task("sm90_NVIDIA_H200", "cuda", "matmul_f16fp32_4096x4096x4096", "croq-search");
  k.record.kernel = "iter003_x";
  k.record.round = 2;
  k.m = k.n = k.k = 4096;
  k.a_type = CROQ_F16;
  k.c_type = CROQ_F32;
  k.language = "cuda";
  k.dtype = "f16f32";
  x.kernels = {k};
  KernelEntries e;
  e.prefix = "gemm_k0_";
  e.matmul = e.matmul_workspace = true;
  x.entries = {e};
  x.info_json = "{}";
  const std::string h = header_text(x), d = dispatcher_source(x);
  for (const char* entry : {"gemm_matmul(", "gemm_matmul_workspace_bytes(", "gemm_make_problem(", "gemm_matmul_choice(",
                            "gemm_kernel_count(", "gemm_kernel_info("}) {
    EXPECT_NE(h.find(entry), std::string::npos) << entry;
    EXPECT_NE(d.find(entry), std::string::npos) << entry;
  }
  EXPECT_NE(d.find("&gemm_k0_croq_matmul,"), std::string::npos);
  EXPECT_NE(d.find("&gemm_k0_croq_matmul_workspace_bytes"), std::string::npos);
  // No kernel of ABI version 2: no gemm entries (a library of version-1 kernels is a v1 candidate).
  EXPECT_EQ(h.find("gemm_gemm("), std::string::npos);
  EXPECT_EQ(d.find("gemm_gemm("), std::string::npos);
  e.gemm = e.gemm_workspace = true;
  x.entries = {e};
  EXPECT_NE(header_text(x).find("gemm_gemm("), std::string::npos);
  EXPECT_NE(dispatcher_source(x).find("gemm_gemm("), std::string::npos);
  const std::string map = version_script_text(x);
  EXPECT_NE(map.find("    gemm_matmul;\n"), std::string::npos) << map;
  EXPECT_NE(map.find("    gemm_gemm;\n"), std::string::npos) << map;
  EXPECT_EQ(map.find("gemm_k0"), std::string::npos) << "the kernels' own entries stay inside: " << map;
  EXPECT_NE(map.find("local:\n    *;"), std::string::npos) << map;
  const std::string cmake = cmake_config_text(x, true, true);
  EXPECT_NE(cmake.find("add_library(gemm::gemm SHARED IMPORTED)"), std::string::npos);
  EXPECT_NE(cmake.find("CUDA::cudart_static"), std::string::npos);
  const std::string torch = torch_extension_source(x);
  EXPECT_NE(torch.find("TORCH_LIBRARY(gemm, m)"), std::string::npos);
  EXPECT_NE(torch.find("TORCH_LIBRARY_IMPL(gemm, CUDA, m)"), std::string::npos);
  EXPECT_NE(torch_setup_py(x).find("CUDAExtension"), std::string::npos);
}

// A task whose fastest KEEP was typed in (--tflops, results.tsv) and whose slower KEEP croq measured:
// the export takes the measured one; with no measured KEEP at all it takes the fastest reported one.
TEST(ExportPlan, AKeepCroqMeasuredOutranksAFasterReportedOne) {
  test::TempDir dir;
  Workspace ws(dir.path());
  TaskRef task = make_task("cpu_test", "cpp", "matmul_f32_64x64x64", "test");
  Ledger ledger(ws, task);
  const std::chrono::milliseconds wait{5000};
  auto keep = [&](const std::string& kernel, int round, double tflops, const std::string& source) {
    croq::atomic_write(ws.kind_dir(task, ArtifactKind::srcs) / (kernel + ".cpp"), "// " + kernel + "\n", false);
    StoreRequest q;
    q.iter = q.kernel = kernel;
    q.decision = "KEEP";
    q.tflops = tflops;
    q.round = round;
    q.bottleneck = round == 0 ? "" : "compute_bound";
    q.idea = "idea " + kernel;
    q.category = "tiling";
    q.source = source;
    store_round(ledger, q, wait);
  };
  keep("iter001_reported", 0, 50.0, "reported");
  EXPECT_EQ(plan_export_kernel(ws, task).record.kernel, "iter001_reported");  // nothing measured yet
  keep("iter002_measured", 1, 10.0, "measured");
  keep("iter003_typed", 2, 90.0, "reported");
  ExportKernel k = plan_export_kernel(ws, task);
  EXPECT_EQ(k.record.kernel, "iter002_measured");
  EXPECT_EQ(k.to_json()["source_kind"], "measured");
}

}  // namespace
}  // namespace croq
