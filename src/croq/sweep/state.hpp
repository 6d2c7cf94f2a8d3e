// tuning/state.json: the sweep's state per shape key, in the from-scratch skill's format
//   {"shapes": {"f16_768x768x768_fs": {"status": "active", "mode": "from_scratch",
//               "current_iter": 37, "region": "far", "shape": [768, 768, 768], "dtype": "f16", ...}}}
// status: pending | active | done | needs_scratch (the skill's), and croq's failed | exhausted;
// croq adds its own fields beside the skill's (operator, gpu, dsl, model, target_rounds, best and
// baseline TFLOPS, device, restarts, worker_seconds, error, times) and keeps every field it does
// not know. The ledgers stay the truth: current_iter is the task's last stored round, refreshed
// from its idea-log.jsonl whenever the sweep looks at a shape, so a state.json older than the
// ledgers (a crash between a round's store and the state's write) loses nothing.
//
// One writer at a time: every write takes tuning/.state.lock and replaces the file atomically
// (util/fs.hpp), and a sweep writes back only the entries of the shapes it works on (read, merge and
// replace under the lock), so the tasks of a Slurm job array share the file; `croq sweep run` also
// holds tuning/.sweep.lock while it runs, so two local sweeps never run on one workspace at once,
// and each shape is worked on under its own lock (tuning/.sweep-shape.<key>.lock).
#pragma once
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "croq/sweep/manifest.hpp"
#include "croq/util/json.hpp"

namespace croq::sweep {

inline constexpr int k_default_rounds = 150;

class StateFile {
 public:
  explicit StateFile(std::filesystem::path root);
  const std::filesystem::path& path() const { return m_path; }
  std::filesystem::path lock_path() const;
  // The document ({"shapes": {}} when there is none). A file that is not a JSON object with an
  // object `shapes` throws Error(corrupt) naming it; nothing is changed.
  json read() const;
  // Replaces the file atomically under its lock.
  void write(const json& doc) const;
  // Reads the file, applies `change` and replaces it, all under its lock: the read-modify-write of
  // writers that share the file (the tasks of a Slurm job array each update their own shape).
  void update(const std::function<void(json& doc)>& change) const;

 private:
  std::filesystem::path m_root;
  std::filesystem::path m_path;
};

// The skill's rule for one shape (the entry may be null: never seen).
//   done, same mode, current_iter >= target   -> skip_done
//   done, current_iter < target               -> reopen (closed early: continue from current_iter)
//   same mode, current_iter > 0               -> resume
//   otherwise                                 -> start
enum class Plan { skip_done, reopen, resume, start };
const char* plan_name(Plan p);
Plan plan_for(const json& entry, Mode mode, int target_rounds, int stored_rounds);

// The shape of an entry: its "shape" field, else parsed from the key; nullopt if neither works.
std::optional<ShapeSpec> entry_shape(const std::string& key, const json& entry);

}  // namespace croq::sweep
