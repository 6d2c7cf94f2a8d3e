// What `croq export` takes from each task (export.hpp): the best KEEP, the source it was built
// from, the flags it was built with, and the problem it was tuned for.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <croq/kernel_abi.h>

#include "croq/ledger/records.hpp"
#include "croq/util/json.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq {

struct ExportKernel {
  TaskRef task;
  std::string task_uid;           // from task_config.json, empty when absent
  RoundRecord record;             // the best KEEP
  std::filesystem::path source;   // the kernel's source file
  std::string language;           // "cuda" (nvcc) or "cpp" (the C++ compiler)
  std::vector<std::string> flags; // compile flags as built (without output, inputs, -shared, croq's -I)
  std::string flags_origin;       // the build record they came from, or "defaults"
  std::string arch;               // cuda: "sm_90a"
  // The problem it was tuned for (the ABI's enums).
  int64_t m = 0, n = 0, k = 0;
  croq_dtype a_type = CROQ_F32, c_type = CROQ_F32, compute_type = CROQ_F32;
  croq_layout b_layout = CROQ_ROW_MAJOR;
  std::string dtype;              // canonical: "f16f32"
  std::string op_name = "matmul";  // canonical operator (workspace/operators.hpp): matmul, gemm_sp
  croq_operator op = CROQ_OP_MATMUL;

  json to_json() const;
};

// The best KEEP of `task` ready to export: the fastest KEEP croq measured itself, or, when the task
// has none, the fastest reported one (typed --tflops, results.tsv); the manifest's source_kind says which. Throws Error: usage (no KEEP, a DSL that cannot be
// exported, an operator other than matmul), not_found (the source is missing).
ExportKernel plan_export_kernel(const Workspace& ws, const TaskRef& task);

// The flags of a build record, made fit for compiling an object: output, inputs, -shared/--shared,
// -Xptxas -v and include folders holding croq/kernel_abi.h are left out (the export's own copy of
// the header is used).
std::vector<std::string> object_flags_from_build(const std::vector<std::string>& recorded);

}  // namespace croq
