// Where croq's own files are at run time: the folder of the running executable (the runners
// croq-gpu-runner and croq-cpu-runner sit beside `croq`), and the project's data folders
// (include/, kernels/, src/python/) found relative to it, so that a build folder copied to
// another machine still finds them. CROQ_HOME overrides the search.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

namespace croq {

std::filesystem::path self_exe_dir();
// A helper executable next to croq (build/bin/<name>); nullopt if it is not there.
std::optional<std::filesystem::path> find_tool(const std::string& name);
// A project folder such as "include", "kernels" or "src/python": looked up in CROQ_HOME, then
// above the executable (build/bin/../.. is the source tree), then the source folder croq was
// built from. Throws Error(not_found) naming the places searched.
std::filesystem::path find_project_dir(const std::string& relative);

}  // namespace croq
