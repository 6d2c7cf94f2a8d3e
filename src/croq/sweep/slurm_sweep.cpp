// The sweep as a Slurm job array (slurm_sweep.hpp).
#include "croq/sweep/slurm_sweep.hpp"

#include <unistd.h>

#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/process.hpp"
#include "croq/util/text.hpp"
#include "croq/util/time.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq::sweep {

std::filesystem::path slurm_doc_path(const std::filesystem::path& root) { return root / "tuning" / "slurm.json"; }

namespace {

constexpr const char* k_schema = "croq-sweep-slurm-v1";

json options_to_json(const SweepOptions& o) {
  return {{"gpu", o.gpu_key},
          {"dsl", o.dsl},
          {"model", o.model},
          {"mode", mode_name(o.mode)},
          {"rounds", o.rounds},
          {"driver", o.driver},
          {"command", o.command},
          {"agent", o.agent},
          {"agent_config", o.agent_config},
          {"family", o.family},
          {"seed", o.seed},
          {"explore", o.explore},
          {"profile_preset", o.profile_preset},
          {"step_timeout_s", o.step_timeout_s},
          {"max_restarts", o.max_restarts}};
}

SweepOptions options_from_json(const json& j, const std::string& source) {
  auto bad = [&](const char* field) {
    return Error(ExitCode::corrupt, fmt::format("{}: options.{} is missing or of the wrong type", source, field),
                 "submit the sweep again (croq sweep submit --slurm)");
  };
  if (!j.is_object()) throw bad("(object)");
  SweepOptions o;
  auto str = [&](const char* f) {
    auto v = get_string(j, f);
    if (!v) throw bad(f);
    return *v;
  };
  o.gpu_key = str("gpu");
  o.dsl = str("dsl");
  o.model = str("model");
  auto mode = parse_mode(str("mode"));
  if (!mode) throw bad("mode");
  o.mode = *mode;
  o.driver = str("driver");
  o.agent = get_string(j, "agent").value_or("");
  o.agent_config = get_string(j, "agent_config").value_or("");
  o.family = get_string(j, "family").value_or("");
  o.profile_preset = get_string(j, "profile_preset").value_or("full");
  auto rounds = get_integer(j, "rounds");
  if (!rounds || *rounds < 1) throw bad("rounds");
  o.rounds = static_cast<int>(*rounds);
  o.seed = static_cast<uint64_t>(get_integer(j, "seed").value_or(0));
  o.explore = get_number(j, "explore").value_or(0.15);
  o.step_timeout_s = static_cast<int>(get_integer(j, "step_timeout_s").value_or(900));
  o.max_restarts = static_cast<int>(get_integer(j, "max_restarts").value_or(3));
  if (j.contains("command") && j["command"].is_array()) {
    for (const auto& a : j["command"]) {
      if (a.is_string()) o.command.push_back(a.get<std::string>());
    }
  }
  return o;
}

json shape_to_json(const ShapeSpec& s) {
  return {{"operator", s.op}, {"dtype", s.dtype}, {"m", s.m}, {"n", s.n}, {"k", s.k}, {"region", s.region},
          {"scenario", s.scenario}};
}

// A state.json entry for a shape the submission planned and no process has written yet.
json new_entry(const QueueItem& q, const SweepOptions& o, const std::string& status) {
  return {{"status", status},
          {"mode", mode_name(o.mode)},
          {"current_iter", q.stored_rounds},
          {"region", q.shape.region.empty() ? std::string("far") : q.shape.region},
          {"shape", json::array({q.shape.m, q.shape.n, q.shape.k})},
          {"dtype", q.shape.dtype},
          {"operator", q.shape.op},
          {"gpu", o.gpu_key},
          {"dsl", o.dsl},
          {"model", o.model},
          {"driver", o.driver},
          {"target_rounds", o.rounds}};
}

// One word of an #SBATCH line or of the option it gives: printable, no line break.
void check_word(const std::string& value, const char* flag, bool spaces_ok) {
  for (char c : value) {
    if (c == '\n' || c == '\r' || c == '\0' || (!spaces_ok && (c == ' ' || c == '\t'))) {
      throw Error(ExitCode::usage, fmt::format("{} '{}' holds a line break{}", flag, value, spaces_ok ? "" : " or a space"),
                  "give each sbatch option as one word, e.g. --sbatch-arg=--constraint=h200");
    }
  }
}

std::string stamp_now() {
  std::string s;
  for (char c : now_iso8601()) {
    if (c >= '0' && c <= '9') s += c;
    if (c == 'T') s += 'T';
    if (s.size() >= 15) break;  // YYYYmmddTHHMMSS
  }
  return s;
}

std::optional<json> read_doc(const std::filesystem::path& file) {
  auto text = read_file(file);
  if (!text) return std::nullopt;
  std::string err;
  auto doc = try_parse_json(*text, &err);
  if (!doc || !doc->is_object()) {
    throw Error(ExitCode::corrupt, fmt::format("{} is damaged: {}", file.string(), doc ? "not an object" : err),
                "move it aside; the ledgers and tuning/state.json hold the sweep's progress");
  }
  return doc;
}

int live_count(const SlurmJobView& v) {
  int n = 0;
  for (const auto& t : v.tasks) n += slurm_state_is_live(t.state);
  return n;
}

}  // namespace

