// Starting-kernel discovery: bundled kernels (tier A), earlier tasks' best KEEP (tier B), and the
// scratch recommendation (tier C).
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "croq/build/discover.hpp"
#include "croq/ledger/store.hpp"
#include "croq/util/fs.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

using test::TempDir;

// Sets an environment variable for the scope of a test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_old = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (m_old) ::setenv(m_name, m_old->c_str(), 1);
    else ::unsetenv(m_name);
  }

 private:
  const char* m_name;
  std::optional<std::string> m_old;
};

void store(Workspace& ws, const TaskRef& t, const std::string& kernel, double tflops, const std::string& decision) {
  Ledger ledger(ws, t);
  StoreRequest q;
  q.iter = kernel;
  q.kernel = kernel;
  q.tflops = tflops;
  q.decision = decision;
  q.bottleneck = "compute_bound";
  q.idea = "idea for " + kernel;
  q.category = "tiling";
  store_round(ledger, q, std::chrono::milliseconds(5000));
  fs::path src = ws.kind_dir(t, ArtifactKind::srcs) / (kernel + ".cu");
  ensure_dir(src.parent_path());
  atomic_write(src, "// " + kernel + "\n", false);
}

TEST(BuildDiscover, BundledCudaKernelsAreOfferedBestRankedFirst) {
  DiscoverRequest req{"cuda", "matmul", "fp16fp32", "", std::nullopt};
  Discovery d = discover_starting_kernels(nullptr, req);
  ASSERT_GE(d.candidates.size(), 3u);
  EXPECT_EQ(d.candidates[0].tier, "A");
  EXPECT_EQ(d.candidates[0].meta.value("tensor_cores", false), true);  // tensor cores first
  std::vector<std::string> names;
  for (const auto& c : d.candidates) names.push_back(c.name);
  auto at = [&names](const char* n) { return std::find(names.begin(), names.end(), n) - names.begin(); };
  ASSERT_LT(at("wmma_tc"), long(names.size()));
  ASSERT_LT(at("naive"), long(names.size()));
  EXPECT_LT(at("wmma_tc"), at("smem_tiled"));
  EXPECT_LT(at("smem_tiled"), at("naive"));
  for (size_t i = 1; i < d.candidates.size(); ++i) EXPECT_GE(d.candidates[i - 1].rank, d.candidates[i].rank);
  ASSERT_TRUE(d.recommended);
  EXPECT_EQ(*d.recommended, 0u);
  json j = d.to_json(nullptr);
  EXPECT_EQ(j["tier"], "A");
  EXPECT_EQ(j["recommendation"]["pick"], 1);
}

TEST(BuildDiscover, DtypeFiltersTierA) {
  // The tensor-core kernel has no f32 path; the naive one has.
  Discovery d = discover_starting_kernels(nullptr, {"cuda", "matmul", "f32", "", std::nullopt});
  for (const auto& c : d.candidates) EXPECT_NE(c.name, "wmma_tc");
  EXPECT_FALSE(d.candidates.empty());
  Discovery cpp = discover_starting_kernels(nullptr, {"cpp", "matmul", "f32", "", std::nullopt});
  // naive, blocked and the cpp_tiled family's template (kernels/cpp/matmul/tiled/).
  ASSERT_EQ(cpp.candidates.size(), 3u);
  EXPECT_EQ(cpp.candidates[0].name, "blocked");
  // None of them runs f16 or e4m3: a dense f16 task gets tier C on cpp, and an e4m3 matmul the FP8
  // kernels of kernels/cpp/blockscaled/, which declare the per-tensor-scaled matmul too (before,
  // the cpp_tiled template, which declared no dtypes, was offered for both and failed to measure).
  EXPECT_TRUE(discover_starting_kernels(nullptr, {"cpp", "matmul", "f16f32", "", std::nullopt}).candidates.empty());
  std::set<std::string> fp8;
  for (const auto& c : discover_starting_kernels(nullptr, {"cpp", "matmul", "e4m3bf16", "", std::nullopt}).candidates) {
    fp8.insert(c.path.parent_path().filename() == "tiled" ? "tiled/" + c.name : c.name);
  }
  EXPECT_EQ(fp8, (std::set<std::string>{"reference", "tiled/tiled_fp8"}));
  std::set<std::string> blocks;
  for (const auto& c : discover_starting_kernels(nullptr, {"cuda", "blockscaled", "e4m3bf16", "", std::nullopt}).candidates) {
    blocks.insert(c.name);
  }
  EXPECT_EQ(blocks, (std::set<std::string>{"gemm_sm90"}));
  EXPECT_TRUE(discover_starting_kernels(nullptr, {"cuda", "blockscaled", "e4m3f16", "", std::nullopt}).candidates.empty());
  // Without a dtype every kernel of the operator is offered, those of its folder included.
  std::set<std::string> any;
  for (const auto& c : discover_starting_kernels(nullptr, {"cpp", "blockscaled", "", "", std::nullopt}).candidates) {
    any.insert(c.name);
  }
  EXPECT_EQ(any, (std::set<std::string>{"reference", "tiled_fp8"}));
  // The plain tiled kernel and the triton_gemm family's template (kernels/triton/matmul/family/gemm.py).
  Discovery tri = discover_starting_kernels(nullptr, {"triton", "matmul", "bf16fp32", "", std::nullopt});
  std::set<std::string> names;
  for (const auto& c : tri.candidates) names.insert(c.name);
  EXPECT_EQ(names, (std::set<std::string>{"gemm", "tiled"}));
}

