// Finding a kernel's source files in srcs/<key>/<model>/ by its id.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "croq/workspace/workspace.hpp"

namespace croq {

// Source extensions of a dsl, in order of preference (croqtile: .co before its extracted .cu).
const std::vector<std::string>& source_extensions(const std::string& dsl);

// Files in srcs/ whose name starts with "<id>_" (id: "iter012" or "attempt" + letters) or equals
// "<kernel>.<ext>" (kernel: "iter012_tag"), preferred extension first.
std::vector<fs::path> find_sources(const Workspace& ws, const TaskRef& task, const std::string& id_or_kernel);
std::optional<fs::path> find_primary_source(const Workspace& ws, const TaskRef& task, const std::string& id_or_kernel);

// Number of iteration source files (iter<NNN>_<tag>.<ext>) in srcs/ (the seeds' src_count).
int count_iteration_sources(const Workspace& ws, const TaskRef& task);

}  // namespace croq
