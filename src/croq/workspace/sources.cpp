// Source lookup in srcs/ (sources.hpp).
#include "croq/workspace/sources.hpp"

#include <algorithm>

#include "croq/workspace/ids.hpp"

namespace croq {

const std::vector<std::string>& source_extensions(const std::string& dsl) {
  static const std::vector<std::string> cuda = {".cu", ".cuh"};
  static const std::vector<std::string> croqtile = {".co", ".cu"};
  static const std::vector<std::string> triton = {".py"};
  static const std::vector<std::string> cpp = {".cpp", ".cc", ".cxx"};
  static const std::vector<std::string> any = {".cu", ".co", ".py", ".cpp", ".cc"};
  if (dsl == "cuda") return cuda;
  if (dsl == "croqtile") return croqtile;
  if (dsl == "triton") return triton;
  if (dsl == "cpp") return cpp;
  return any;
}

std::vector<fs::path> find_sources(const Workspace& ws, const TaskRef& task, const std::string& id_or_kernel) {
  std::vector<fs::path> out;
  std::error_code ec;
  fs::path dir = ws.kind_dir(task, ArtifactKind::srcs);
  if (!fs::is_directory(dir, ec)) return out;
  const auto& exts = source_extensions(task.dsl);
  bool is_kernel = try_parse_iter_id(id_or_kernel) || try_parse_attempt_id(id_or_kernel);
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    const std::string ext = e.path().extension().string();
    if (std::find(exts.begin(), exts.end(), ext) == exts.end()) continue;
    const std::string stem = e.path().stem().string();
    if (is_kernel ? stem == id_or_kernel : name.rfind(id_or_kernel + "_", 0) == 0) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end(), [&](const fs::path& a, const fs::path& b) {
    auto ra = std::find(exts.begin(), exts.end(), a.extension().string()) - exts.begin();
    auto rb = std::find(exts.begin(), exts.end(), b.extension().string()) - exts.begin();
    if (ra != rb) return ra < rb;
    return a.filename() < b.filename();
  });
  return out;
}

std::optional<fs::path> find_primary_source(const Workspace& ws, const TaskRef& task, const std::string& id_or_kernel) {
  auto all = find_sources(ws, task, id_or_kernel);
  if (all.empty()) return std::nullopt;
  return all.front();
}

int count_iteration_sources(const Workspace& ws, const TaskRef& task) {
  int n = 0;
  std::error_code ec;
  fs::path dir = ws.kind_dir(task, ArtifactKind::srcs);
  if (!fs::is_directory(dir, ec)) return 0;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && try_parse_iter_id(e.path().stem().string())) ++n;
  }
  return n;
}

}  // namespace croq
