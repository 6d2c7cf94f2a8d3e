// GPU test (label gpu): the hopper_gemm family's e4m3 configurations (k32 FP8 WGMMA, per-tensor
// scales applied in the epilogue, and the block-scaled operator's promotion per 128-deep k block,
// drained or overlapped with the next block's WGMMAs) — the default and the alternatives for each problem, plus split-K,
// stream-K, ping-pong, a cluster and the TMA-store epilogue — built with nvcc and verified by
// croq-gpu-runner (every element against the reference applying the scales in f32, two seeds,
// inputs over e4m3's range) on shapes that are not multiples of any tile, f16 and bf16 out, and a
// long K. Skips with a reason without a GPU (CI), or without nvcc.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <random>
#include <thread>

#include "croq/gpu/device_key.hpp"
#include <fmt/format.h>

#include "croq/measure/invoke.hpp"
#include "croq/measure/verdict.hpp"
#include "croq/search/hopper_gemm_family.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"
#include "croq/workspace/dtype.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

namespace fs = std::filesystem;

// The runner of this build, or of CROQ_TEST_BIN_DIR (a packed copy of the executables on a GPU
// machine, where the build folder's absolute path does not exist).
fs::path runner_path() {
  if (const char* d = std::getenv("CROQ_TEST_BIN_DIR"); d && *d) return fs::path(d) / "croq-gpu-runner";
  return fs::path(CROQ_BINARY_DIR) / "bin" / "croq-gpu-runner";
}

std::optional<fs::path> nvcc_path() {
  if (const char* e = std::getenv("CROQ_NVCC"); e && *e) return fs::path(e);
  if (fs::exists("/usr/local/cuda/bin/nvcc")) return fs::path("/usr/local/cuda/bin/nvcc");
  return find_executable("nvcc");
}

std::string skip_reason() {
  if (!CROQ_HAVE_CUDA_BUILD) return "croq was built without the CUDA toolkit";
  if (!fs::exists(runner_path())) return "croq-gpu-runner is not built";
  if (!nvcc_path()) return "nvcc not found (set CROQ_NVCC)";
  std::string error;
  auto gpus = query_gpus(&error);
  if (gpus.empty()) return "no GPU: " + error;
  if (gpus.front().compute_cap.rfind("9.", 0) != 0) return "the Hopper family needs compute capability 9.x";
  return "";
}

std::string describe(const FamilyConfig& c) {
  std::string s;
  for (const auto& [k, v] : c) s += k + "=" + v + " ";
  return s;
}

