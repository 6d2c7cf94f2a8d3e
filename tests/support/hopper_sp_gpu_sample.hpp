// The hopper_gemm_sp configurations the GPU test verifies (tests/gpu/gemm_sp_family_gpu_test.cpp),
// built here so that a unit test can check on every CI run, without a GPU, that they are legal and
// cover what they promise: for each odd-shaped case, the family's default, random legal
// configurations drawn with a fixed seed, the deepest pipeline, the widest consumers (cooperative
// 256x192 and ping-pong 128x192 at the accumulator limit), every metadata mode, split-K of every tile and of the last wave only, a cluster
// along each dimension, one consumer, and the TMA-store epilogue; for e4m3, promotion (two-level
// accumulation) of the whole tile every block and every two blocks, and per sub-tile.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "croq/search/hopper_gemm_sp_family.hpp"
#include "croq/workspace/dtype.hpp"

namespace croq::test {

struct HopperSpGpuCase {
  int64_t m, n, k;
  std::string dtype;  // croq's dtype token
  const char* driver_dtype;  // bench/gpu/gemm_sp_driver's name for it
};

// Shapes that are not multiples of any tile (K a multiple of 8, as 2:4 metadata needs), in the
// dtypes the family targets.
inline std::vector<HopperSpGpuCase> hopper_sp_gpu_cases() {
  return {{1000, 3000, 2048, "f16", "f16"},
          {1000, 3000, 2048, "e4m3f16", "e4m3"},
          {777, 1000, 520, "f16f32", "f16f32"},
          {4096, 4100, 520, "e4m3f16", "e4m3"},
          {1000, 1000, 1000, "bf16", "bf16"}};
}

inline FamilyProblem hopper_sp_gpu_problem(const HopperSpGpuCase& c) {
  FamilyProblem p;
  p.op = "gemm_sp";
  p.m = c.m;
  p.n = c.n;
  p.k = c.k;
  p.dtype = parse_dtype_pair_or_throw(c.dtype);
  p.b_col_major = true;
  p.arch = "sm_90a";
  return p;
}

inline std::optional<FamilyConfig> random_legal_sp(const KernelFamily& f, const FamilyProblem& p, std::mt19937& rng) {
  for (int attempt = 0; attempt < 4000; ++attempt) {
    FamilyConfig c;
    for (const auto& spec : f.params()) {
      std::uniform_int_distribution<size_t> pick(0, spec.values.size() - 1);
      c[spec.name] = spec.values[pick(rng)];
    }
    if (!f.violation(c, p)) return c;
  }
  return std::nullopt;
}

// The configurations verified for one case; every one returned is legal (a covered kind that no
// stage count makes legal is left out, and the unit test reports it).
inline std::vector<FamilyConfig> hopper_sp_gpu_sample(const HopperGemmSpFamily& f, const FamilyProblem& p,
                                                      std::mt19937& rng, size_t case_index) {
  std::vector<FamilyConfig> sample = {f.default_config(p)};
  for (int i = 0; i < 3; ++i) {
    if (auto c = random_legal_sp(f, p, rng)) sample.push_back(*c);
  }
  const bool odd = case_index % 2 == 1;
  const bool out16 = p.dtype.output != ScalarType::f32;
  const std::string reg_epi = out16 ? "2" : "0";
  const std::vector<std::map<std::string, std::string>> covered = {
      // the deepest pipeline (a 128x64 tile)
      {{"BM", "128"}, {"BN", "64"}, {"STAGES", "8"}},
      // the widest consumers: cooperative 256x192 (every other case with a 2x1 cluster and metadata
      // from L2), ping-pong 128x192 with the TMA-store epilogue
      {{"BM", "256"}, {"BN", "192"}, {"CLUSTER_M", odd ? "2" : "1"}, {"META", odd ? "2" : "1"}, {"EPILOGUE", reg_epi}},
      // (at 192 accumulators only with hoisted metadata: META 0 and 2 leave room for 160), every
      // other case without a WGMMA group in flight at a release
      {{"BM", "128"}, {"BN", "192"}, {"PINGPONG", "1"}, {"EPILOGUE", "1"}, {"META", "1"}, {"MMA_DEPTH", odd ? "0" : "1"}},
      // the metadata read per WGMMA, with BK 128 where the tile allows
      {{"BM", "128"}, {"BN", "128"}, {"META", "0"}, {"BK", "128"}, {"SWIZZLE_A", "64"}, {"SWIZZLE_B", "128"}},
      // split-K with a cluster along N (compressed A multicast), metadata from L2
      {{"BM", "128"}, {"BN", "128"}, {"SPLIT_K", odd ? "3" : "2"}, {"CLUSTER_N", "2"}, {"META", "2"}},
      // split-K of the partly filled last wave only (SPLIT_TAIL): whole tiles first, then the tail's
      // slices reduced through the workspace (a 2x1 cluster every other case)
      {{"BM", "128"}, {"BN", odd ? "160" : "128"}, {"SPLIT_K", odd ? "5" : "3"}, {"SPLIT_TAIL", "1"},
       {"CLUSTER_M", odd ? "2" : "1"}},
      // one consumer, narrow swizzles, no persistence, all k blocks waited for
      {{"BM", "64"}, {"BN", "96"}, {"CONSUMERS", "1"}, {"PERSISTENT", "0"}, {"SWIZZLE_A", "32"}, {"SWIZZLE_B", "64"},
       {"MMA_DEPTH", "0"}, {"RASTER", odd ? "2" : "3"}, {"GROUP", "2"}},
      // e4m3 only (refused for 16-bit inputs, so left out there): promotion of the whole tile
      // (128x192: 96 + 96 accumulators) every k block with a WGMMA group in flight, in a 2x1 cluster
      // (the TMA-store epilogue every other case)
      {{"BM", "128"}, {"BN", "192"}, {"BK", "128"}, {"SWIZZLE_A", "64"}, {"PROMOTE", "1"}, {"CLUSTER_M", "2"},
       {"EPILOGUE", odd ? "1" : reg_epi}, {"META", "1"}, {"MMA_DEPTH", "1"}},
      // per sub-tile (128x256: 128 + 64), metadata from L2 every other case
      {{"BM", "128"}, {"BN", "256"}, {"BK", "128"}, {"SWIZZLE_A", "64"}, {"PROMOTE", "1"}, {"PROMOTE_SUB", "1"},
       {"MMA_DEPTH", "0"}, {"META", odd ? "2" : "1"}},
      // every two k blocks (BK 64: every 128 of K), split-K
      // (BK 64: e4m3 rows of 32 compressed and 64 B bytes, the swizzles that wide)
      {{"BM", "128"}, {"BN", "128"}, {"BK", "64"}, {"SWIZZLE_A", "32"}, {"SWIZZLE_B", "64"}, {"PROMOTE", "2"}, {"SPLIT_K", "2"}, {"META", "1"}}
  };
  for (const auto& changes : covered) {
    FamilyConfig c = f.default_config(p);
    c["PINGPONG"] = "0";
    c["CONSUMERS"] = "2";
    c["PERSISTENT"] = "1";
    c["SPLIT_K"] = "1";
    c["SPLIT_TAIL"] = "0";
    c["CLUSTER_M"] = "1";
    c["CLUSTER_N"] = "1";
    c["PROMOTE"] = "0";
    c["PROMOTE_SUB"] = "0";
    for (const auto& [k, v] : changes) c[k] = v;
    bool added = false;
    for (int stages = std::stoi(c["STAGES"]) > 6 ? std::stoi(c["STAGES"]) : 6; stages >= 2 && !added; --stages) {
      c["STAGES"] = std::to_string(stages);
      if (!f.violation(c, p)) {
        sample.push_back(c);
        added = true;
      }
    }
  }
  return sample;
}

}  // namespace croq::test