// Every bundled kernel says which dtypes it runs (discover offers a kernel for a dtype only when it
// declares it).
TEST(BuildDiscover, EveryBundledKernelDeclaresItsDtypes) {
  size_t seen = 0;
  for (const auto& dsl : fs::directory_iterator(fs::path(CROQ_SOURCE_DIR) / "kernels")) {
    if (!dsl.is_directory()) continue;
    for (const auto& op : fs::directory_iterator(dsl.path())) {
      if (!op.is_directory()) continue;
      const std::string d = dsl.path().filename().string(), o = op.path().filename().string();
      for (const auto& c : discover_starting_kernels(nullptr, {d, o, "", "", std::nullopt}).candidates) {
        ++seen;
        EXPECT_TRUE(c.meta.contains("dtypes")) << c.path;
      }
    }
  }
  EXPECT_GE(seen, 15u);
}

TEST(BuildDiscover, AitunedFilesAreNeverOffered) {
  TempDir home;
  ensure_dir(home / "kernels" / "cuda" / "matmul");
  atomic_write(home / "kernels/cuda/matmul/clean.cu", "CROQ_EXPORT croq_status croq_matmul() {}\n", false);
  atomic_write(home / "kernels/cuda/matmul/matmul_aitune_iter042.cu", "CROQ_EXPORT croq_status croq_matmul() {}\n", false);
  atomic_write(home / "kernels/cuda/matmul/helper.cu", "// no entry point: not a candidate\n", false);
  ScopedEnv env("CROQ_HOME", home.path().string());
  Discovery d = discover_starting_kernels(nullptr, {"cuda", "matmul", "", "", std::nullopt});
  ASSERT_EQ(d.candidates.size(), 1u);
  EXPECT_EQ(d.candidates[0].name, "clean");
}

TEST(BuildDiscover, TierBOffersEachTasksBestKeepNotItsLastFile) {
  TempDir root;
  Workspace ws(root.path());
  TaskRef earlier = make_task("sm90_NVIDIA_H200", "cuda", "matmul_f16f32_4096x4096x4096", "m1");
  store(ws, earlier, "iter001_start", 100.0, "KEEP");
  store(ws, earlier, "iter002_stages4", 450.0, "KEEP");
  store(ws, earlier, "iter003_swizzle", 300.0, "DISCARD");
  store(ws, earlier, "iter004_persistent", 400.0, "KEEP");  // highest number, not the best
  TaskRef other_gpu = make_task("sm80_NVIDIA_A100", "cuda", "matmul_f16f32_2048x2048x2048", "m1");
  store(ws, other_gpu, "iter001_aa", 900.0, "KEEP");
  TaskRef other_op = make_task("sm90_NVIDIA_H200", "cuda", "gemmsp_f16f32_4096x4096x4096", "m1");
  store(ws, other_op, "iter001_sparse", 800.0, "KEEP");
  TaskRef target = make_task("sm90_NVIDIA_H200", "cuda", "matmul_f16f32_512x512x512", "m1");
  store(ws, target, "iter001_self", 10.0, "KEEP");

  DiscoverRequest req{"cuda", "matmul", "f16f32", "sm90_NVIDIA_H200", target};
  Discovery d = discover_starting_kernels(&ws, req);
  std::vector<StartingKernel> b;
  for (const auto& c : d.candidates) if (c.tier == "B") b.push_back(c);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].name, "iter002_stages4");  // same GPU first, its best KEEP
  EXPECT_TRUE(b[0].same_gpu);
  EXPECT_DOUBLE_EQ(*b[0].tflops, 450.0);
  EXPECT_EQ(b[1].name, "iter001_aa");
  EXPECT_FALSE(b[1].same_gpu);
  ASSERT_TRUE(d.recommended);
  EXPECT_EQ(d.candidates[*d.recommended].name, "iter002_stages4");
  json j = d.to_json(&ws);
  EXPECT_EQ(j["tier"], "B");
  EXPECT_NE(j["recommendation"]["why"].get<std::string>().find("450.0"), std::string::npos);
}

