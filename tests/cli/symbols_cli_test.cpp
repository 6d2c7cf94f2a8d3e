// Kernels that compose, on the cpp backend (no GPU, no nvcc): every bundled cpp kernel built by
// croq build exports only the kernel ABI's entry points and has no STB_GNU_UNIQUE symbol (read from
// the .so with croq's ELF reader), and croq build warns about a build that has either.
#include <gtest/gtest.h>

#include <elf.h>

#include "croq/util/elf.hpp"
#include "croq/util/fs.hpp"
#include "support/test_support.hpp"

using croq::json;
using croq::test::CroqRun;
using croq::test::run_croq;
using croq::test::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string k_gpu = "cpu_test";
const std::string k_key = "matmul_f32_64x64x64";

std::vector<std::string> with(std::vector<std::string> args) {
  for (const std::string& a : {std::string("--gpu"), k_gpu, std::string("--dsl"), std::string("cpp"),
                               std::string("--shape-key"), k_key, std::string("--model"), std::string("sym")}) {
    args.push_back(a);
  }
  return args;
}

fs::path src_dir(const fs::path& root) { return root / "tuning" / k_gpu / "cpp" / "srcs" / k_key / "sym"; }
fs::path bin_dir(const fs::path& root) { return root / "tuning" / k_gpu / "cpp" / "bin" / k_key / "sym"; }

struct Exports {
  std::set<std::string> exported, unique;
};

Exports exports_of(const fs::path& so) {
  Exports e;
  const croq::ElfFile elf = croq::read_elf(croq::read_file_or_throw(so));
  EXPECT_TRUE(elf.ok) << elf.error;
  for (const auto& s : elf.symbols) {
    if (!s.defined) continue;
    if (s.bind == STB_GNU_UNIQUE) e.unique.insert(s.name);
    if (s.dynamic && s.bind != STB_LOCAL && s.visibility == STV_DEFAULT) e.exported.insert(s.name);
  }
  return e;
}

TEST(KernelSymbols, EveryBundledCppKernelBuiltByCroqExportsOnlyTheAbi) {
  TempDir dir;
  fs::create_directories(src_dir(dir.path()));
  const std::string kernels = std::string(CROQ_SOURCE_DIR) + "/kernels/cpp/matmul/";
  const std::vector<std::pair<std::string, std::string>> sources = {
      {"iter001_naive", kernels + "naive.cpp"},
      {"iter002_blocked", kernels + "blocked.cpp"},
      {"iter003_tiled", kernels + "tiled/tiled_gemm.cpp"},
      {"iter004_sparse_reference", std::string(CROQ_SOURCE_DIR) + "/kernels/cpp/gemm_sp/reference.cpp"},
      {"iter005_sparse_tiled", std::string(CROQ_SOURCE_DIR) + "/kernels/cpp/gemm_sp/tiled/tiled_sparse.cpp"}};
  const std::set<std::string> abi = {"croq_matmul",      "croq_matmul_workspace_bytes", "croq_kernel_info",
                                     "croq_gemm",        "croq_gemm_workspace_bytes",   "croq_gemm_prepared_bytes",
                                     "croq_gemm_prepare"};
  for (const auto& [kernel, file] : sources) {
    SCOPED_TRACE(kernel);
    // THREADS 4: the tiled kernels' worker threads (std::thread state instantiated per kernel).
    const bool threads = kernel == "iter003_tiled" || kernel == "iter005_sparse_tiled";
    std::string text = (threads ? "#define CROQ_THREADS 4\n" : "") + croq::read_file_or_throw(file);
    croq::atomic_write(src_dir(dir.path()) / (kernel + ".cpp"), text, false);
    CroqRun build = run_croq(dir.path(), with({"build", "--iter", kernel}));
    ASSERT_EQ(build.rc, 0) << build.out << build.err;
    EXPECT_EQ(build.doc.value("verdict", ""), "OK");
    EXPECT_TRUE(build.doc["symbols"].value("clean", false)) << build.doc["symbols"].dump();
    EXPECT_TRUE(build.doc["warnings"].empty()) << build.doc["warnings"].dump();
    Exports e = exports_of(bin_dir(dir.path()) / (kernel + ".so"));
    EXPECT_TRUE(e.unique.empty()) << *e.unique.begin();
    for (const auto& name : e.exported) {
      if (name == "_init" || name == "_fini") continue;
      EXPECT_TRUE(abi.count(name)) << name;
    }
    EXPECT_TRUE(e.exported.count("croq_matmul") || e.exported.count("croq_gemm"));
  }
}

