// The purity scan of candidate shared objects, on tiny libraries built here with the system C++
// compiler: what links, calls or names a vendor GEMM library is found; CuTe-level code is not;
// damaged files are reported, never crash the reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>

#include "croq/measure/elf_scan.hpp"
#include "croq/measure/snapshot.hpp"
#include "croq/util/error.hpp"
#include "croq/util/hash.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/process.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

namespace fs = std::filesystem;

class Purity : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!find_executable("g++")) GTEST_SKIP() << "no g++ on this machine";
  }
  // Builds `source` into <dir>/<name>.so; extra linker arguments after the source.
  fs::path build(const std::string& name, const std::string& source, std::vector<std::string> extra = {}) {
    fs::path src = m_dir / (name + ".cpp");
    atomic_write(src, source, false);
    fs::path out = m_dir / (name + ".so");
    ProcessSpec spec;
    spec.argv = {"g++", "-shared", "-fPIC", "-O1", src.string(), "-o", out.string()};
    spec.argv.insert(spec.argv.end(), extra.begin(), extra.end());
    spec.timeout = std::chrono::seconds(120);
    SystemProcessRunner r;
    ProcessResult res = r.run(spec);
    EXPECT_TRUE(res.ok()) << res.describe() << res.err;
    return out;
  }
  static bool has(const PurityReport& r, const std::string& kind, const std::string& what) {
    for (const auto& f : r.forbidden) {
      if (f.kind == kind && f.what.find(what) != std::string::npos) return true;
    }
    return false;
  }
  test::TempDir m_tmp;
  fs::path m_dir = m_tmp.path();
};

TEST_F(Purity, AHandWrittenKernelIsClean) {
  auto so = build("clean", R"(
    namespace cute { int copy(int x) { return x + 1; } }
    namespace cutlass { namespace arch { int mma(int x) { return x * 2; } } }
    extern "C" int croq_matmul(const void*, const void*, const void*, void*, void*, unsigned long, void*) {
      return cute::copy(0) + cutlass::arch::mma(0) - 1;
    })");
  PurityReport r = scan_candidate(so);
  EXPECT_TRUE(r.is_elf) << r.error;
  EXPECT_TRUE(r.clean()) << r.summary();
  EXPECT_EQ(r.summary(), "clean");
}

TEST_F(Purity, AnUndefinedCublasSymbolIsForbidden) {
  auto so = build("calls", R"(
    extern "C" int cublasGemmEx(int);
    extern "C" int croq_matmul() { return cublasGemmEx(3); })");
  PurityReport r = scan_candidate(so);
  EXPECT_FALSE(r.clean());
  EXPECT_TRUE(has(r, "undefined_symbol", "cublasGemmEx")) << r.summary();
  EXPECT_NE(r.summary().find("calls cublasGemmEx"), std::string::npos);
}

TEST_F(Purity, ALinkedCublasLibraryIsForbidden) {
  // A stub with cuBLAS's soname stands in for the real library.
  build("libcublas_stub", "extern \"C\" int cublas_stub_marker() { return 1; }", {"-Wl,-soname,libcublas.so.13"});
  fs::rename(m_dir / "libcublas_stub.so", m_dir / "libcublas.so.13");
  auto so = build("links", "extern \"C\" int croq_matmul() { return 0; }",
                  {"-Wl,--no-as-needed", "-L" + m_dir.string(), "-l:libcublas.so.13"});
  PurityReport r = scan_candidate(so);
  EXPECT_TRUE(has(r, "needed", "libcublas.so.13")) << r.summary();
  EXPECT_NE(std::find(r.needed.begin(), r.needed.end(), "libcublas.so.13"), r.needed.end());
}

TEST_F(Purity, ALookupByNameAtRunTimeIsForbidden) {
  auto so = build("dlsym", R"(
    #include <dlfcn.h>
    extern "C" int croq_matmul() {
      void* f = dlsym(RTLD_DEFAULT, "cublasLtMatmul");
      return f ? 0 : 1;
    })", {"-ldl"});
  PurityReport r = scan_candidate(so);
  EXPECT_TRUE(has(r, "string", "cublasLtMatmul")) << r.summary();
}

TEST_F(Purity, ACutlassDeviceLevelGemmIsForbidden) {
  auto so = build("cutlass", R"(
    namespace cutlass { namespace gemm { namespace device {
      template <class T> struct Gemm { int run(); };
      template <class T> int Gemm<T>::run() { return 0; }
      template struct Gemm<float>;
    } } }
    extern "C" int croq_matmul() { return cutlass::gemm::device::Gemm<float>().run(); })");
  PurityReport r = scan_candidate(so);
  EXPECT_TRUE(has(r, "symbol", "7cutlass4gemm6device")) << r.summary();
}

