// `croq export`: the tuned kernels of one or many tasks as one self-contained library for users.
//
// For every task, the best KEEP (the highest measured KEEP of iteration >= 1, the kernel resume
// reports as current_best_kernel) is taken with its source and the flags it was built with. The
// export folder holds:
//
//   include/<name>.h, include/croq/kernel_abi.h   the C header: <name>_matmul(problem, ...) and friends
//   lib/lib<name>.so, lib/lib<name>.a              one entry that dispatches by shape (dispatch.hpp)
//   lib/cmake/<name>/<name>Config.cmake            find_package(<name>) -> <name>::<name>, <name>::<name>_static
//   src/                                           every source the libraries are built from, the
//                                                  generated dispatcher, build.sh (the exact commands)
//   torch/                                         a PyTorch extension (torch.ops.<name>.matmul) built
//                                                  from the same sources (setup.py; needs torch)
//   manifest.json                                  croq-export-v1: which task, round and kernel each
//                                                  entry came from, its source's sha256, its flags
//
// How kernels are combined: each kernel is compiled to an object with croq's composable flags
// (-fvisibility=hidden -fno-gnu-unique), then every symbol it defines with external linkage is
// renamed with a per-kernel prefix (objcopy --redefine-syms), its ABI entry points included. So two
// kernels of one template with different configurations never share a function, a template
// instance or a function-local static (the linker would otherwise keep one copy of each), whatever
// their sources look like; the libraries export only <name>_* entries.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "croq/util/json.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq {

inline constexpr const char* k_export_schema = "croq-export-v1";

struct ExportRequest {
  std::vector<TaskRef> tasks;
  std::filesystem::path out;
  std::string name = "croq";  // [a-z][a-z0-9_]*: the library, header, entry prefix and torch namespace
  bool shared = true;
  bool static_lib = true;
  bool build = true;   // false: write the sources, header, CMake files and build.sh only
  bool force = false;  // replace a non-empty --out folder that is not an earlier export
  int jobs = 0;        // compiles at once (0: one per CPU)
};

// Validates the name ("croq", "mylib_gemm"); throws usage.
void validate_export_name(const std::string& name);

// Writes the export; returns the manifest with what was built (`files`, `build`). Throws croq::Error:
// usage (a task without a KEEP, a DSL that cannot be exported, a bad name or folder), not_found
// (a kernel's source is missing), failed (a compile or link failed: the log is in the message).
json export_library(const Workspace& ws, const ExportRequest& request);

}  // namespace croq