TEST(Fp8Gpu, E4m3ConfigurationsOfTheHopperFamilyAreCorrect) {
  if (auto why = skip_reason(); !why.empty()) GTEST_SKIP() << why;
  HopperGemmFamily f;
  struct Case {
    int64_t m, n, k;
    const char* dtype;
    const char* op;
  };
  const Case cases[] = {{1000, 1000, 1024, "e4m3bf16", "matmul"},     {4096, 4100, 512, "e4m3f16", "matmul"},
                        {256, 384, 8192, "e4m3bf16", "matmul"},       {1000, 1000, 1040, "e4m3bf16", "blockscaled"},
                        {512, 640, 4160, "e4m3bf16", "blockscaled"}};
  test::TempDir dir;
  struct Job {
    Case cs;
    FamilyConfig cfg;
    fs::path so;
    ProcessResult build;
  };
  std::vector<Job> jobs;
  for (const Case& cs : cases) {
    FamilyProblem p;
    p.m = cs.m;
    p.n = cs.n;
    p.k = cs.k;
    p.dtype = parse_dtype_pair_or_throw(cs.dtype);
    p.arch = "sm_90a";
    p.op = cs.op;
    std::vector<FamilyConfig> sample = {f.default_config(p)};
    for (const auto& a : f.alternatives(p)) {
      if (sample.size() < 2) sample.push_back(a.config);
    }
    // The structures the alternatives may not reach on this shape.
    FamilyConfig base = f.default_config(p);
    auto variant = [&](std::initializer_list<std::pair<const char*, const char*>> changes) {
      FamilyConfig c = base;
      for (const auto& [k, v] : changes) c[k] = v;
      if (!f.violation(c, p)) sample.push_back(c);
    };
    variant({{"SPLIT_K", "2"}, {"STREAM_K", "0"}, {"PERSISTENT", "1"}});
    variant({{"STREAM_K", "1"}, {"SPLIT_K", "1"}, {"PINGPONG", "0"}, {"PERSISTENT", "1"}});
    variant({{"BM", "128"}, {"BN", "128"}, {"CONSUMERS", "2"}, {"PINGPONG", "1"}, {"SPLIT_K", "1"}, {"STREAM_K", "0"},
             {"STAGES", "4"}});
    variant({{"CLUSTER_M", "2"}, {"EPILOGUE", "1"}});
    // Long K: promotion every block (the default before 4), every 2, 4, 8 or 16 k blocks, with one WGMMA group in flight between promotions or
    // without; k slices whose length is not a multiple of the interval (split-K 3: 21 and 22 blocks)
    // promote after their last block; ping-pong consumers promote per unit.
    variant({{"PROMOTE_EVERY", "1"}, {"MMA_DEPTH", "0"}});
    variant({{"PROMOTE_EVERY", "2"}, {"MMA_DEPTH", "1"}});
    variant({{"PROMOTE_EVERY", "4"}, {"MMA_DEPTH", "0"}});
    variant({{"PROMOTE_EVERY", "4"}, {"MMA_DEPTH", "1"}, {"SPLIT_K", "3"}, {"STREAM_K", "0"}, {"PERSISTENT", "1"}});
    variant({{"PROMOTE_EVERY", "4"}, {"MMA_DEPTH", "1"}, {"BM", "128"}, {"BN", "64"}, {"CONSUMERS", "2"},
             {"PINGPONG", "1"}, {"SPLIT_K", "1"}, {"STREAM_K", "0"}});
    // Every 16 (the default since 2026-12-03) and every 8, also with k slices of 21 and 22 blocks.
    variant({{"PROMOTE_EVERY", "16"}, {"MMA_DEPTH", "1"}, {"SPLIT_K", "3"}, {"STREAM_K", "0"}, {"PERSISTENT", "1"}});
    variant({{"PROMOTE_EVERY", "8"}, {"MMA_DEPTH", "1"}, {"BN", "192"}, {"SPLIT_K", "1"}, {"STREAM_K", "0"}});
    // Block-scaled: each k block promoted while the next block's WGMMAs run (two sets of WGMMA sums,
    // the unit's last block even or odd), also with a cluster and the TMA-store epilogue; ping-pong
    // consumers drained (overlapped ones spill, so the family refuses them).
    variant({{"MMA_DEPTH", "0"}, {"BM", "128"}, {"BN", "64"}, {"CONSUMERS", "2"}, {"PINGPONG", "1"}, {"SPLIT_K", "1"},
             {"STREAM_K", "0"}});
    variant({{"MMA_DEPTH", "1"}, {"CLUSTER_M", "2"}, {"EPILOGUE", "1"}, {"SPLIT_K", "1"}, {"STREAM_K", "0"}});
    // ... and one slice per tile (the defaults of these small shapes split K and drain), overlapped
    // and drained.
    variant({{"MMA_DEPTH", "1"}, {"SPLIT_K", "1"}, {"STREAM_K", "0"}});
    variant({{"MMA_DEPTH", "0"}, {"SPLIT_K", "1"}, {"STREAM_K", "0"}});
    // The scales read by each consumer from global memory (SCALE_STAGE 0, the block-scaled default
    // until 2026-12-05), overlapped and drained.
    variant({{"SCALE_STAGE", "0"}, {"MMA_DEPTH", "1"}, {"SPLIT_K", "1"}, {"STREAM_K", "0"}, {"STAGES", "4"}});
    variant({{"SCALE_STAGE", "0"}, {"MMA_DEPTH", "0"}, {"STAGES", "4"}});
    // The scales staged in shared memory with each stage (SCALE_STAGE 1, the block-scaled default):
    // overlapped and drained, with split-K slices, stream-K shares and ping-pong consumers (rows of a
    // slot read from 0).
    variant({{"SCALE_STAGE", "1"}, {"MMA_DEPTH", "1"}, {"SPLIT_K", "1"}, {"STREAM_K", "0"}, {"STAGES", "4"}});
    variant({{"SCALE_STAGE", "1"}, {"MMA_DEPTH", "0"}, {"STAGES", "4"}});
    variant({{"SCALE_STAGE", "1"}, {"MMA_DEPTH", "0"}, {"STREAM_K", "1"}, {"SPLIT_K", "1"}, {"PINGPONG", "0"},
             {"PERSISTENT", "1"}, {"STAGES", "4"}});
    variant({{"SCALE_STAGE", "1"}, {"MMA_DEPTH", "0"}, {"BM", "128"}, {"BN", "64"}, {"CONSUMERS", "2"},
             {"PINGPONG", "1"}, {"SPLIT_K", "1"}, {"STREAM_K", "0"}, {"STAGES", "4"}});
    // The waves of 256x128 tiles (the default of large block-scaled shapes), with and without stream-K
    // (its one loop, the reduce last): on these shapes every tile is in the stream-K region.
    for (const char* stream_k : {"0", "1"})
      variant({{"BM", "256"}, {"BN", "128"}, {"CONSUMERS", "2"}, {"PINGPONG", "0"}, {"MMA_DEPTH", "0"},
               {"SCALE_STAGE", "1"}, {"STAGES", "3"}, {"EPILOGUE", "1"}, {"SPLIT_K", "1"}, {"STREAM_K", stream_k},
               {"PERSISTENT", "1"}});
    for (const auto& cfg : sample) {
      ASSERT_FALSE(f.violation(cfg, p)) << describe(cfg);
      jobs.push_back({cs, cfg, dir / fmt::format("c{}.so", jobs.size()), {}});
    }
  }
  std::atomic<size_t> next{0};
  auto compile = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      Job& j = jobs[i];
      FamilyProblem p;
      p.m = j.cs.m;
      p.n = j.cs.n;
      p.k = j.cs.k;
      p.dtype = parse_dtype_pair_or_throw(j.cs.dtype);
      p.arch = "sm_90a";
      p.op = j.cs.op;
      const fs::path src = fs::path(j.so).replace_extension(".cu");
      atomic_write(src, f.render_source(j.cfg, p), false);
      ProcessSpec build;
      build.argv = {nvcc_path()->string(), "-O3", "-std=c++17"};
      for (const auto& flag : f.build_flags(j.cfg, p)) build.argv.push_back(flag);
      build.argv.insert(build.argv.end(), {"-I" + find_project_dir("include").string(), "-shared", "-Xcompiler", "-fPIC",
                                           "-cudart", "shared", "-o", j.so.string(), src.string()});
      build.timeout = std::chrono::minutes(15);
      j.build = process_runner().run(build);
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(1u, std::min(16u, std::thread::hardware_concurrency())); ++t) threads.emplace_back(compile);
  for (auto& t : threads) t.join();
  for (const auto& j : jobs) {
    SCOPED_TRACE(fmt::format("{} {}x{}x{} {}: {}", j.cs.op, j.cs.m, j.cs.n, j.cs.k, j.cs.dtype, describe(j.cfg)));
    ASSERT_TRUE(j.build.ok()) << j.build.err.substr(0, 4000);
    MeasureJob job;
    job.program = runner_path();
    job.options.candidate = j.so.string();
    job.options.m = j.cs.m;
    job.options.n = j.cs.n;
    job.options.k = j.cs.k;
    job.options.dtype = j.cs.dtype;
    job.options.op = j.cs.op;
    job.skeleton.problem.op = j.cs.op;
    job.options.b_layout = "col";
    job.options.seed = 7;
    job.options.mode = RunMode::verify;
    job.timeout = std::chrono::seconds(30);
    Measurement m = run_measure_job(job, process_runner());
    EXPECT_EQ(verdict_name(m.verdict), std::string("PASS")) << m.reason << ": " << m.detail;
    EXPECT_EQ(m.candidate_abi_version, 2);
  }
  EXPECT_GE(jobs.size(), 10u);
}

}  // namespace
}  // namespace croq
