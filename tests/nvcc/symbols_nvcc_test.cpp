// Kernels that compose (label nvcc; skipped without nvcc): the Hopper and Ampere GEMM templates
// built by croq build export only the ABI's entry points and carry no STB_GNU_UNIQUE symbol, and
// croq's flags are what keeps a template's function-local statics from becoming unique symbols
// (the same small source built by plain nvcc has them, and croq build warns about such a build).
#include <gtest/gtest.h>

#include <cstdlib>

#include <fmt/format.h>

#include "croq/build/builder.hpp"
#include "croq/build/symbols.hpp"
#include "croq/search/ampere_gemm_family.hpp"
#include "croq/search/hopper_gemm_family.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"
#include "croq/workspace/dtype.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

bool have_nvcc() {
  const std::string nvcc = Toolchain::from_env().nvcc;
  return !nvcc.empty() && std::filesystem::exists(nvcc);
}

FamilyProblem problem(const std::string& dtype, const std::string& arch) {
  FamilyProblem p;
  p.m = 1000;
  p.n = 1000;
  p.k = 1000;
  p.dtype = parse_dtype_pair_or_throw(dtype);
  p.arch = arch;
  return p;
}

// croq build of one source in a fresh workspace; returns the build record.
json croq_build(const test::TempDir& dir, const std::string& gpu, const std::string& key, const std::string& kernel,
                const std::string& source, const std::vector<std::string>& flags) {
  Workspace ws(dir.path());
  TaskRef task = make_task(gpu, "cuda", key, "symbols");
  const auto src = ws.kind_dir(task, ArtifactKind::srcs) / (kernel + ".cu");
  std::filesystem::create_directories(src.parent_path());
  atomic_write(src, source, false);
  BuildOptions o;
  o.flags = flags;
  o.use_cache = false;
  CompilerVersions versions;
  return build_target(ws, locate_build_target(ws, task, kernel), o, Toolchain::from_env(), versions);
}

TEST(GemmTemplatesCompile, CroqBuildsOfTheTemplatesExportOnlyTheAbiAndNoUniqueSymbol) {
  if (!have_nvcc()) GTEST_SKIP() << "nvcc not found";
  test::TempDir dir;
  struct Case {
    const KernelFamily* family;
    std::string gpu, arch, dtype;
    FamilyConfig change;
  };
  HopperGemmFamily hopper;
  AmpereGemmFamily ampere;
  const std::vector<Case> cases = {
      {&hopper, "sm90_NVIDIA_H200", "sm_90a", "f16f32", {}},
      {&hopper, "sm90_NVIDIA_H200", "sm_90a", "bf16f32", {{"BN", "128"}, {"STAGES", "6"}}},
      {&ampere, "sm80_NVIDIA_A100", "sm_80", "f16f32", {}},
  };
  int i = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("{} {}", c.family->name(), c.dtype));
    const FamilyProblem p = problem(c.dtype, c.arch);
    FamilyConfig cfg = c.family->default_config(p);
    for (const auto& [k, v] : c.change) cfg[k] = v;
    ASSERT_FALSE(c.family->violation(cfg, p));
    const std::string kernel = fmt::format("iter{:03d}_sym", ++i);
    json doc = croq_build(dir, c.gpu, fmt::format("matmul_{}_1000x1000x1000", c.dtype), kernel,
                          c.family->render_source(cfg, p), c.family->build_flags(cfg, p));
    ASSERT_EQ(doc.value("verdict", ""), "OK") << doc.dump(2).substr(0, 3000);
    ASSERT_TRUE(doc.contains("symbols")) << doc.dump(2).substr(0, 2000);
    EXPECT_TRUE(doc["symbols"]["unique"].empty()) << doc["symbols"].dump();
    EXPECT_TRUE(doc["symbols"]["exported_extra"].empty()) << doc["symbols"].dump();
    EXPECT_EQ(doc["symbols"]["entry_points"],
              json::array({"croq_kernel_info", "croq_matmul", "croq_matmul_workspace_bytes"}));
    EXPECT_TRUE(doc["warnings"].empty()) << doc["warnings"].dump();
    // The same answer from the file itself.
    const auto so = Workspace(dir.path()).kind_dir(make_task(c.gpu, "cuda", fmt::format("matmul_{}_1000x1000x1000", c.dtype), "symbols"),
                                                  ArtifactKind::bin) / (kernel + ".so");
    EXPECT_TRUE(scan_symbols(so).clean());
  }
}

// A template with a function-local static in a named namespace, the pattern of the Hopper
// template's launch and tensor-map caches.
const char* const k_cached_source = R"(#include <croq/kernel_abi.h>
namespace mine {
struct Info { int ready; };
template <typename T> Info& info() { static Info i{0}; return i; }
__global__ void touch(int* p) { if (p) *p = 1; }
}
CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void*, const void*, void*, void*, size_t, void*) {
  if (!p) return CROQ_INVALID_ARGUMENT;
  mine::info<float>().ready = 1;
  mine::touch<<<1, 1>>>(nullptr);
  return CROQ_OK;
}
)";

TEST(GemmTemplatesCompile, CroqFlagsKeepTemplateStaticsFromBecomingUniqueAndTheBuildWarns) {
  if (!have_nvcc()) GTEST_SKIP() << "nvcc not found";
  test::TempDir dir;
  // Plain nvcc: the static is STB_GNU_UNIQUE and exported (what made kernels share their caches).
  const auto src = dir / "cached.cu";
  atomic_write(src, k_cached_source, false);
  ProcessSpec plain;
  plain.argv = {Toolchain::from_env().nvcc, "-O2", "--shared", "-Xcompiler", "-fPIC", "-I" + find_project_dir("include").string(),
                "-gencode=arch=compute_90a,code=sm_90a", src.string(), "-o", (dir / "plain.so").string()};
  ProcessResult r = process_runner().run(plain);
  ASSERT_TRUE(r.ok()) << r.err;
  SymbolReport before = scan_symbols(dir / "plain.so");
  ASSERT_TRUE(before.is_elf);
  EXPECT_FALSE(before.unique.empty()) << "plain nvcc emits the template's static as a unique symbol";
  EXPECT_FALSE(before.clean());
  EXPECT_FALSE(before.warnings().empty());

  // croq build: none.
  json doc = croq_build(dir, "sm90_NVIDIA_H200", "matmul_f16fp32_64x64x64", "iter001_cached", k_cached_source, {});
  ASSERT_EQ(doc.value("verdict", ""), "OK") << doc.dump(2).substr(0, 3000);
  EXPECT_TRUE(doc["symbols"]["unique"].empty()) << doc["symbols"].dump();
  EXPECT_TRUE(doc["symbols"]["exported_extra"].empty()) << doc["symbols"].dump();
  EXPECT_TRUE(doc["warnings"].empty()) << doc["warnings"].dump();

  // croq build with flags that undo croq's: the build warns (and still succeeds).
  json warned = croq_build(dir, "sm90_NVIDIA_H200", "matmul_f16fp32_64x64x64", "iter002_cached", k_cached_source,
                           {"-Xcompiler", "-fgnu-unique", "-Xcompiler", "-fvisibility=default"});
  ASSERT_EQ(warned.value("verdict", ""), "OK");
  EXPECT_FALSE(warned["symbols"]["unique"].empty()) << warned["symbols"].dump();
  ASSERT_FALSE(warned["warnings"].empty());
  EXPECT_NE(warned["warnings"].dump().find("STB_GNU_UNIQUE"), std::string::npos) << warned["warnings"].dump();
}

}  // namespace
}  // namespace croq
