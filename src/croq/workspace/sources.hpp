// Finding a kernel's source files in srcs/<key>/<model>/ by its id.
#pragma once
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
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

// The highest iteration number in the names of the task's files in srcs/, bin/, cmd/ and perf/
// (iter030_bn64.cu, build_iter031.txt, ncu_iter029_x_round3.csv, ...): `iter` followed by 3 to 6
// digits, at the start of the name or after a character that is not a letter or digit. nullopt
// when there is none. A folder written by other tools can hold numbers its ledger never recorded;
// a new iteration must exceed them all (never reuse a number).
// Numbers in `released` are passed over (iterations croq itself gave back: a failure stored as an
// attempt frees the number it was planned as, and its files may still carry it).
std::optional<int> max_iteration_number_on_disk(const Workspace& ws, const TaskRef& task,
                                                const std::set<int>& released = {});
// The same scan over one file name.
std::optional<int> max_iteration_number_in_name(std::string_view name, const std::set<int>& released = {});

}  // namespace croq