std::string slurm_job_script(const json& sub, const SlurmOptions& so) {
  const int n = static_cast<int>(sub["tasks"].size());
  const std::string dir = sub.value("dir", "");
  std::string s = "#!/bin/bash\n";
  s += "# croq sweep submit --slurm: one array task per shape of " + dir + "/submission.json;\n";
  s += "# each task runs `croq sweep task` on the shared workspace (docs/sweep.md).\n";
  s += "#SBATCH --job-name=" + so.job_name + "\n";
  s += fmt::format("#SBATCH --array=0-{}{}\n", n - 1, so.max_parallel > 0 ? fmt::format("%{}", so.max_parallel) : "");
  if (!so.gres.empty() && so.gres != "none") s += "#SBATCH --gres=" + so.gres + "\n";
  s += "#SBATCH --ntasks=1\n";
  if (so.cpus_per_task > 0) s += fmt::format("#SBATCH --cpus-per-task={}\n", so.cpus_per_task);
  if (!so.partition.empty()) s += "#SBATCH --partition=" + so.partition + "\n";
  if (!so.account.empty()) s += "#SBATCH --account=" + so.account + "\n";
  if (!so.time_limit.empty()) s += "#SBATCH --time=" + so.time_limit + "\n";
  s += "#SBATCH --chdir=" + sub.value("root", "") + "\n";
  s += "#SBATCH --output=" + dir + "/logs/task-%a.out\n";
  for (const auto& a : so.sbatch_args) s += "#SBATCH " + a + "\n";
  s += "exec " + shell_join({sub.value("croq", ""), "--root", sub.value("root", ""), "sweep", "task", "--submission",
                             dir + "/submission.json"}) +
       " --index \"$SLURM_ARRAY_TASK_ID\"\n";
  return s;
}

