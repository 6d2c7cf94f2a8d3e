// Source lookup in srcs/ (sources.hpp).
#include "croq/workspace/sources.hpp"

#include <algorithm>
#include <cctype>

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

std::optional<int> max_iteration_number_in_name(std::string_view name, const std::set<int>& released) {
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  std::optional<int> best;
  for (size_t at = name.find("iter"); at != std::string_view::npos; at = name.find("iter", at + 1)) {
    if (at > 0 && alnum(name[at - 1])) continue;
    size_t d = at + 4, e = d;
    while (e < name.size() && digit(name[e]) && e - d < 7) ++e;
    const size_t n = e - d;
    if (n < 3 || n > 6) continue;
    const int v = std::stoi(std::string(name.substr(d, n)));
    if (released.count(v)) continue;
    if (!best || v > *best) best = v;
  }
  return best;
}

std::optional<int> max_iteration_number_on_disk(const Workspace& ws, const TaskRef& task,
                                                const std::set<int>& released) {
  std::optional<int> best;
  std::error_code ec;
  for (ArtifactKind kind : {ArtifactKind::srcs, ArtifactKind::bin, ArtifactKind::cmd, ArtifactKind::perf}) {
    fs::path dir = ws.kind_dir(task, kind);
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      auto v = max_iteration_number_in_name(e.path().filename().string(), released);
      if (v && (!best || *v > *best)) best = v;
    }
  }
  return best;
}

}  // namespace croq
