// tuning/state.json (state.hpp).
#include "croq/sweep/state.hpp"

#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/workspace/ids.hpp"
#include "croq/workspace/operators.hpp"

namespace croq::sweep {

StateFile::StateFile(std::filesystem::path root) : m_root(std::move(root)), m_path(m_root / "tuning" / "state.json") {}

std::filesystem::path StateFile::lock_path() const { return m_root / "tuning" / ".state.lock"; }

json StateFile::read() const {
  auto text = read_file(m_path);
  if (!text) return json{{"shapes", json::object()}};
  std::string err;
  auto doc = try_parse_json(*text, &err);
  if (!doc || !doc->is_object() || (doc->contains("shapes") && !(*doc)["shapes"].is_object())) {
    throw Error(ExitCode::corrupt,
                fmt::format("{} is damaged: {}", m_path.string(),
                            doc ? "it is not an object with an object `shapes`" : err),
                "repair or move it aside; the ledgers hold every round, and `croq sweep run` writes a new one from them");
  }
  if (!doc->contains("shapes")) (*doc)["shapes"] = json::object();
  return *doc;
}

void StateFile::write(const json& doc) const {
  ensure_dir(m_path.parent_path());
  FileLock lock(lock_path(), std::chrono::milliseconds(30000), "croq sweep: state.json", m_root);
  atomic_write(m_path, dump_pretty(doc) + "\n", true, m_root);
}

void StateFile::update(const std::function<void(json& doc)>& change) const {
  ensure_dir(m_path.parent_path());
  FileLock lock(lock_path(), std::chrono::milliseconds(30000), "croq sweep: state.json", m_root);
  json doc = read();
  change(doc);
  atomic_write(m_path, dump_pretty(doc) + "\n", true, m_root);
}

const char* plan_name(Plan p) {
  switch (p) {
    case Plan::skip_done: return "skip_done";
    case Plan::reopen: return "reopen";
    case Plan::resume: return "resume";
    case Plan::start: return "start";
  }
  return "start";
}

Plan plan_for(const json& entry, Mode mode, int target_rounds, int stored_rounds) {
  if (!entry.is_object()) return stored_rounds > 0 ? Plan::resume : Plan::start;
  // The ledger is the truth: the rounds stored, not the state's current_iter (a hand-edited
  // current_iter made the sweep skip shapes whose ledgers held 3 rounds as done at 150).
  const int current = stored_rounds;
  const std::string status = get_string(entry, "status").value_or("");
  const bool same_mode = get_string(entry, "mode").value_or(mode_name(mode)) == mode_name(mode);
  if (status == "done" && same_mode && current >= target_rounds) return Plan::skip_done;
  if (status == "done" && current < target_rounds) return Plan::reopen;
  if (same_mode && current > 0) return current >= target_rounds ? Plan::skip_done : Plan::resume;
  return Plan::start;
}

std::optional<ShapeSpec> entry_shape(const std::string& key, const json& entry) {
  auto k = try_parse_shape_key(key);
  ShapeSpec s;
  if (k) {
    s.dtype = k->dtype_token;
    s.m = k->m(), s.n = k->n(), s.k = k->k();
    if (auto op = try_shape_operator(*k)) s.op = *op;
  }
  if (entry.is_object() && entry.contains("shape") && entry["shape"].is_array() && entry["shape"].size() == 3) {
    const json& d = entry["shape"];
    if (d[0].is_number_integer() && d[1].is_number_integer() && d[2].is_number_integer()) {
      s.m = d[0].get<int64_t>(), s.n = d[1].get<int64_t>(), s.k = d[2].get<int64_t>();
    }
  }
  if (entry.is_object()) {
    if (auto d = get_string(entry, "dtype")) s.dtype = *d;
    if (auto r = get_string(entry, "region")) s.region = *r;
  }
  if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.dtype.empty()) return std::nullopt;
  return s;
}

}  // namespace croq::sweep
