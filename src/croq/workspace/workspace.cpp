// Root resolution and the artifact tree's paths (workspace.hpp).
#include "croq/workspace/workspace.hpp"

#include <cstdlib>
#include <fmt/format.h>
#include <algorithm>

#include "croq/util/error.hpp"

namespace croq {

const char* artifact_kind_name(ArtifactKind kind) {
  switch (kind) {
    case ArtifactKind::srcs: return "srcs";
    case ArtifactKind::bin: return "bin";
    case ArtifactKind::cmd: return "cmd";
    case ArtifactKind::perf: return "perf";
    case ArtifactKind::logs: return "logs";
    case ArtifactKind::checkpoints: return "checkpoints";
    case ArtifactKind::baseline: return "baseline";
    case ArtifactKind::memory: return "memory";
  }
  return "?";
}

const std::vector<ArtifactKind>& all_artifact_kinds() {
  static const std::vector<ArtifactKind> kinds = {
      ArtifactKind::srcs, ArtifactKind::bin, ArtifactKind::cmd, ArtifactKind::perf,
      ArtifactKind::logs, ArtifactKind::checkpoints, ArtifactKind::baseline, ArtifactKind::memory};
  return kinds;
}

RootChoice resolve_root(const std::string& flag, const fs::path& start) {
  auto check = [](const fs::path& p, const std::string& origin) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      throw_usage(fmt::format("workspace root {} (from {}) is not a folder", p.string(), origin),
                  "create it first, or point --root / CROQ_ROOT at an existing folder");
    }
    return RootChoice{fs::weakly_canonical(fs::absolute(p)), origin};
  };
  if (!flag.empty()) return check(flag, "--root");
  if (const char* env = std::getenv("CROQ_ROOT"); env && *env) return check(env, "CROQ_ROOT");
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(fs::absolute(start), ec);
  if (ec) dir = fs::absolute(start);
  for (fs::path d = dir;; d = d.parent_path()) {
    if (fs::is_directory(d / "tuning", ec)) return {d, "tuning/ found at " + d.string()};
    if (d == d.root_path() || d.empty()) break;
  }
  for (fs::path d = dir;; d = d.parent_path()) {
    if (fs::exists(d / ".git", ec)) return {d, "git root " + d.string()};
    if (d == d.root_path() || d.empty()) break;
  }
  throw_usage("no workspace root: no tuning/ folder or git repository above " + dir.string(),
              "pass --root DIR, set CROQ_ROOT, or run `croq init` in the folder that should hold "
              "tuning/");
}

std::string TaskRef::id() const { return gpu + "/" + dsl + "/" + shape.text + "/" + model; }

TaskRef make_task(const std::string& gpu, const std::string& dsl, const std::string& shape_key,
                  const std::string& model) {
  validate_gpu_key(gpu);
  validate_dsl(dsl);
  validate_model(model);
  TaskRef t;
  t.gpu = gpu;
  t.dsl = dsl;
  t.shape = parse_shape_key(shape_key);
  t.model = model;
  return t;
}

Workspace::Workspace(fs::path root) : m_root(std::move(root)) {}

fs::path Workspace::dsl_dir(const std::string& gpu, const std::string& dsl) const {
  return tuning_dir() / gpu / dsl;
}

fs::path Workspace::kind_dir(const TaskRef& task, ArtifactKind kind) const {
  return dsl_dir(task.gpu, task.dsl) / artifact_kind_name(kind) / task.shape.text / task.model;
}

fs::path Workspace::baseline_result(const TaskRef& t) const {
  const char* lib = t.dsl == "cpp" ? "openblas_result.json" : "cublas_result.json";
  return kind_dir(t, ArtifactKind::baseline) / lib;
}

std::vector<TaskRef> Workspace::list_tasks(const std::string& gpu, const std::string& dsl) const {
  std::vector<TaskRef> out;
  std::error_code ec;
  if (!fs::is_directory(tuning_dir(), ec)) return out;
  for (const auto& g : fs::directory_iterator(tuning_dir(), ec)) {
    if (!g.is_directory()) continue;
    const std::string gname = g.path().filename().string();
    if (!gpu.empty() && gname != gpu) continue;
    for (const auto& d : fs::directory_iterator(g.path(), ec)) {
      if (!d.is_directory()) continue;
      const std::string dname = d.path().filename().string();
      if (!dsl.empty() && dname != dsl) continue;
      fs::path logs = d.path() / "logs";
      if (!fs::is_directory(logs, ec)) continue;
      for (const auto& k : fs::directory_iterator(logs, ec)) {
        if (!k.is_directory()) continue;
        for (const auto& m : fs::directory_iterator(k.path(), ec)) {
          if (!m.is_directory()) continue;
          try {
            out.push_back(make_task(gname, dname, k.path().filename().string(),
                                    m.path().filename().string()));
          } catch (const Error&) {
            // Folders that are not valid task names are not tasks.
          }
        }
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const TaskRef& a, const TaskRef& b) { return a.id() < b.id(); });
  return out;
}

std::vector<std::string> Workspace::existing_shape_keys(const std::string& gpu,
                                                        const std::string& dsl) const {
  std::vector<std::string> keys;
  std::error_code ec;
  fs::path srcs = dsl_dir(gpu, dsl) / "srcs";
  if (!fs::is_directory(srcs, ec)) return keys;
  for (const auto& k : fs::directory_iterator(srcs, ec)) {
    if (k.is_directory()) keys.push_back(k.path().filename().string());
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

bool Workspace::contains(const fs::path& path) const {
  std::error_code ec;
  fs::path root = fs::weakly_canonical(m_root, ec);
  fs::path p = fs::weakly_canonical(fs::absolute(path), ec);
  if (ec) return false;
  auto r = root.begin();
  auto q = p.begin();
  for (; r != root.end(); ++r, ++q) {
    if (q == p.end() || *r != *q) return false;
  }
  return true;
}

std::string Workspace::user_output_refusal(const fs::path& path, const TaskRef* task) const {
  std::error_code ec;
  const fs::path tuning = fs::weakly_canonical(tuning_dir(), ec);
  const fs::path p = fs::weakly_canonical(fs::absolute(path), ec);
  if (ec) return {};
  const fs::path rel = p.lexically_relative(tuning);
  if (rel.empty() || *rel.begin() == "..") return {};  // outside tuning/
  std::vector<std::string> parts;
  for (const auto& c : rel) parts.push_back(c.string());
  if (task != nullptr) {
    const fs::path own = fs::weakly_canonical(kind_dir(*task, ArtifactKind::perf), ec);
    const fs::path in_own = p.lexically_relative(own);
    if (!ec && !in_own.empty() && *in_own.begin() != ".." && in_own != ".") return {};
    return fmt::format("{} lies in the workspace's tuning/ tree outside this task's perf/ folder ({}): another "
                       "task's evidence, the ledger, checkpoints, sources, baselines and croq's state there are "
                       "croq's to write",
                       display(path), display(own));
  }
  if (parts.size() >= 4 && parts[2] == artifact_kind_name(ArtifactKind::perf)) return {};
  return fmt::format("{} lies in the workspace's tuning/ tree outside a task's perf/ folder: the ledger, checkpoints, "
                     "sources, baselines and croq's state there are croq's to write",
                     display(path));
}

std::string Workspace::display(const fs::path& path) const {
  std::error_code ec;
  if (contains(path)) {
    auto rel = fs::relative(fs::weakly_canonical(fs::absolute(path), ec), fs::weakly_canonical(m_root, ec), ec);
    if (!ec) return rel.string();
  }
  return path.string();
}

}  // namespace croq
