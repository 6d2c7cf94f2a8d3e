// Finding a starting kernel (the seeds' discover_baseline), in three tiers:
//   A  croq's bundled kernels, kernels/<dsl>/<operator>/ (files whose name contains _aitune_ are
//      prior tuning outputs and never offered); each may carry a line
//        // croq-kernel: {"dtypes": ["f16f32", ...], "rank": 30, "tensor_cores": true, "summary": "..."}
//      (# for Python) that discovery reads to filter by dtype and order the offer;
//   B  earlier tasks of the same operator in the workspace (other shape keys, models or GPUs):
//      each task's best KEEP according to its ledger (the record with the highest TFLOPS), not its
//      highest-numbered file;
//   C  nothing usable: a from-scratch recommendation (tensor-core instructions at least) with the
//      references to read.
// The recommendation prefers a tier-B kernel measured on the same GPU, then the best-ranked
// tier-A kernel, then tier B from other GPUs, then tier C.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "croq/build/toolchain.hpp"
#include "croq/util/json.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq {

struct DiscoverRequest {
  std::string dsl;
  std::string op;                 // "matmul"
  std::string dtype;              // canonical ("f16f32") or empty for any
  std::string gpu;                // the device key the kernel is for (may be empty)
  std::optional<TaskRef> exclude; // the task being prepared
};

struct StartingKernel {
  int index = 0;                  // 1-based, the number `croq prepare --pick` takes
  std::string tier;               // "A" or "B"
  std::string name;               // file stem (A) or kernel (B)
  std::filesystem::path path;     // the primary source
  std::vector<std::filesystem::path> companions;  // e.g. the .cu of a croqtile .co
  json meta = json::object();     // croq-kernel metadata (A) or {task, tflops, ...} (B)
  int rank = 0;
  std::optional<double> tflops;   // B
  bool same_gpu = false;          // B
};

struct Discovery {
  std::vector<StartingKernel> candidates;
  std::optional<size_t> recommended;  // index into candidates
  json tier_c;                        // the scratch recommendation (always filled)
  json to_json(const Workspace* ws) const;
};

// `ws` may be null (no workspace: tier A and C only).
Discovery discover_starting_kernels(const Workspace* ws, const DiscoverRequest& request, const EnvLookup& env = system_env());

// The croq-kernel metadata line of a source, if any.
std::optional<json> read_kernel_metadata(const std::string& text);

// A tag derived from a file stem: "iter012_stages4" -> "stages4", "wmma_tc" -> "wmma_tc".
std::string tag_from_stem(const std::string& stem);

}  // namespace croq
