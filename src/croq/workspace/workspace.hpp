// The workspace: one root folder holding the artifact tree of the seeds,
//   <root>/tuning/<gpu>/<dsl>/<kind>/<shape_key>/<model>/...
// with kind one of srcs bin cmd perf logs checkpoints baseline memory. The root comes from
// --root, else CROQ_ROOT, else the nearest folder above the current one that holds tuning/,
// else the enclosing git root; never silently the current folder.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "croq/workspace/ids.hpp"

namespace croq {

namespace fs = std::filesystem;

enum class ArtifactKind { srcs, bin, cmd, perf, logs, checkpoints, baseline, memory };
const char* artifact_kind_name(ArtifactKind kind);
const std::vector<ArtifactKind>& all_artifact_kinds();

// Where a workspace root came from, shown by `croq where` and in error messages.
struct RootChoice {
  fs::path root;
  std::string origin;  // "--root", "CROQ_ROOT", "tuning/ found above the current folder", "git root"
};

// Resolves the root. `flag` is --root's value (empty if not given). Throws croq::Error(usage)
// with what to do when nothing applies.
RootChoice resolve_root(const std::string& flag, const fs::path& start = fs::current_path());

// One task: a (gpu, dsl, shape key, model) in the tree.
struct TaskRef {
  std::string gpu;
  std::string dsl;
  ShapeKey shape;
  std::string model;

  std::string id() const;  // "<gpu>/<dsl>/<shape_key>/<model>"
};

// Validates every part (throws usage) and returns the task.
TaskRef make_task(const std::string& gpu, const std::string& dsl, const std::string& shape_key,
                  const std::string& model);

class Workspace {
 public:
  explicit Workspace(fs::path root);

  const fs::path& root() const { return m_root; }
  fs::path tuning_dir() const { return m_root / "tuning"; }
  fs::path dsl_dir(const std::string& gpu, const std::string& dsl) const;
  fs::path kind_dir(const TaskRef& task, ArtifactKind kind) const;  // .../<kind>/<key>/<model>

  // The task's files (paths only; nothing is created).
  fs::path results_tsv(const TaskRef& t) const { return kind_dir(t, ArtifactKind::logs) / "results.tsv"; }
  fs::path idea_log(const TaskRef& t) const { return kind_dir(t, ArtifactKind::logs) / "idea-log.jsonl"; }
  fs::path attempt_log(const TaskRef& t) const { return kind_dir(t, ArtifactKind::logs) / "attempt-log.jsonl"; }
  fs::path reservations(const TaskRef& t) const { return kind_dir(t, ArtifactKind::logs) / "reservations.json"; }
  fs::path ledger_index(const TaskRef& t) const { return kind_dir(t, ArtifactKind::logs) / ".ledger-index.json"; }
  fs::path task_lock(const TaskRef& t) const { return kind_dir(t, ArtifactKind::logs) / ".croq.lock"; }
  fs::path task_config(const TaskRef& t) const { return kind_dir(t, ArtifactKind::logs) / "task_config.json"; }
  fs::path checkpoint(const TaskRef& t) const { return kind_dir(t, ArtifactKind::checkpoints) / "current_idea.json"; }
  fs::path baseline_result(const TaskRef& t) const;  // baseline/<key>/<model>/<lib>_result.json
  fs::path activity_log(const TaskRef& t) const { return kind_dir(t, ArtifactKind::memory) / "activity.jsonl"; }
  fs::path sessions_dir(const TaskRef& t) const { return kind_dir(t, ArtifactKind::memory) / "sessions"; }

  // Every task with a logs/ folder under tuning/, optionally filtered.
  std::vector<TaskRef> list_tasks(const std::string& gpu = {}, const std::string& dsl = {}) const;
  // Shape keys that have a srcs/ folder for (gpu, dsl): the resume guard's "existing keys".
  std::vector<std::string> existing_shape_keys(const std::string& gpu, const std::string& dsl) const;

  // True if `path` (after resolving symlinks and "..") lies inside the root.
  bool contains(const fs::path& path) const;
  // Why a file a verb writes at a path the user gave (--out) may not go there, or "": inside
  // tuning/, only a task's perf/ folder takes such a file (the ledger, checkpoints, sources,
  // baselines and croq's own state are croq's to write), and only the perf/ folder of `task`, the
  // task the verb works for, when one is given (another task's stored evidence is not its to write).
  std::string user_output_refusal(const fs::path& path, const TaskRef* task = nullptr) const;
  // Returns `path` relative to the root when it lies inside, else the absolute path.
  std::string display(const fs::path& path) const;

 private:
  fs::path m_root;
};

}  // namespace croq