// Helpers made visible and unique symbols turned back on: croq build says so (and builds).
TEST(KernelSymbols, CroqBuildWarnsAboutExportedHelpersAndUniqueSymbols) {
  TempDir dir;
  fs::create_directories(src_dir(dir.path()));
  croq::atomic_write(src_dir(dir.path()) / "iter001_leaky.cpp", R"(#include <croq/kernel_abi.h>
namespace mine {
struct Info { int ready; };
template <typename T> __attribute__((visibility("default"))) Info& info() { static Info i{0}; return i; }
__attribute__((visibility("default"))) int shared_helper(int x) { return x + info<float>().ready; }
}
CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void*, const void*, void*, void*, size_t, void*) {
  return p && mine::shared_helper(0) == 0 ? CROQ_UNSUPPORTED : CROQ_INVALID_ARGUMENT;
}
)", false);
  CroqRun build = run_croq(dir.path(), with({"build", "--iter", "iter001_leaky", "--flags", "-fgnu-unique"}));
  ASSERT_EQ(build.rc, 0) << build.out << build.err;
  EXPECT_EQ(build.doc.value("verdict", ""), "OK");
  const json& s = build.doc["symbols"];
  EXPECT_FALSE(s.value("clean", true));
  EXPECT_NE(s["exported_extra"].dump().find("shared_helper"), std::string::npos) << s.dump();
  EXPECT_FALSE(s["unique"].empty()) << s.dump();
  const std::string w = build.doc["warnings"].dump();
  EXPECT_NE(w.find("STB_GNU_UNIQUE"), std::string::npos) << w;
  EXPECT_NE(w.find("beyond the kernel ABI"), std::string::npos) << w;
  EXPECT_NE(build.err.find("beyond the kernel ABI"), std::string::npos) << "the warning is shown: " << build.err;
}

}  // namespace

// A kernel that writes with <iostream>: the standard library's inline members (std::ctype<char>::
// do_widen, through std::endl) stay exported whatever -fvisibility says, since libstdc++ gives
// namespace std default visibility. They are the same code in every kernel, so croq build lists them
// (symbols.exported_std) without a warning; a helper of the kernel's own is still hidden.
TEST(KernelSymbols, StandardLibraryInlineMembersAreListedNotWarnedAbout) {
  TempDir dir;
  fs::create_directories(src_dir(dir.path()));
  croq::atomic_write(src_dir(dir.path()) / "iter001_chatty.cpp", R"(#include <croq/kernel_abi.h>
#include <iostream>
namespace mine {
int helper(int x) { std::cerr << "croq_matmul " << x << std::endl; return x; }
}
CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void*, const void*, void*, void*, size_t, void*) {
  return p && mine::helper(0) == 0 ? CROQ_UNSUPPORTED : CROQ_INVALID_ARGUMENT;
}
)", false);
  CroqRun build = run_croq(dir.path(), with({"build", "--iter", "iter001_chatty"}));
  ASSERT_EQ(build.rc, 0) << build.out << build.err;
  const json& s = build.doc["symbols"];
  EXPECT_TRUE(s.value("clean", false)) << s.dump();
  EXPECT_TRUE(s["exported_extra"].empty()) << s.dump();
  EXPECT_NE(s["exported_std"].dump().find("_ZNKSt5ctypeIcE8do_widenEc"), std::string::npos) << s.dump();
  EXPECT_TRUE(!build.doc.contains("warnings") || build.doc["warnings"].empty()) << build.doc["warnings"].dump();
  EXPECT_EQ(build.err.find("beyond the kernel ABI"), std::string::npos) << build.err;
}