TEST(BuildDiscover, BundledCroqtileKernelsAreTierA) {
  // Dense: the warp-specialised WGMMA kernels, one per dtype; the family's template is not offered.
  for (auto [dtype, name] : {std::pair{"f16f32", "matmul_f16f32_ws"}, std::pair{"bf16f32", "matmul_bf16f32_ws"}}) {
    Discovery d = discover_starting_kernels(nullptr, {"croqtile", "matmul", dtype, "sm90_NVIDIA_H200", std::nullopt});
    ASSERT_EQ(d.candidates.size(), 1u) << dtype;
    EXPECT_EQ(d.candidates[0].tier, "A");
    EXPECT_EQ(d.candidates[0].name, name);
    EXPECT_EQ(d.candidates[0].path.extension(), ".co");
    EXPECT_EQ(d.candidates[0].meta.value("tensor_cores", false), true);
    json j = d.to_json(nullptr);
    EXPECT_EQ(j["tier"], "A");
    EXPECT_EQ(j["recommendation"]["pick"], 1);
  }
  Discovery all = discover_starting_kernels(nullptr, {"croqtile", "matmul", "", "", std::nullopt});
  for (const auto& c : all.candidates) EXPECT_EQ(c.path.extension(), ".co") << c.path;  // not family/*.co.in
  // Sparse: the from-scratch baselines, f16 and e4m3.
  for (auto [dtype, name] : {std::pair{"f16f32", "gemm_sp_f16"}, std::pair{"e4m3f16", "gemm_sp_e4m3"}}) {
    Discovery d = discover_starting_kernels(nullptr, {"croqtile", "gemm_sp", dtype, "", std::nullopt});
    ASSERT_EQ(d.candidates.size(), 1u) << dtype;
    EXPECT_EQ(d.candidates[0].name, name);
  }
  EXPECT_TRUE(discover_starting_kernels(nullptr, {"croqtile", "matmul", "e4m3f16", "", std::nullopt}).candidates.empty());
}

TEST(BuildDiscover, TierBOffersTheBestCroqtileKeepWithItsCu) {
  TempDir root;
  Workspace ws(root.path());
  TaskRef earlier = make_task("sm90_NVIDIA_H200", "croqtile", "matmul_f16f32_8192x8192x8192", "m1");
  store(ws, earlier, "iter001_ws", 500.0, "KEEP");
  store(ws, earlier, "iter002_stages3", 610.0, "KEEP");
  store(ws, earlier, "iter003_persistent", 590.0, "KEEP");
  // croqtile sources are the .co (primary) and the .cu choreo generated from it (companion).
  fs::path srcs = ws.kind_dir(earlier, ArtifactKind::srcs);
  for (const char* k : {"iter001_ws", "iter002_stages3", "iter003_persistent"}) {
    atomic_write(srcs / (std::string(k) + ".co"), std::string("__co__ void matmul() {} // ") + k + "\n", false);
  }
  TaskRef cuda = make_task("sm90_NVIDIA_H200", "cuda", "matmul_f16f32_4096x4096x4096", "m1");
  store(ws, cuda, "iter001_fast", 900.0, "KEEP");  // another dsl: not offered
  TaskRef target = make_task("sm90_NVIDIA_H200", "croqtile", "matmul_f16f32_4096x4096x4096", "m1");

  Discovery d = discover_starting_kernels(&ws, {"croqtile", "matmul", "f16f32", "sm90_NVIDIA_H200", target});
  ASSERT_FALSE(d.candidates.empty());
  ASSERT_TRUE(d.recommended);
  const StartingKernel& rec = d.candidates[*d.recommended];
  EXPECT_EQ(rec.tier, "B");
  EXPECT_EQ(rec.name, "iter002_stages3");  // the best KEEP, not the last one
  EXPECT_EQ(rec.path.extension(), ".co");
  ASSERT_EQ(rec.companions.size(), 1u);
  EXPECT_EQ(rec.companions[0].extension(), ".cu");
  // The bundled kernel is still offered, after it.
  bool bundled = false;
  for (const auto& c : d.candidates) bundled = bundled || (c.tier == "A" && c.name == "matmul_f16f32_ws");
  EXPECT_TRUE(bundled);
  for (const auto& c : d.candidates) EXPECT_NE(c.name, "iter001_fast");
}

TEST(BuildDiscover, NothingUsableGivesTierCWithReferences) {
  TempDir home;
  ensure_dir(home / "kernels");
  ScopedEnv env("CROQ_HOME", home.path().string());
  Discovery d = discover_starting_kernels(nullptr, {"croqtile", "matmul", "", "", std::nullopt});
  EXPECT_TRUE(d.candidates.empty());
  json j = d.to_json(nullptr);
  EXPECT_EQ(j["tier"], "C");
  EXPECT_NE(j["recommendation"]["approach"].get<std::string>().find("mma"), std::string::npos);
  EXPECT_TRUE(j["recommendation"]["pick"].is_null());
}

TEST(BuildDiscover, TagsComeFromKernelNames) {
  EXPECT_EQ(tag_from_stem("iter012_stages4"), "stages4");
  EXPECT_EQ(tag_from_stem("wmma_tc"), "wmma_tc");
  EXPECT_EQ(tag_from_stem("Matmul-F16 (v2)"), "matmul_f16__v2");
  EXPECT_EQ(tag_from_stem("9"), "draft");
}

TEST(BuildDiscover, MetadataLineIsRead) {
  auto m = read_kernel_metadata("// x\n// croq-kernel: {\"rank\": 7, \"dtypes\": [\"f16f32\"]}\nint x;\n");
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)["rank"], 7);
  EXPECT_FALSE(read_kernel_metadata("int x;\n").has_value());
}

}  // namespace
}  // namespace croq
