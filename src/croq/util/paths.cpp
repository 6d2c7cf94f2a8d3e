// Locating croq's own executables and data folders (paths.hpp).
#include "croq/util/paths.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fmt/format.h>

#include "croq/util/build_info.hpp"
#include "croq/util/error.hpp"

namespace croq {

namespace fs = std::filesystem;

fs::path self_exe_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return fs::current_path();
  return exe.parent_path();
}

std::optional<fs::path> find_tool(const std::string& name) {
  std::error_code ec;
  fs::path p = self_exe_dir() / name;
  if (fs::exists(p, ec) && ::access(p.c_str(), X_OK) == 0) return p;
  p = fs::path(build_info::k_binary_dir) / "bin" / name;
  if (fs::exists(p, ec) && ::access(p.c_str(), X_OK) == 0) return p;
  return std::nullopt;
}

fs::path find_project_dir(const std::string& relative) {
  std::error_code ec;
  std::vector<fs::path> tried;
  if (const char* home = std::getenv("CROQ_HOME"); home && *home) tried.push_back(fs::path(home) / relative);
  fs::path exe = self_exe_dir();
  tried.push_back(exe.parent_path().parent_path() / relative);  // build/bin -> repo
  tried.push_back(exe.parent_path() / relative);
  tried.push_back(fs::path(build_info::k_source_dir) / relative);
  for (const auto& p : tried) {
    if (fs::is_directory(p, ec)) return fs::weakly_canonical(p, ec);
  }
  std::string where;
  for (const auto& p : tried) where += (where.empty() ? "" : ", ") + p.string();
  throw Error(ExitCode::not_found, fmt::format("croq's {} folder was not found (looked in {})", relative, where),
              "set CROQ_HOME to the croq source tree");
}

}  // namespace croq
