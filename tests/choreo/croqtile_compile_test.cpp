// The real CroqTile compiler (label choreo). Runs where the pinned toolchain is installed
// (scripts/setup.sh --with-choreo; croq finds it without environment variables, and so do these
// tests) and skips elsewhere, so CI builds CroqTile kernels only where the compiler is present:
//   - every bundled .co (kernels/croqtile/) goes through choreo and can be bound to the ABI;
//   - the croqtile_gemm family's defaults, alternatives and a sample of its legal configurations
//     go through choreo with the flags croq tune passes (what violation() lets through, choreo
//     accepts);
//   - the croqtile_gemm_sp family's defaults, alternatives and legal configurations of every dtype
//     go through choreo, each consumer waiting for a slice's sparse WGMMAs before it releases the
//     slot;
//   - with nvcc as well: `croq build` of every bundled kernel (dense and 2:4 sparse) and of the
//     families' defaults (phase 1, phase 2, the ABI shared object), with no CHOREO_HOME or CUTE_HOME
//     set; each shared object passes croq measure's purity scan (no vendor GEMM library, and no
//     synchronising or host-reading call, which an enforced task refuses) and exports only the
//     ABI's entry points, with no STB_GNU_UNIQUE symbol (kernels that compose).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <regex>
#include <tuple>

#include <fmt/format.h>

#include "croq/build/choreo.hpp"
#include "croq/build/choreo_toolchain.hpp"
#include "croq/measure/elf_scan.hpp"
#include "croq/search/croqtile_gemm_family.hpp"
#include "croq/search/croqtile_gemm_sp_family.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/process.hpp"
#include "croq/util/text.hpp"
#include "croq/workspace/dtype.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

using test::TempDir;

std::optional<fs::path> toolchain() {
  if (const char* home = std::getenv("CHOREO_HOME"); home && *home) return fs::path(home);
  return find_choreo_toolchain();
}

