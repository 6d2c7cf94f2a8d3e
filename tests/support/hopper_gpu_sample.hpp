// The Hopper GEMM configurations the GPU test verifies (tests/gpu/gemm_family_gpu_test.cpp), built
// here so that a unit test can check on every CI run, without a GPU, that they are legal and cover
// what they promise: for each odd-shaped case, the family's default, random legal configurations
// drawn with a fixed seed, the deepest pipeline, the widest consumers, and stream-K.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "croq/search/hopper_gemm_family.hpp"
#include "croq/workspace/dtype.hpp"

namespace croq::test {

struct HopperGpuCase {
  int64_t m, n, k;
  std::string dtype;
  bool col;
};

// Shapes that are not multiples of any tile, in the four dtypes and both B layouts.
inline std::vector<HopperGpuCase> hopper_gpu_cases() {
  return {{1000, 1000, 1000, "f16f32", false},
          {4096, 4100, 520, "bf16f32", true},
          {1000, 1000, 1000, "f16", true},
          {4096, 4100, 520, "bf16", false}};
}

inline FamilyProblem hopper_gpu_problem(const HopperGpuCase& c) {
  FamilyProblem p;
  p.m = c.m;
  p.n = c.n;
  p.k = c.k;
  p.dtype = parse_dtype_pair_or_throw(c.dtype);
  p.b_col_major = c.col;
  p.arch = "sm_90a";
  return p;
}

// A legal configuration drawn at random from the family's parameter space (nullopt after many tries).
inline std::optional<FamilyConfig> random_legal(const KernelFamily& f, const FamilyProblem& p, std::mt19937& rng) {
  for (int attempt = 0; attempt < 2000; ++attempt) {
    FamilyConfig c;
    for (const auto& spec : f.params()) {
      std::uniform_int_distribution<size_t> pick(0, spec.values.size() - 1);
      c[spec.name] = spec.values[pick(rng)];
    }
    if (!f.violation(c, p)) return c;
  }
  return std::nullopt;
}

// The configurations verified for one case. Every one returned is legal; a covered kind that no
// stage count makes legal is left out, and the unit test reports it.
inline std::vector<FamilyConfig> hopper_gpu_sample(const HopperGemmFamily& f, const FamilyProblem& p,
                                                   std::mt19937& rng, size_t case_index) {
  std::vector<FamilyConfig> sample = {f.default_config(p)};
  for (int i = 0; i < 4; ++i) {
    if (auto c = random_legal(f, p, rng)) sample.push_back(*c);
  }
  // The deepest pipelines the family allows (7 and 8 stages fit 128x64 tiles).
  for (const char* stages : {"8", "7"}) {
    FamilyConfig deep = f.default_config(p);
    deep["BN"] = "64";
    deep["STAGES"] = stages;
    if (!f.violation(deep, p)) {
      sample.push_back(deep);
      break;
    }
  }
  // The widest consumers: three of 64 x 192 rows (a 192-row tile, 96 accumulators each; every
  // other case with split-K and a 2x1 cluster, 64 accumulators), two of 128 x 192 (192), and the
  // ping-pong kernel with a whole 128 x 192 tile per consumer (192).
  const bool odd = case_index % 2 == 1;
  const std::vector<std::map<std::string, std::string>> wide = {
      {{"BM", "192"}, {"BN", odd ? "128" : "192"}, {"CONSUMERS", "3"}, {"SPLIT_K", odd ? "2" : "1"},
       {"CLUSTER_M", odd ? "2" : "1"}},
      {{"BM", "256"}, {"BN", "192"}, {"CONSUMERS", "2"}, {"SPLIT_K", "1"}},
      {{"BM", "128"}, {"BN", "192"}, {"CONSUMERS", "2"}, {"SPLIT_K", "1"}, {"PINGPONG", "1"}, {"EPILOGUE", "1"}}};
  // Stream-K on the default tile, and on three consumers (every other case with a 2x1 cluster).
  const std::vector<std::map<std::string, std::string>> streamed = {
      {{"STREAM_K", "1"}, {"SPLIT_K", "1"}},
      {{"STREAM_K", "1"}, {"SPLIT_K", "1"}, {"BM", "192"}, {"BN", "128"}, {"CONSUMERS", "3"},
       {"CLUSTER_M", odd ? "2" : "1"}}};
  std::vector<std::map<std::string, std::string>> covered = wide;
  covered.insert(covered.end(), streamed.begin(), streamed.end());
  for (const auto& changes : covered) {
    FamilyConfig c = f.default_config(p);
    c["PINGPONG"] = "0";
    c["PERSISTENT"] = "1";
    c["STREAM_K"] = "0";
    for (const auto& [k, v] : changes) c[k] = v;
    for (int stages = 6; stages >= 2; --stages) {
      c["STAGES"] = std::to_string(stages);
      if (!f.violation(c, p)) {
        sample.push_back(c);
        break;
      }
    }
  }
  return sample;
}

}  // namespace croq::test