json submit_slurm_sweep(const SweepOptions& o, const Manifest& manifest, const SlurmOptions& so, SlurmClient& slurm,
                        const Note& note) {
  for (const auto& [v, f] : {std::pair{so.partition, "--partition"}, {so.account, "--account"},
                             {so.time_limit, "--time"}, {so.gres, "--gres"}, {so.job_name, "--job-name"}}) {
    check_word(v, f, false);
  }
  if (so.job_name.empty()) throw Error(ExitCode::usage, "--job-name is empty");
  for (const auto& a : so.sbatch_args) {
    check_word(a, "--sbatch-arg", true);
    if (!starts_with(a, "-")) {
      throw Error(ExitCode::usage, fmt::format("--sbatch-arg '{}' is not an sbatch option", a),
                  "give the option with its dashes, e.g. --sbatch-arg=--constraint=h200 or --sbatch-arg=--qos=long");
    }
  }
  for (const std::string& p : {o.root.string(), o.croq_exe.string()}) {
    if (p.find_first_of(" \t\r\n") != std::string::npos) {
      throw Error(ExitCode::usage, fmt::format("the path '{}' holds a space or a line break", p),
                  "the workspace and croq's executable are named in the job script's #SBATCH lines: use paths "
                  "without spaces (a symbolic link will do)");
    }
  }
  const std::filesystem::path root = o.root;
  ensure_dir(root / "tuning");
  // No local sweep may run meanwhile (it would take the same shapes): hold its lock while submitting.
  auto run_lock = FileLock::try_acquire(sweep_lock_path(root), std::chrono::milliseconds(0),
                                        fmt::format("croq sweep submit (pid {})", ::getpid()), root);
  if (!run_lock) {
    throw Error(ExitCode::busy, "a sweep runs on this workspace: " + FileLock::describe_holder(sweep_lock_path(root)),
                "`croq sweep stop --wait` ends it; then submit");
  }
  if (auto prev = read_doc(slurm_doc_path(root)); prev && prev->contains("job_id") && (*prev)["job_id"].is_string()) {
    const std::string id = (*prev)["job_id"].get<std::string>();
    SlurmJobView v = slurm.job(id);
    if (int live = live_count(v); live > 0) {
      throw Error(ExitCode::busy, fmt::format("Slurm job {} of this workspace still has {} task(s) queued or running", id, live),
                  "`croq sweep status` shows them; `croq sweep stop` cancels them (their shapes resume on the next "
                  "submission)");
    }
  }
  Workspace ws(root);
  StateFile sf(root);
  json state = sf.read();
  auto task_of = [&](const std::string& key) { return make_task(o.gpu_key, o.dsl, key, o.model); };
  auto items = plan_sweep(state, manifest, o.mode, o.rounds,
                          [&](const std::string& key) { return stored_rounds_of(ws, task_of(key)); });
  std::vector<QueueItem> run, done;
  for (auto& q : items) (q.plan == Plan::skip_done ? done : run).push_back(q);

  const std::string stamp = fmt::format("{}-{}", stamp_now(), ::getpid());
  const std::filesystem::path dir = root / "tuning" / "slurm" / stamp;
  json sub = {{"schema", k_schema},
              {"created_at", now_iso8601()},
              {"root", root.string()},
              {"croq", o.croq_exe.string()},
              {"dir", dir.string()},
              {"script", (dir / "job.sh").string()},
              {"manifest", manifest.source},
              {"options", options_to_json(o)},
              {"slurm", {{"partition", so.partition}, {"account", so.account}, {"time", so.time_limit},
                         {"gres", so.gres}, {"cpus_per_task", so.cpus_per_task}, {"max_parallel", so.max_parallel},
                         {"job_name", so.job_name}, {"sbatch_args", so.sbatch_args}}},
              {"job_id", nullptr},
              {"tasks", json::array()},
              {"skipped_done", json::array()}};
  for (size_t i = 0; i < run.size(); ++i) {
    sub["tasks"].push_back({{"index", i}, {"key", run[i].key}, {"plan", plan_name(run[i].plan)},
                            {"stored_rounds", run[i].stored_rounds}, {"origin", run[i].origin},
                            {"shape", shape_to_json(run[i].shape)}});
  }
  for (const auto& q : done) sub["skipped_done"].push_back(q.key);
  json out = {{"job_id", nullptr}, {"dir", dir.string()}, {"script", (dir / "job.sh").string()},
              {"tasks", json::array()}, {"skipped_done", sub["skipped_done"]}, {"dry_run", so.dry_run}};
  for (const auto& t : sub["tasks"]) {
    out["tasks"].push_back({{"index", t["index"]}, {"key", t["key"]}, {"plan", t["plan"]},
                            {"stored_rounds", t["stored_rounds"]}});
  }
  if (run.empty()) {
    note(fmt::format("croq sweep submit: every shape ({}) is done at its budget of {} rounds; nothing to submit",
                     done.size(), o.rounds));
    out["dir"] = nullptr;
    out["script"] = nullptr;
    return out;
  }
  ensure_dir(dir / "logs");
  atomic_write(dir / "submission.json", dump_pretty(sub) + "\n", true, root);
  atomic_write(dir / "job.sh", slurm_job_script(sub, so), true, root);
  std::error_code ec;
  std::filesystem::permissions(dir / "job.sh", std::filesystem::perms::owner_exec, std::filesystem::perm_options::add, ec);
  if (so.dry_run) {
    note(fmt::format("croq sweep submit: {} task(s) written to {} (dry run: nothing submitted; `sbatch {}` submits "
                     "it, but only `croq sweep submit` records the job for `croq sweep status` and `stop`)",
                     run.size(), (dir / "job.sh").string(), (dir / "job.sh").string()));
    return out;
  }
  std::string job_id;
  try {
    job_id = slurm.submit(dir / "job.sh", root);
  } catch (...) {
    std::filesystem::remove_all(dir, ec);
    throw;
  }
  sub["job_id"] = job_id;
  sub["submitted_at"] = now_iso8601();
  atomic_write(dir / "submission.json", dump_pretty(sub) + "\n", true, root);
  atomic_write(slurm_doc_path(root), dump_pretty(sub) + "\n", true, root);
  out["job_id"] = job_id;
  // Entries for shapes no process has written yet (a task that started already wrote its own).
  sf.update([&](json& disk) {
    json& shapes = disk["shapes"];
    for (const auto& q : run) {
      if (!shapes.contains(q.key)) shapes[q.key] = new_entry(q, o, "pending");
    }
    for (const auto& q : done) {
      if (!shapes.contains(q.key) || get_string(shapes[q.key], "status").value_or("") != "done") {
        json e = shapes.contains(q.key) && shapes[q.key].is_object() ? shapes[q.key] : new_entry(q, o, "done");
        e["status"] = "done";
        e["current_iter"] = q.stored_rounds;
        if (!e.contains("finished_at")) e["finished_at"] = now_iso8601();
        shapes[q.key] = e;
      }
    }
    disk["updated_at"] = now_iso8601();
  });
  try {
    append_line(sweep_log_path(root),
                dump_compact({{"event", "slurm_submit"}, {"slurm_job", job_id}, {"tasks", run.size()},
                              {"skipped", done.size()}, {"dir", dir.string()}, {"at", now_iso8601()}}),
                false, {}, root);
  } catch (const Error& e) {
    note(std::string("croq sweep: the sweep log could not be written: ") + e.what());
  }
  note(fmt::format("croq sweep submit: Slurm job {}: {} task(s) (one per shape), {} done already; `croq sweep status` "
                   "follows it",
                   job_id, run.size(), done.size()));
  return out;
}