#define REQUIRE_TOOLCHAIN(var)                                                                                 \
  auto var##_opt = toolchain();                                                                                \
  if (!var##_opt) GTEST_SKIP() << "the pinned CroqTile toolchain is not installed (scripts/setup.sh --with-choreo)"; \
  const fs::path var = *var##_opt

std::optional<fs::path> nvcc() {
  if (auto p = find_executable("nvcc")) return p;
  if (fs::exists("/usr/local/cuda/bin/nvcc")) return fs::path("/usr/local/cuda/bin/nvcc");
  return std::nullopt;
}

// choreo -gs on a .co; returns the script (empty kernel() on failure, with `log` set).
ChoreoScript phase1(const fs::path& tc, const fs::path& co, const std::vector<std::string>& flags, std::string& log,
                    const fs::path& out_dir) {
  SystemProcessRunner runner;
  ProcessSpec spec;
  fs::path result = out_dir / (co.stem().string() + ".cute.result");
  spec.argv = {(tc / "build" / "choreo").string(), "-gs", "-t", "cute", "-arch=sm_90a"};
  spec.argv.insert(spec.argv.end(), flags.begin(), flags.end());
  spec.argv.insert(spec.argv.end(), {co.string(), "-o", result.string()});
  spec.timeout = std::chrono::minutes(2);
  ProcessResult r = runner.run(spec);
  log = r.err + r.out;
  if (!r.ok()) return {};
  return parse_cute_result(read_file(result).value_or(""));
}

// phase1 of a family's configuration, rendered into dir/file with the family's choreo flags.
ChoreoScript phase1_of(const fs::path& tc, const KernelFamily& f, const FamilyConfig& c, const FamilyProblem& p,
                       const fs::path& dir, const std::string& file, std::string& log) {
  const fs::path co = dir / file;
  atomic_write(co, f.render_source(c, p), false);
  return phase1(tc, co, f.choreo_flags(c, p), log, dir);
}

// ptxas gives a thread of a kernel under __launch_bounds__(T, B) 65536 / (T x B) registers (at most
// 255, in steps of 8), whatever the family assumed: its accumulators and ~40 more must fit (a
// WARP_N=256 one-consumer kernel launched two to a SM fails in ptxas), and setmaxnreg.inc draws on
// the block's own pool, the threads times those registers: a REGCTRL=1 configuration's targets must
// fit in it, or its consumers wait for ever (a one-consumer block, launched two to a SM, hung on
// the H200).
void expect_registers_fit_the_launch(const FamilyConfig& c, const std::string& cu) {
  std::smatch m;
  const std::regex bounds(R"(__launch_bounds__\((\d+)(?:,\s*(\d+))?)");
  ASSERT_TRUE(std::regex_search(cu, m, bounds)) << "no __launch_bounds__ in the kernel";
  const int threads = std::stoi(m[1].str()), blocks = m[2].matched ? std::stoi(m[2].str()) : 1;
  const int launched = std::min(255, 65536 / (threads * blocks)) / 8 * 8;
  EXPECT_LE(CroqtileGemmFamily::accumulator_registers(c) + 40, launched)
      << config_to_json(c).dump() << ": __launch_bounds__(" << threads << ", " << blocks << ")";
  if (c.at("REGCTRL") != "1") return;
  const int consumers = std::stoi(c.at("CONSUMERS"));
  const auto [producer, consumer] = CroqtileGemmFamily::regctrl_targets(consumers);
  EXPECT_LE(128 * producer + 128 * consumers * consumer, threads * launched)
      << config_to_json(c).dump() << ": __launch_bounds__(" << threads << ", " << blocks << ")";
}

// The generated CUDA kernel of a configuration the family calls legal (phase 1 in a folder of its
// own); empty, with the failure reported, where the family refuses it or choreo does not build it.
std::string legal_kernel_cu(const fs::path& tc, const KernelFamily& f, const FamilyConfig& c, const FamilyProblem& p,
                            const std::string& file) {
  if (auto v = f.violation(c, p)) {
    ADD_FAILURE() << config_to_json(c).dump() << ": " << *v;
    return {};
  }
  TempDir work;
  std::string log;
  ChoreoScript s = phase1_of(tc, f, c, p, work.path(), file, log);
  if (!s.kernel()) {
    ADD_FAILURE() << config_to_json(c).dump() << ":\n" << log;
    return {};
  }
  return s.kernel()->content;
}

std::vector<fs::path> bundled_kernels() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(CROQ_SOURCE_DIR) / "kernels" / "croqtile")) {
    if (e.is_regular_file() && e.path().extension() == ".co") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// `count` legal configurations of the family for the problem, drawn with `rng` (seeded by the
// caller: the same ones every run).
std::vector<FamilyConfig> sample_legal(const KernelFamily& f, const FamilyProblem& p, std::mt19937& rng, int count) {
  std::vector<FamilyConfig> out;
  const auto specs = f.params();
  for (int tries = 0; static_cast<int>(out.size()) < count && tries < 5000; ++tries) {
    FamilyConfig c;
    for (const auto& s : specs) c[s.name] = s.values[rng() % s.values.size()];
    if (!f.violation(c, p)) out.push_back(c);
  }
  return out;
}

TEST(CroqtileCompile, EveryBundledKernelGoesThroughThePinnedChoreo) {
  REQUIRE_TOOLCHAIN(tc);
  TempDir work;
  auto kernels = bundled_kernels();
  ASSERT_GE(kernels.size(), 4u);
  for (const fs::path& co : kernels) {
    std::string log;
    ChoreoScript s = phase1(tc, co, {}, log, work.path());
    ASSERT_NE(s.kernel(), nullptr) << co << ":\n" << log;
    EXPECT_NE(s.cflags.find("${CUTE_HOME}/include"), std::string::npos) << co;
    const std::string& cu = s.kernel()->content;
    EXPECT_NE(cu.find("__global__"), std::string::npos) << co;
    // Launched on croq's stream without a synchronisation (parallel.async<s>).
    EXPECT_EQ(cu.find("cudaStreamSynchronize"), std::string::npos) << co;
    EXPECT_EQ(cu.find("cudaDeviceSynchronize"), std::string::npos) << co;
    EXPECT_NE(cu.find("croq_shape_ok"), std::string::npos) << co;
    std::string why;
    auto sig = find_matmul_signature(read_file_or_throw(co), &why);
    ASSERT_TRUE(sig) << co << ": " << why;
    EXPECT_TRUE(sig->takes_stream);
    // Tensor cores: WGMMA (dense) or sparse WGMMA.
    EXPECT_NE(cu.find(sig->sparse24 ? "GMMA::SPARSE" : "SM90::GMMA::MMA_64x"), std::string::npos) << co;
  }
}

TEST(CroqtileCompile, FamilyConfigurationsGoThroughThePinnedChoreo) {
  REQUIRE_TOOLCHAIN(tc);
  TempDir work;
  CroqtileGemmFamily f;
  struct Case {
    int64_t m, n, k;
    const char* dtype;
  };
  std::vector<std::pair<FamilyConfig, FamilyProblem>> todo;
  for (Case c : {Case{4096, 4096, 4096, "f16f32"}, Case{768, 768, 768, "bf16f32"}, Case{512, 8192, 8192, "f16"},
                 Case{12288, 12288, 12288, "bf16"}}) {
    FamilyProblem p;
    p.m = c.m;
    p.n = c.n;
    p.k = c.k;
    p.dtype = parse_dtype_pair_or_throw(c.dtype);
    p.arch = "sm_90a";
    todo.emplace_back(f.default_config(p), p);
    for (const auto& a : f.alternatives(p)) todo.emplace_back(a.config, p);
  }
  // A sample of the legal space at 4096^3 (seeded: the same configurations every run).
  FamilyProblem p = todo.front().second;
  std::mt19937 rng(7);
  for (const auto& c : sample_legal(f, p, rng, 24)) todo.emplace_back(c, p);
  int n = 0;
  for (const auto& [c, prob] : todo) {
    std::string log;
    ChoreoScript s = phase1_of(tc, f, c, prob, work.path(), fmt::format("cfg{}.co", n++), log);
    EXPECT_NE(s.kernel(), nullptr) << config_to_json(c).dump() << " " << prob.dtype.canonical << ":\n" << log;
    if (s.kernel()) expect_registers_fit_the_launch(c, s.kernel()->content);
  }
  EXPECT_GE(n, 30);
}

struct CroqBuild {
  TempDir root;
  std::vector<std::string> task;
  // croq with no CHOREO_HOME, CUTE_HOME or CROQ_CHOREO: it must find the toolchain itself.
  test::CroqRun run(const std::vector<std::string>& args) {
    std::vector<std::string> a = args;
    a.insert(a.end(), task.begin(), task.end());
    std::map<std::string, std::string> env;
    if (auto v = nvcc()) env["CROQ_NVCC"] = v->string();
    return test::run_croq(root.path(), a, env, {}, std::chrono::milliseconds(1200000));
  }
};

bool has_output(const json& doc, const std::string& suffix) {
  for (const auto& o : doc.value("outputs", json::array())) {
    if (o.is_string() && ends_with(o.get<std::string>(), suffix)) return true;
  }
  return false;
}

// The ABI shared object of a build document, scanned as croq measure scans it before it runs.
void expect_pure(const fs::path& root, const json& doc) {
  ASSERT_TRUE(doc["abi"]["output"].is_string()) << doc.dump();
  PurityReport scan = scan_candidate(root / doc["abi"]["output"].get<std::string>());
  EXPECT_TRUE(scan.clean()) << scan.summary();
  EXPECT_TRUE(scan.synchronising.empty()) << scan.synchronising_summary();
  // And it composes: only the ABI's entry points are exported, no STB_GNU_UNIQUE symbol (croq build
  // reads the shared object's symbols; two CroqTile kernels of one process share nothing).
  ASSERT_TRUE(doc.contains("symbols")) << doc.dump();
  EXPECT_TRUE(doc["symbols"]["unique"].empty()) << doc["symbols"].dump();
  EXPECT_TRUE(doc["symbols"]["exported_extra"].empty()) << doc["symbols"].dump();
  EXPECT_TRUE(doc["symbols"]["entry_points"].size() >= 2) << doc["symbols"].dump();
}

TEST(CroqtileCompile, CroqBuildsTheBundledDenseKernelsWithoutEnvironment) {
  REQUIRE_TOOLCHAIN(tc);
  if (!nvcc()) GTEST_SKIP() << "no CUDA toolkit";
  if (std::getenv("CHOREO_HOME") || std::getenv("CUTE_HOME") || std::getenv("CROQ_CHOREO"))
    GTEST_SKIP() << "CHOREO_HOME, CUTE_HOME or CROQ_CHOREO is set: this test shows croq finds the toolchain itself";
  for (auto [file, key] : {std::pair{"matmul/matmul_f16f32_ws.co", "matmul_f16fp32_4096x4096x4096"},
                           std::pair{"matmul/matmul_bf16f32_ws.co", "matmul_bf16fp32_4096x4096x4096"}}) {
    CroqBuild b;
    b.task = {"--gpu", "sm90_NVIDIA_H200", "--dsl", "croqtile", "--shape-key", key, "--model", "bundled"};
    // (without a GPU env validate fails on the GPU checks; the toolchain's are what this test reads)
    auto env = test::run_croq(b.root.path(), {"env", "validate", "--dsl", "croqtile"});
    EXPECT_EQ(env.doc["checks"]["croqtile"]["found_by"], "installed") << env.out;
    EXPECT_EQ(env.doc["checks"]["croqtile"]["choreo_home"], tc.string()) << env.out;
    for (const auto& e : env.doc.value("errors", json::array())) {
      EXPECT_NE(e.value("check", ""), "CHOREO_HOME") << env.out;
      EXPECT_NE(e.value("check", ""), "CUTE_HOME") << env.out;
    }
    auto prep = b.run({"prepare", "--from", (fs::path(CROQ_SOURCE_DIR) / "kernels/croqtile" / file).string(), "--tag", "ws"});
    ASSERT_EQ(prep.rc, 0) << prep.out << prep.err;
    auto r = b.run({"build", "--iter", "iter001_ws"});
    ASSERT_EQ(r.rc, 0) << r.out << r.err;
    EXPECT_EQ(r.doc["verdict"], "OK") << r.out;
    EXPECT_TRUE(has_output(r.doc, ".so")) << r.out;
    EXPECT_EQ(r.doc["abi"]["built"], true) << r.out;
    EXPECT_EQ(r.doc["abi"]["function"], "matmul");
    // No main(): no program of choreo's own harness, only the ABI shared object.
    EXPECT_FALSE(has_output(r.doc, "iter001_ws")) << r.out;
    // The kernel's registers come back from ptxas: 1 producer + 2 consumers, 128 accumulators.
    bool wgmma_kernel = false;
    for (const auto& res : r.doc.value("resources", json::array())) {
      wgmma_kernel = wgmma_kernel || (res.value("kernel", "").find("__choreo_device_matmul") != std::string::npos &&
                                      res.value("spill_stores", 1) == 0);
    }
    EXPECT_TRUE(wgmma_kernel) << r.doc["resources"].dump();
    expect_pure(b.root.path(), r.doc);
  }
}

// The 2:4 sparse baselines through croq build: the ABI wrapper binds them to croq_gemm (version 2)
// with the prepare pair that compresses A; the shared object exports all of it and is pure.
TEST(CroqtileCompile, CroqBuildsTheBundledSparseKernels) {
  REQUIRE_TOOLCHAIN(tc);
  if (!nvcc()) GTEST_SKIP() << "no CUDA toolkit";
  for (auto [file, key, a_type] : {std::tuple{"gemm_sp/gemm_sp_f16.co", "gemm_sp_f16fp32_4096x8192x8192", "f16"},
                                   std::tuple{"gemm_sp/gemm_sp_e4m3.co", "gemm_sp_e4m3fp16_4096x8192x8192", "f8_e4m3"}}) {
    CroqBuild b;
    b.task = {"--gpu", "sm90_NVIDIA_H200", "--dsl", "croqtile", "--shape-key", key, "--model", "bundled"};
    auto prep = b.run({"prepare", "--from", (fs::path(CROQ_SOURCE_DIR) / "kernels/croqtile" / file).string(), "--tag", "sp"});
    ASSERT_EQ(prep.rc, 0) << prep.out << prep.err;
    auto r = b.run({"build", "--iter", "iter001_sp"});
    ASSERT_EQ(r.rc, 0) << r.out << r.err;
    EXPECT_EQ(r.doc["verdict"], "OK") << r.out;
    EXPECT_EQ(r.doc["abi"]["built"], true) << r.out;
    EXPECT_EQ(r.doc["abi"]["function"], "gemm_sp");
    EXPECT_EQ(r.doc["abi"]["a_type"], a_type);
    EXPECT_EQ(r.doc["abi"]["b_layout"], "col");
    fs::path so = b.root / r.doc["abi"]["output"].get<std::string>();
    SystemProcessRunner runner;
    ProcessSpec nm;
    nm.argv = {"nm", "-D", "--defined-only", so.string()};
    ProcessResult syms = runner.run(nm);
    ASSERT_TRUE(syms.ok()) << syms.err;
    for (const char* sym : {"croq_gemm", "croq_gemm_prepare", "croq_gemm_prepared_bytes", "croq_kernel_info"}) {
      EXPECT_NE(syms.out.find(std::string(" T ") + sym + "\n"), std::string::npos) << sym << " in\n" << syms.out;
    }
    expect_pure(b.root.path(), r.doc);
  }
}

// The 4096^3 f16 -> f32 problem of the dense family's build tests.
FamilyProblem dense_4096() {
  FamilyProblem p;
  p.m = p.n = p.k = 4096;
  p.dtype = parse_dtype_pair_or_throw("f16f32");
  p.arch = "sm_90a";
  return p;
}

// `croq build` of a rendered croqtile_gemm configuration as iter001 of a fresh task, as croq tune
// builds it (the family's choreo flags); returns the run and the task's srcs folder.
std::pair<test::CroqRun, fs::path> build_rendered(CroqBuild& b, const CroqtileGemmFamily& f, const FamilyConfig& c,
                                                  const FamilyProblem& p, const std::string& file) {
  b.task = {"--gpu", "sm90_NVIDIA_H200", "--dsl", "croqtile", "--shape-key", "matmul_f16fp32_4096x4096x4096", "--model", "family"};
  fs::path srcs = b.root / "tuning/sm90_NVIDIA_H200/croqtile/srcs/matmul_f16fp32_4096x4096x4096/family";
  ensure_dir(srcs);
  atomic_write(srcs / file, f.render_source(c, p), false);
  return {b.run({"build", "--iter", "1", "--choreo-flags=" + shell_join(f.choreo_flags(c, p))}), srcs};
}

// A `croq build` of a rendered dense configuration succeeded, its kernel spills nothing, and its ABI
// object is pure and composable.
void expect_built_without_spills(CroqBuild& b, const test::CroqRun& r) {
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(r.doc["verdict"], "OK") << r.out;
  bool clean = false;
  for (const auto& res : r.doc.value("resources", json::array())) {
    clean = clean || (res.value("kernel", "").find("__choreo_device_matmul") != std::string::npos &&
                      res.value("spill_stores", 1) == 0 && res.value("spill_loads", 1) == 0);
  }
  EXPECT_TRUE(clean) << r.doc["resources"].dump();
  expect_pure(b.root.path(), r.doc);
}

TEST(CroqtileCompile, CroqBuildsTheFamilyDefaultAsCroqTuneDoes) {
  REQUIRE_TOOLCHAIN(tc);
  if (!nvcc()) GTEST_SKIP() << "no CUDA toolkit";
  CroqtileGemmFamily f;
  const FamilyProblem p = dense_4096();
  FamilyConfig c = f.default_config(p);
  c["PERSISTENT"] = "1";  // the persistent tile loop and the ring across tiles
  c["REGCTRL"] = "1";
  ASSERT_FALSE(f.violation(c, p));
  CroqBuild b;
  auto [r, srcs] = build_rendered(b, f, c, p, "iter001_croqtile_gemm_default.co");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(r.doc["verdict"], "OK") << r.out;
  EXPECT_EQ(r.doc["abi"]["built"], true) << r.out;
  // Bound to the types the family's macros name (CROQ_IN_T f16), not a fallback.
  EXPECT_EQ(r.doc["abi"]["a_type"], "f16") << r.out;
  EXPECT_TRUE(fs::exists(srcs / "iter001_croqtile_gemm_default.cu"));
  expect_pure(b.root.path(), r.doc);
}

// MMA_RUN 4: in each run of four K slices a consumer issues a slice's WGMMAs before it waits for the
// previous slice's (depth 1) and releases that slot, and drains the tensor cores (depth 0) once, at
// the run's end; built by croq as croq tune builds it, without spills.
TEST(CroqtileCompile, MmaRunFourKeepsOneSliceInFlightAndDrainsOncePerRun) {
  REQUIRE_TOOLCHAIN(tc);
  if (!nvcc()) GTEST_SKIP() << "no CUDA toolkit";
  CroqtileGemmFamily f;
  const FamilyProblem p = dense_4096();
  for (const char* persistent : {"0", "1"}) {
    FamilyConfig c = f.default_config(p);
    c["MMA_RUN"] = "4";
    c["PERSISTENT"] = persistent;
    const std::string cu = legal_kernel_cu(tc, f, c, p, "run4.co");
    ASSERT_FALSE(cu.empty());
    const size_t loop = cu.find("warpgroup_arrive();", cu.find("__global__"));
    ASSERT_NE(loop, std::string::npos);
    const std::string body = cu.substr(loop, cu.find("store_fragment_d", loop) - loop);
    auto count = [&](const std::string& needle) {
      size_t n = 0;
      for (size_t at = body.find(needle); at != std::string::npos; at = body.find(needle, at + 1)) ++n;
      return n;
    };
    EXPECT_EQ(count("warpgroup_wait<1>();"), 3u) << body.substr(0, 4000);
    EXPECT_EQ(count("warpgroup_wait<0>();"), 1u);
    EXPECT_EQ(count("].arrive();"), 4u);  // each slot released once, after its wait
    for (size_t at = body.find("].arrive();"); at != std::string::npos; at = body.find("].arrive();", at + 1)) {
      const size_t wait = body.rfind("warpgroup_wait<", at);
      const size_t issue = body.rfind("warpgroup_commit_batch();", at);
      EXPECT_TRUE(wait != std::string::npos && wait > issue) << "a slot is released without a wait after the last issue";
    }
  }
  FamilyConfig c = f.default_config(p);
  c["MMA_RUN"] = "4";
  CroqBuild b;
  auto [r, srcs] = build_rendered(b, f, c, p, "iter001_run4.co");
  expect_built_without_spills(b, r);
}

// EPILOGUE 2 (the family's first alternative at 4096^3): each half of the tile goes to shared memory,
// one thread's TMA store, its wait until the buffer has been read, then every consumer at the event
// before the buffer is written again; persistent and not, f32 and 16-bit output (stmatrix); built
// by croq as croq tune builds it, without spills.
TEST(CroqtileCompile, TheTwoHalfEpilogueStoresEachHalfByTmaBeforeTheBufferIsWrittenAgain) {
  REQUIRE_TOOLCHAIN(tc);
  if (!nvcc()) GTEST_SKIP() << "no CUDA toolkit";
  CroqtileGemmFamily f;
  const FamilyProblem p = dense_4096();
  FamilyConfig halves;
  for (const auto& a : f.alternatives(p)) {
    if (a.tag == "tma_halves") halves = a.config;
  }
  ASSERT_EQ(halves.at("EPILOGUE"), "2");
  FamilyProblem p16 = p;
  p16.dtype = parse_dtype_pair_or_throw("f16");
  for (auto [persistent, prob] : {std::pair{"1", p}, std::pair{"0", p}, std::pair{"1", p16}}) {
    FamilyConfig c = halves;
    c["PERSISTENT"] = persistent;
    const std::string cu = legal_kernel_cu(tc, f, c, prob, "halves.co");
    ASSERT_FALSE(cu.empty());
    std::vector<size_t> stores;
    for (size_t at = cu.find("cp_async_bulk_tensor_2d_shared_to_global("); at != std::string::npos;
         at = cu.find("cp_async_bulk_tensor_2d_shared_to_global(", at + 1))
      stores.push_back(at);
    ASSERT_EQ(stores.size(), 2u) << persistent << " " << prob.dtype.canonical;
    for (size_t i = 0; i < stores.size(); ++i) {
      const size_t read = cu.find("cp_async_bulk_wait_group_read<0>();", stores[i]);
      const size_t arrive = cu.find("epi[", stores[i]);
      const size_t wait = cu.find("].wait(", arrive);
      const size_t next = i + 1 < stores.size() ? cu.rfind("store_fragment_d", stores[i + 1]) : cu.size();
      EXPECT_TRUE(read < arrive && arrive < wait && wait < next)
          << "half " << i << ": the buffer is written again before every consumer knows the store read it";
    }
    // Two accumulators of 128 columns: WGMMAs of N 128, none of 256.
    EXPECT_NE(cu.find("MMA_64x128x16"), std::string::npos);
    EXPECT_EQ(cu.find("MMA_64x256x16"), std::string::npos);
  }
  CroqBuild b;
  auto [r, srcs] = build_rendered(b, f, halves, p, "iter001_tma_halves.co");
  expect_built_without_spills(b, r);
}

// The consumer loop of a rendered sparse configuration: every slot's release comes after a commit
// and wait for the sparse WGMMAs issued before it (choreo does not wait at the end of a foreach in
// warp-specialised code; the template's if makes it), whether a run holds one slice or several
// (MMA_RUN). Returns the number of releases and of waits in the loop.
std::pair<int, int> expect_waits_before_release(const std::string& cu, const std::string& what) {
  const size_t first = cu.find("GMMA::SPARSE::");
  EXPECT_NE(first, std::string::npos) << what;
  if (first == std::string::npos) return {0, 0};
  const size_t end = cu.find("store_fragment_d", first);
  int releases = 0, waits = 0;
  for (size_t at = cu.find(".arrive();", first); at != std::string::npos && at < end; at = cu.find(".arrive();", at + 1)) {
    ++releases;
    const size_t mma = cu.rfind("GMMA::SPARSE::", at), wait = cu.rfind("warpgroup_wait<0>();", at);
    EXPECT_TRUE(wait != std::string::npos && wait > mma)
        << what << ": a slot is released before the WGMMAs that read it are waited for";
  }
  for (size_t at = cu.find("warpgroup_wait<", first); at != std::string::npos && at < end;
       at = cu.find("warpgroup_wait<", at + 1)) {
    ++waits;
  }
  EXPECT_GT(releases, 0) << what;
  return {releases, waits};
}

// The 4096x8192x8192 gemm_sp problem of the sparse family's tests (B stored N x K).
FamilyProblem sparse_4096x8192x8192(const char* dtype) {
  FamilyProblem p;
  p.op = "gemm_sp";
  p.m = 4096;
  p.n = p.k = 8192;
  p.dtype = parse_dtype_pair_or_throw(dtype);
  p.b_col_major = true;
  p.arch = "sm_90a";
  return p;
}

// MMA_RUN 2 and 4: the run's slices are issued back to back (one sparse WGMMA statement per slice
// in the code), then one commit and one wait, then the run's slots are released.
TEST(CroqtileCompile, SparseRunsIssueTheirSlicesThenWaitOnceThenReleaseEverySlot) {
  REQUIRE_TOOLCHAIN(tc);
  TempDir work;
  CroqtileGemmSpFamily f;
  for (const char* dt : {"f16", "e4m3f16"}) {
    const FamilyProblem p = sparse_4096x8192x8192(dt);
    for (int run : {1, 2, 4}) {
      FamilyConfig c = f.default_config(p);
      c["MMA_RUN"] = std::to_string(run);
      const std::string what = config_to_json(c).dump() + " " + dt;
      ASSERT_FALSE(f.violation(c, p)) << what << ": " << *f.violation(c, p);
      std::string log;
      ChoreoScript s = phase1_of(tc, f, c, p, work.path(), fmt::format("run{}_{}.co", run, dt), log);
      ASSERT_NE(s.kernel(), nullptr) << what << ":\n" << log;
      const std::string& cu = s.kernel()->content;
      auto [releases, waits] = expect_waits_before_release(cu, what);
      EXPECT_EQ(releases, run) << what;
      EXPECT_EQ(waits, 1) << what;
      const size_t first = cu.find("GMMA::SPARSE::"), end = cu.find("store_fragment_d", first);
      int issues = 0;
      for (size_t at = first; at != std::string::npos && at < end; at = cu.find("GMMA::SPARSE::", at + 1)) ++issues;
      EXPECT_EQ(issues, run) << what;
    }
  }
}

TEST(CroqtileCompile, SparseFamilyConfigurationsGoThroughThePinnedChoreo) {
  REQUIRE_TOOLCHAIN(tc);
  TempDir work;
  CroqtileGemmSpFamily f;
  std::vector<std::pair<FamilyConfig, FamilyProblem>> todo;
  for (const char* dt : {"f16f32", "e4m3f16", "bf16", "e4m3bf16", "f16"}) {
    for (auto [m, n, k] : {std::tuple{4096, 8192, 8192}, std::tuple{768, 768, 768}}) {
      FamilyProblem p;
      p.op = "gemm_sp";
      p.m = m;
      p.n = n;
      p.k = k;
      p.dtype = parse_dtype_pair_or_throw(dt);
      p.b_col_major = true;
      p.arch = "sm_90a";
      todo.emplace_back(f.default_config(p), p);
      for (const auto& a : f.alternatives(p)) todo.emplace_back(a.config, p);
    }
  }
  // A sample of the legal space at 4096x8192x8192 of both sweep dtypes (seeded).
  std::mt19937 rng(11);
  for (const char* dt : {"f16f32", "e4m3f16"}) {
    FamilyProblem p = todo.front().second;
    p.dtype = parse_dtype_pair_or_throw(dt);
    for (const auto& c : sample_legal(f, p, rng, 8)) todo.emplace_back(c, p);
  }
  int n = 0;
  for (const auto& [c, prob] : todo) {
    const std::string what = config_to_json(c).dump() + " " + prob.dtype.canonical;
    std::string log;
    ChoreoScript s = phase1_of(tc, f, c, prob, work.path(), fmt::format("sp{}.co", n++), log);
    ASSERT_NE(s.kernel(), nullptr) << what << ":\n" << log;
    expect_waits_before_release(s.kernel()->content, what);
    expect_registers_fit_the_launch(c, s.kernel()->content);
  }
  EXPECT_GE(n, 30);
}

// `croq build` of the sparse family's default, as croq tune builds it, for both sweep dtypes: phase
// 1, phase 2 and the sparse ABI shared object (croq_gemm_prepare compresses A off the clock), pure.
TEST(CroqtileCompile, CroqBuildsTheSparseFamilyDefaultAsCroqTuneDoes) {
  REQUIRE_TOOLCHAIN(tc);
  if (!nvcc()) GTEST_SKIP() << "no CUDA toolkit";
  CroqtileGemmSpFamily f;
  for (auto [key, dt, a_type] : {std::tuple{"gemm_sp_f16fp32_4096x8192x8192", "f16f32", "f16"},
                                 std::tuple{"gemm_sp_e4m3fp16_4096x8192x8192", "e4m3f16", "f8_e4m3"}}) {
    SCOPED_TRACE(key);
    const FamilyProblem p = sparse_4096x8192x8192(dt);
    FamilyConfig c = f.default_config(p);
    ASSERT_FALSE(f.violation(c, p));
    CroqBuild b;
    b.task = {"--gpu", "sm90_NVIDIA_H200", "--dsl", "croqtile", "--shape-key", key, "--model", "family"};
    fs::path srcs = b.root / "tuning/sm90_NVIDIA_H200/croqtile/srcs" / key / "family";
    ensure_dir(srcs);
    atomic_write(srcs / "iter001_croqtile_gemm_sp_default.co", f.render_source(c, p), false);
    auto r = b.run({"build", "--iter", "1"});
    ASSERT_EQ(r.rc, 0) << r.out << r.err;
    EXPECT_EQ(r.doc["verdict"], "OK") << r.out;
    EXPECT_EQ(r.doc["abi"]["built"], true) << r.out;
    EXPECT_EQ(r.doc["abi"]["function"], "gemm_sp");
    EXPECT_EQ(r.doc["abi"]["a_type"], a_type);
    EXPECT_EQ(r.doc["abi"]["b_layout"], "col");
    expect_waits_before_release(read_file(srcs / "iter001_croqtile_gemm_sp_default.cu").value_or(""), key);
    expect_pure(b.root.path(), r.doc);
  }
}

}  // namespace
}  // namespace croq