TEST_F(Purity, FilesThatAreNotElfOrAreDamagedAreReportedWithoutCrashing) {
  EXPECT_FALSE(scan_elf_bytes("#!/bin/sh\necho hi\n").is_elf);
  EXPECT_FALSE(scan_candidate(m_dir / "missing.so").is_elf);
  auto so = build("victim", "extern \"C\" int croq_matmul() { return 0; }");
  std::string bytes = *read_file(so);
  EXPECT_FALSE(scan_elf_bytes(bytes.substr(0, 40)).is_elf);
  std::mt19937 rng(1234);
  for (int i = 0; i < 300; ++i) {
    std::string damaged = bytes;
    for (int j = 0; j < 16; ++j) damaged[rng() % damaged.size()] = static_cast<char>(rng());
    (void)scan_elf_bytes(damaged);  // must neither crash nor hang
    (void)scan_elf_bytes(damaged.substr(0, rng() % damaged.size()));
  }
}

// Synchronising calls: imported from a shared runtime, or called in the copy linked into the
// candidate (nvcc links cudart statically; here a local function of the same name stands in).
// A function that is present but never called is not a finding: every statically linked
// candidate contains the whole runtime.
TEST_F(Purity, SynchronisingCallsAreFoundWhereTheyAreCalled) {
  auto imported = build("imported", R"(
    extern "C" int cudaStreamSynchronize(void*);
    extern "C" int croq_matmul(void* s) { return cudaStreamSynchronize(s); }
  )");
  PurityReport a = scan_candidate(imported);
  EXPECT_TRUE(a.clean());  // not a library call: reported apart
  ASSERT_EQ(a.synchronising.size(), 1u);
  EXPECT_EQ(a.synchronising[0].kind, "undefined_symbol");
  EXPECT_EQ(a.synchronising_summary(), "calls cudaStreamSynchronize");

  auto linked = build("linked", R"(
    extern "C" __attribute__((noinline, visibility("hidden"))) int cudaMemcpy(void* d, const void* s, int n) {
      static volatile int calls = 0; calls = calls + n; return d == s;
    }
    extern "C" __attribute__((noinline, visibility("hidden"))) int cudaDeviceSynchronize() {
      static volatile int calls = 0; calls = calls + 1; return 0;
    }
    extern "C" int croq_matmul(void* c) { float h; return cudaMemcpy(&h, c, 4); }
  )");
  PurityReport b = scan_candidate(linked);
  EXPECT_EQ(b.synchronising_summary(), "calls cudaMemcpy") << "cudaDeviceSynchronize is present but never called";
  EXPECT_EQ(b.synchronising[0].kind, "call");

  auto pointer = build("pointer", R"(
    extern "C" __attribute__((noinline, visibility("hidden"))) int cuCtxSynchronize() {
      static volatile int calls = 0; calls = calls + 1; return 0;
    }
    extern "C" int (*volatile g_sync)() = nullptr;
    extern "C" int croq_matmul() { g_sync = &cuCtxSynchronize; return g_sync(); }
  )");
  EXPECT_EQ(scan_candidate(pointer).synchronising_summary(), "calls cuCtxSynchronize");

  auto honest = build("honest", R"(
    extern "C" int cudaMemcpyAsync(void*, const void*, unsigned long, int, void*);
    extern "C" int croq_matmul(void* c, void* s) { return cudaMemcpyAsync(c, c, 4, 3, s); }
  )");
  EXPECT_TRUE(scan_candidate(honest).synchronising.empty());
}

}  // namespace
}  // namespace croq

namespace croq {
namespace {

// The runner's copy of a candidate is read once and sealed: replacing the workspace's file (a
// rename over it, or a write into it) after the copy changes nothing the runner hashes, scans or
// loads, and the copy cannot be written through its path.
TEST(CandidateSnapshot, IsReadOnceAndCannotChangeAfterwards) {
  test::TempDir dir;
  const fs::path file = dir / "iter001_x.so";
  atomic_write(file, "the built binary", false);
  CandidateSnapshot snap = CandidateSnapshot::take(file);
  EXPECT_EQ(snap.size(), 16);
  EXPECT_EQ(snap.path().string().rfind("/proc/self/fd/", 0), 0u);
  atomic_write(dir / "other.so", "another shared object", false);
  fs::rename(dir / "other.so", file);
  EXPECT_EQ(read_file(snap.path()).value_or(""), "the built binary");
  EXPECT_EQ(sha256_file(snap.path()), sha256_hex("the built binary"));
  {
    std::ofstream w(snap.path(), std::ios::binary | std::ios::trunc);
    w << "rewritten";
    w.flush();
  }
  EXPECT_EQ(read_file(snap.path()).value_or(""), "the built binary");
  EXPECT_THROW(CandidateSnapshot::take(dir / "missing.so"), Error);
}

}  // namespace
}  // namespace croq