Device slurm_task_device(DeviceSource& source, const std::function<std::optional<std::string>(const char*)>& env) {
  std::string error;
  std::vector<Device> all = source.list(&error);
  if (all.empty()) {
    throw Error(ExitCode::no_device, "no device to run on" + (error.empty() ? std::string() : ": " + error),
                "the task needs the GPU Slurm gives it (--gres=gpu:1)");
  }
  for (const char* var : {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES"}) {
    auto v = env(var);
    if (!v || trim(*v).empty()) continue;
    const std::string first = trim(v->substr(0, v->find(',')));
    for (const auto& d : all) {
      if (d.id == first || d.visible == first || d.lease_id == first || d.id == "cpu" + first) return d;
    }
  }
  if (all.size() == 1) return all.front();
  throw Error(ExitCode::no_device,
              fmt::format("cannot tell which of the {} devices Slurm gave this task (SLURM_JOB_GPUS, SLURM_STEP_GPUS "
                          "and CUDA_VISIBLE_DEVICES name none of them)",
                          all.size()),
              "submit with a GPU per task (--gres gpu:1, the default)");
}

namespace {

// One device: the task's.
class OneDevice : public DeviceSource {
 public:
  OneDevice(std::unique_ptr<DeviceSource> base, Device d) : m_base(std::move(base)), m_device(std::move(d)) {}
  std::vector<Device> list(std::string*) override { return {m_device}; }
  std::optional<std::string> unhealthy(const Device& d) override { return m_base->unhealthy(d); }

 private:
  std::unique_ptr<DeviceSource> m_base;
  Device m_device;
};

}  // namespace

json run_slurm_task(const std::filesystem::path& root, const std::filesystem::path& submission, int index,
                    const std::filesystem::path& croq_exe, const std::atomic<bool>& stop, const Note& note) {
  auto doc = read_doc(submission);
  if (!doc) {
    throw Error(ExitCode::not_found, fmt::format("the submission {} does not exist", submission.string()),
                "the task runs what `croq sweep submit --slurm` wrote; submit again");
  }
  if (doc->value("schema", "") != k_schema || !(*doc)["tasks"].is_array()) {
    throw Error(ExitCode::corrupt, fmt::format("{} is not a croq Slurm submission ({})", submission.string(), k_schema));
  }
  const json* task = nullptr;
  for (const auto& t : (*doc)["tasks"]) {
    if (t.is_object() && t.value("index", -1) == index) task = &t;
  }
  if (!task) {
    throw Error(ExitCode::usage,
                fmt::format("index {} is not a task of {} (0..{})", index, submission.string(),
                            static_cast<int>((*doc)["tasks"].size()) - 1));
  }
  SweepOptions o = options_from_json((*doc)["options"], submission.string());
  o.root = root;
  o.croq_exe = croq_exe;
  o.exclusive = false;
  o.manifest_only = true;
  const char* job_env = std::getenv("SLURM_ARRAY_JOB_ID");
  const std::string job = job_env && *job_env ? std::string(job_env)
                                              : ((*doc)["job_id"].is_string() ? (*doc)["job_id"].get<std::string>() : "");
  o.log_fields = {{"slurm_job", job}, {"slurm_task", index}};
  const json& sh = (*task)["shape"];
  ShapeSpec s;
  s.op = sh.value("operator", "");
  s.dtype = sh.value("dtype", "");
  s.m = sh.value("m", int64_t{0});
  s.n = sh.value("n", int64_t{0});
  s.k = sh.value("k", int64_t{0});
  s.region = sh.value("region", "far");
  s.scenario = sh.value("scenario", "");
  s.key = task->value("key", "");
  if (s.key.empty() || s.m <= 0 || s.n <= 0 || s.k <= 0) {
    throw Error(ExitCode::corrupt, fmt::format("{}: task {} has no key or shape", submission.string(), index));
  }
  Manifest m;
  m.source = fmt::format("{} (Slurm task {} of {})", doc->value("manifest", ""), index, submission.string());
  m.shapes = {s};
  auto base = device_source_for(o.dsl);
  Device dev = slurm_task_device(*base, [](const char* v) -> std::optional<std::string> {
    const char* x = std::getenv(v);
    return x ? std::optional<std::string>(x) : std::nullopt;
  });
  note(fmt::format("croq sweep task: Slurm job {} task {}: {} on device {}", job, index, s.key, dev.id));
  OneDevice src(std::move(base), dev);
  json summary = run_sweep(o, m, src, stop, note);
  summary["slurm_job"] = job;
  summary["slurm_task"] = index;
  summary["key"] = s.key;
  return summary;
}

void add_slurm_status(json& status, const std::filesystem::path& root, SlurmClient& slurm) {
  auto doc = read_doc(slurm_doc_path(root));
  if (!doc || !(*doc)["job_id"].is_string()) return;
  const std::string id = (*doc)["job_id"].get<std::string>();
  SlurmJobView v;
  try {
    v = slurm.job(id);
  } catch (const Error& e) {
    v.notes.push_back(e.what());
  }
  std::map<int, SlurmTask> by_index;
  for (const auto& t : v.tasks) by_index[t.index] = t;
  json tasks = json::array();
  std::map<std::string, int> counts;
  std::map<std::string, json> by_key;
  int live = 0;
  for (const auto& t : (*doc)["tasks"]) {
    const int i = t.value("index", -1);
    json row = {{"index", i}, {"key", t.value("key", "")}};
    if (by_index.count(i)) {
      json s = by_index[i].to_json();
      for (auto it = s.begin(); it != s.end(); ++it) {
        if (it.key() != "index") row[it.key()] = it.value();
      }
    } else {
      row["state"] = "UNKNOWN";  // neither queued nor remembered (ended long ago, accounting off)
    }
    const std::string st = row.value("state", "UNKNOWN");
    ++counts[st];
    live += slurm_state_is_live(st);
    tasks.push_back(row);
    json brief = row;
    brief.erase("key");
    by_key[t.value("key", "")] = brief;
  }
  status["slurm"] = {{"job_id", id},
                     {"submitted_at", doc->value("submitted_at", "")},
                     {"dir", doc->value("dir", "")},
                     {"accounting", v.accounting},
                     {"tasks", tasks},
                     {"counts", counts},
                     {"live", live},
                     {"notes", v.notes}};
  if (status.contains("shapes") && status["shapes"].is_array()) {
    for (auto& r : status["shapes"]) {
      const std::string key = r.value("key", "");
      if (by_key.count(key)) r["slurm"] = by_key[key];
    }
  }
}

json stop_slurm_sweep(const std::filesystem::path& root, SlurmClient& slurm, bool wait, std::chrono::milliseconds timeout) {
  auto doc = read_doc(slurm_doc_path(root));
  if (!doc || !(*doc)["job_id"].is_string()) return nullptr;
  const std::string id = (*doc)["job_id"].get<std::string>();
  SlurmJobView v = slurm.job(id);
  const int live = live_count(v);
  json out = {{"job_id", id}, {"was_live", live > 0}, {"live_tasks", live}, {"cancelled", false}, {"stopped", live == 0}};
  if (live == 0) return out;
  slurm.cancel(id);
  out["cancelled"] = true;
  try {
    append_line(sweep_log_path(root),
                dump_compact({{"event", "slurm_cancel"}, {"slurm_job", id}, {"live_tasks", live}, {"at", now_iso8601()}}),
                false, {}, root);
  } catch (const Error&) {
    // The log line is a record of the cancel, not its cause: the job is cancelled either way and
    // the answer says so.
  }
  if (wait) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const int left = live_count(slurm.job(id));
      out["live_tasks"] = left;
      if (left == 0) {
        out["stopped"] = true;
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  }
  return out;
}

}  // namespace croq::sweep
