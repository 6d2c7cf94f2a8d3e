// The sweep (sweep.hpp).
#include "croq/sweep/sweep.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "croq/ledger/ledger.hpp"
#include "croq/protocol/protocol.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/process.hpp"
#include "croq/util/time.hpp"
#include "croq/util/units.hpp"
#include "croq/workspace/dtype.hpp"
#include "croq/workspace/operators.hpp"
#include "croq/workspace/sources.hpp"

namespace croq::sweep {

std::filesystem::path sweep_log_path(const std::filesystem::path& root) { return root / "tuning" / "sweep-log.jsonl"; }
std::filesystem::path sweep_doc_path(const std::filesystem::path& root) { return root / "tuning" / "sweep.json"; }
std::filesystem::path sweep_lock_path(const std::filesystem::path& root) { return root / "tuning" / ".sweep.lock"; }
std::filesystem::path shape_lock_path(const std::filesystem::path& root, const std::string& key) {
  return root / "tuning" / (".sweep-shape." + key + ".lock");
}

json QueueItem::to_json() const {
  return {{"key", key}, {"plan", plan_name(plan)}, {"stored_rounds", stored_rounds}, {"origin", origin},
          {"shape", json::array({shape.m, shape.n, shape.k})}, {"dtype", shape.dtype}, {"operator", shape.op}};
}

json StartFrom::to_json() const {
  return {{"task", task.id()}, {"kernel", kernel}, {"tflops", tflops}, {"family", family},
          {"source", source.string()}, {"distance", std::round(distance * 1000) / 1000}};
}

std::vector<QueueItem> plan_sweep(const json& state, const Manifest& manifest, Mode mode, int target_rounds,
                                  const std::function<int(const std::string& key)>& stored_rounds) {
  const json& shapes = state.contains("shapes") && state["shapes"].is_object() ? state["shapes"] : json::object();
  std::vector<QueueItem> list;
  std::set<std::string> seen;
  auto add = [&](const ShapeSpec& s, const std::string& origin) {
    QueueItem q;
    q.key = shape_key_for(s, mode);
    if (!seen.insert(q.key).second) return;
    q.shape = s;
    q.origin = origin;
    q.stored_rounds = stored_rounds(q.key);
    const json entry = shapes.contains(q.key) ? shapes[q.key] : json(nullptr);
    q.plan = plan_for(entry, mode, target_rounds, q.stored_rounds);
    list.push_back(q);
  };
  std::set<std::string> dtypes, ops;
  std::set<std::string> dims;
  for (const auto& s : manifest.shapes) {
    dtypes.insert(s.dtype);
    ops.insert(s.op);
    dims.insert(s.dtype + "/" + s.dims());
  }
  // The skill's manifest shapes, then (from scratch) the far shapes of state.json and those that
  // from-current-best marked needs_scratch, of the same dtypes and operator.
  for (const auto& s : manifest.shapes) add(s, "manifest");
  if (mode == Mode::from_scratch && ops.size() == 1) {
    for (auto it = shapes.begin(); it != shapes.end(); ++it) {
      const json& e = it.value();
      const std::string status = get_string(e, "status").value_or("");
      const bool needs = status == "needs_scratch" || e.value("needs_scratch", false) == true;
      const bool far = get_string(e, "region").value_or("") == "far";
      if (!needs && !far) continue;
      auto s = entry_shape(it.key(), e);
      if (!s || !dtypes.count(s->dtype) || dims.count(s->dtype + "/" + s->dims())) continue;
      ShapeSpec spec = *s;
      spec.op = *ops.begin();
      spec.key.clear();
      add(spec, needs ? "state:needs_scratch" : "state:far");
    }
  }
  // Resume the active shapes first (the skill: "check state.json for any active shape").
  std::stable_partition(list.begin(), list.end(), [&](const QueueItem& q) {
    return shapes.contains(q.key) && get_string(shapes[q.key], "status").value_or("") == "active" &&
           q.plan == Plan::resume;
  });
  for (auto& q : list) {
    if (shapes.contains(q.key) && get_string(shapes[q.key], "status").value_or("") == "active" && q.plan == Plan::resume) {
      q.origin = "state:active";
    }
  }
  return list;
}

int stored_rounds_of(const Workspace& ws, const TaskRef& t) {
  Ledger l(ws, t);
  if (!l.exists()) return 0;
  // The rounds stored, not the highest round number (one record under a jumped number is one round).
  return static_cast<int>(l.index().rounds.size());
}

std::optional<StartFrom> nearest_best(const Workspace& ws, const TaskRef& target) {
  const std::string op = operator_name(target.shape);
  auto dt = parse_dtype_pair(target.shape.dtype_token);
  if (!dt) return std::nullopt;
  std::optional<StartFrom> best;
  for (const auto& t : ws.list_tasks(target.gpu, target.dsl)) {
    if (t.shape.text == target.shape.text) continue;
    if (operator_name(t.shape) != op) continue;
    auto d2 = parse_dtype_pair(t.shape.dtype_token);
    if (!d2 || std::string(d2->canonical) != dt->canonical) continue;
    if (t.shape.m() <= 0 || t.shape.n() <= 0 || t.shape.k() <= 0) continue;
    if (t.shape.m() == target.shape.m() && t.shape.n() == target.shape.n() && t.shape.k() == target.shape.k()) continue;
    Ledger l(ws, t);
    if (!l.exists()) continue;
    LedgerIndex idx = l.index();
    if (!idx.best || !idx.best->tflops) continue;
    json params;
    std::string family;
    for (const auto& r : l.read_all().records) {
      if (r.kernel == idx.best->kernel && r.extra.contains("params") && r.extra["params"].is_object()) {
        params = r.extra["params"];
        family = get_string(r.extra, "family").value_or("");
      }
    }
    const double dist = std::fabs(std::log(double(t.shape.m()) / double(target.shape.m()))) +
                        std::fabs(std::log(double(t.shape.n()) / double(target.shape.n()))) +
                        std::fabs(std::log(double(t.shape.k()) / double(target.shape.k())));
    if (best && (dist > best->distance || (dist == best->distance && *idx.best->tflops <= best->tflops))) continue;
    StartFrom s;
    s.task = t;
    s.kernel = idx.best->kernel;
    s.tflops = *idx.best->tflops;
    s.params = params;
    s.family = family;
    s.distance = dist;
    auto srcs = find_sources(ws, t, idx.best->kernel);  // its own (a failure of the same number keeps another)
    if (!srcs.empty()) s.source = srcs.front();
    best = s;
  }
  return best;
}

int auto_workers_per_device(const std::string& dsl, const std::string& driver, unsigned cores, size_t devices) {
  if (dsl == "cpp" || driver != "search" || devices == 0) return 1;
  const unsigned per_device = cores / (4 * static_cast<unsigned>(devices));
  return static_cast<int>(std::clamp(per_device, 1u, 4u));
}

namespace {

// The sweep while it runs: the queue, the state document and the log, shared by the workers.
class Runner {
 public:
  Runner(const SweepOptions& o, const Manifest& m, DeviceSource& devices, const std::atomic<bool>& stop, const Note& note)
      : o(o), manifest(m), devices(devices), stop(stop), note(note), ws(o.root), state_file(o.root) {}

  json run();

 private:
  const SweepOptions& o;
  const Manifest& manifest;
  DeviceSource& devices;
  const std::atomic<bool>& stop;
  const Note& note;
  Workspace ws;
  StateFile state_file;
  Stopwatch clock;

  std::mutex mu;  // state, queue, log, results
  json state;
  std::set<std::string> touched;  // the shapes whose entries this sweep writes
  std::deque<QueueItem> queue;
  json results = json::object();  // key -> outcome
  json device_report = json::array();
  int busy_workers = 0;

  TaskRef task_of(const std::string& key) const { return make_task(o.gpu_key, o.dsl, key, o.model); }

  void log_event(json e) {  // under mu
    if (o.log_fields.is_object()) {
      for (auto it = o.log_fields.begin(); it != o.log_fields.end(); ++it) e[it.key()] = it.value();
    }
    e["at"] = now_iso8601();
    e["t_ms"] = std::round(clock.elapsed_ms() * 10) / 10;
    try {
      append_line(sweep_log_path(o.root), dump_compact(e), false, {}, o.root);
    } catch (const Error& err) {
      note(std::string("croq sweep: the sweep log could not be written: ") + err.what());
    }
  }

  json& entry(const std::string& key) {  // under mu
    touched.insert(key);
    json& shapes = state["shapes"];
    if (!shapes.contains(key) || !shapes[key].is_object()) shapes[key] = json::object();
    return shapes[key];
  }

  // Writes back the entries of this sweep's shapes into the file as it is now (other processes,
  // the tasks of a Slurm job array, write theirs), under the file's lock.
  void save_state() {  // under mu
    state["updated_at"] = now_iso8601();
    state_file.update([&](json& disk) {
      for (const auto& key : touched) disk["shapes"][key] = state["shapes"][key];
      disk["updated_at"] = state["updated_at"];
    });
  }

  void fill_entry(const QueueItem& q, const std::string& status) {  // under mu
    json& e = entry(q.key);
    e["status"] = status;
    e["mode"] = mode_name(o.mode);
    e["region"] = e.value("region", q.shape.region.empty() ? std::string("far") : q.shape.region);
    e["shape"] = json::array({q.shape.m, q.shape.n, q.shape.k});
    e["dtype"] = q.shape.dtype;
    e["operator"] = q.shape.op;
    e["gpu"] = o.gpu_key;
    e["dsl"] = o.dsl;
    e["model"] = o.model;
    e["driver"] = o.driver;
    e["target_rounds"] = o.rounds;
    if (!e.contains("current_iter")) e["current_iter"] = 0;
  }

  void refresh_from_ledger(const std::string& key) {  // under mu
    TaskRef t = task_of(key);
    Ledger l(ws, t);
    if (!l.exists()) return;
    LedgerIndex idx = l.index();
    json& e = entry(key);
    e["current_iter"] = std::max<long long>(idx.max_round, 0);
    if (idx.best && idx.best->tflops) {
      e["best_tflops"] = *idx.best->tflops;
      e["best_kernel"] = idx.best->kernel;
    }
    if (idx.baseline && idx.baseline->tflops) e["baseline_tflops"] = *idx.baseline->tflops;
  }

  std::optional<QueueItem> next_item() {
    std::lock_guard<std::mutex> lock(mu);
    if (queue.empty()) return std::nullopt;
    QueueItem q = queue.front();
    queue.pop_front();
    ++busy_workers;
    return q;
  }

  enum class Outcome { done, exhausted, failed, stopped, device_failed };

  Outcome run_shape(const QueueItem& q, const Device& dev);
  void worker(Device dev);
  ProcessSpec driver_spec(const QueueItem& q, const Device& dev, int stored, const std::optional<StartFrom>& from);
};

ProcessSpec Runner::driver_spec(const QueueItem& q, const Device& dev, int stored, const std::optional<StartFrom>& from) {
  ProcessSpec spec;
  const std::string remaining = std::to_string(std::max(1, o.rounds - stored));
  const std::string exe = o.croq_exe.string();
  if (o.driver == "agent") {
    spec.argv = {exe, "--root", o.root.string(), "agent", "run", q.key, "--dsl", o.dsl, "--gpu", o.gpu_key, "--model",
                 o.model, "--rounds", remaining};
    if (!o.agent.empty()) spec.argv.insert(spec.argv.end(), {"--agent", o.agent});
    if (!o.agent_config.empty()) spec.argv.insert(spec.argv.end(), {"--config", o.agent_config});
    if (from && !from->source.empty()) spec.env_set["CROQ_START_FROM"] = from->source.string();
  } else if (o.driver == "command") {
    const std::map<std::string, std::string> vars = {
        {"{croq}", exe},       {"{root}", o.root.string()}, {"{key}", q.key},     {"{device}", dev.id},
        {"{visible}", dev.visible}, {"{gpu}", o.gpu_key},   {"{dsl}", o.dsl},      {"{model}", o.model},
        {"{rounds}", remaining}, {"{target}", std::to_string(o.rounds)}};
    for (std::string a : o.command) {
      for (const auto& [k, v] : vars) {
        for (size_t at = a.find(k); at != std::string::npos; at = a.find(k, at + v.size())) a.replace(at, k.size(), v);
      }
      spec.argv.push_back(a);
    }
  } else {
    spec.argv = {exe, "--root", o.root.string(), "tune", q.key, "--dsl", o.dsl, "--gpu", o.gpu_key, "--model", o.model,
                 "--rounds", remaining, "--seed", std::to_string(o.seed), "--explore", fmt::format("{}", o.explore),
                 "--step-timeout", std::to_string(o.step_timeout_s), "--profile-preset", o.profile_preset, "--device",
                 dev.id};
    std::string family = o.family;
    if (from && !from->params.is_null()) {
      spec.argv.insert(spec.argv.end(), {"--start-params", dump_compact(from->params), "--start-from",
                                         fmt::format("{} {}", from->task.shape.text, from->kernel)});
      if (family.empty()) family = from->family;
    }
    if (!family.empty()) spec.argv.insert(spec.argv.end(), {"--family", family});
  }
  spec.env_set["CROQ_DEVICE"] = dev.id;
  if (!dev.visible.empty()) spec.env_set["CUDA_VISIBLE_DEVICES"] = dev.visible;
  spec.env_unset = {"CROQ_ROOT"};
  spec.parent_death_signal = SIGKILL;
  spec.stop_grace = std::chrono::milliseconds(15000);
  spec.max_capture_bytes = 4u << 20;
  return spec;
}

Runner::Outcome Runner::run_shape(const QueueItem& q, const Device& dev) {
  const TaskRef t = task_of(q.key);
  int failures = 0;
  std::optional<StartFrom> from;
  for (;;) {
    const int stored = stored_rounds_of(ws, t);
    {
      std::lock_guard<std::mutex> lock(mu);
      fill_entry(q, "active");
      refresh_from_ledger(q.key);
      json& e = entry(q.key);
      e["device"] = dev.id;
      if (!e.contains("started_at")) e["started_at"] = now_iso8601();
      if (stored >= o.rounds) {
        e["status"] = "done";
        e["finished_at"] = now_iso8601();
        save_state();
        log_event({{"event", "shape_done"}, {"key", q.key}, {"device", dev.id}, {"rounds", stored}});
        return Outcome::done;
      }
      save_state();
    }
    if (stop) return Outcome::stopped;
    // From current best: the starting kernel comes from the nearest tuned shape (a fresh task only).
    if (o.mode == Mode::from_current_best && stored == 0 && !from) {
      from = nearest_best(ws, t);
      std::lock_guard<std::mutex> lock(mu);
      entry(q.key)["start_from"] = from ? from->to_json() : json(nullptr);
      if (from) note(fmt::format("[{}@{}] starting from the best of {} ({}, {})", q.key, dev.id,
                                 from->task.shape.text, from->kernel, format_rate(from->tflops)));
      else note(fmt::format("[{}@{}] no tuned shape to start from: the family's default", q.key, dev.id));
    }
    // An agent's stop condition is the protocol's budget: one met by an earlier invocation below
    // the sweep's budget is begun again from the last stored round (the search's `croq tune` does
    // this itself).
    if (o.driver == "agent") {
      auto p = read_protocol(ws, t);
      if (p && stored - p->start_round >= p->target_rounds) {
        ProtocolConfig cfg = *p;
        cfg.start_round = stored;
        cfg.target_rounds = o.rounds - stored;
        cfg.started_at = now_iso8601();
        write_protocol(ws, t, cfg);
      }
    }
    ProcessSpec spec = driver_spec(q, dev, stored, from);
    spec.should_stop = [this] { return stop.load(); };
    std::string pending;
    spec.on_output = [&](bool is_err, std::string_view chunk) {
      if (!is_err) return;
      pending.append(chunk);
      size_t nl;
      while ((nl = pending.find('\n')) != std::string::npos) {
        std::string line = pending.substr(0, nl);
        pending.erase(0, nl + 1);
        if (line.empty()) continue;
        auto ev = try_parse_json(line);
        if (ev && ev->is_object() && ev->value("event", "") == "round") {
          std::lock_guard<std::mutex> lock(mu);
          json& e = entry(q.key);
          e["current_iter"] = ev->value("round", e.value("current_iter", 0));
          if ((*ev)["best"].is_number()) e["best_tflops"] = (*ev)["best"];
          if ((*ev)["baseline"].is_number()) e["baseline_tflops"] = (*ev)["baseline"];
          e["updated_at"] = now_iso8601();
          save_state();
          log_event({{"event", "round"}, {"key", q.key}, {"device", dev.id}, {"round", e["current_iter"]},
                     {"decision", ev->value("decision", "")}, {"tflops", (*ev)["tflops"]}, {"best", (*ev)["best"]},
                     {"bottleneck", ev->value("bottleneck", "")}});
          std::string best = (*ev)["best"].is_number() ? format_rate((*ev)["best"].get<double>()) : "-";
          if ((*ev)["best"].is_number() && (*ev)["baseline"].is_number() && (*ev)["baseline"].get<double>() > 0) {
            best += fmt::format(" ({:.2f}x the baseline)", (*ev)["best"].get<double>() / (*ev)["baseline"].get<double>());
          }
          note(fmt::format("[{}@{}] round {}/{} {} {} | best {}", q.key, dev.id, ev->value("round", 0), o.rounds,
                           ev->value("kernel", ""), ev->value("decision", ""), best));
        } else if (!ev) {
          note(fmt::format("[{}@{}] {}", q.key, dev.id, line));
        }
      }
    };
    {
      std::lock_guard<std::mutex> lock(mu);
      log_event({{"event", "launch"}, {"key", q.key}, {"device", dev.id}, {"driver", o.driver}, {"stored_rounds", stored}});
    }
    ProcessResult r = process_runner().run(spec);
    const int after = stored_rounds_of(ws, t);
    std::lock_guard<std::mutex> lock(mu);
    json& e = entry(q.key);
    e["worker_seconds"] = std::round((e.value("worker_seconds", 0.0) + r.wall_ms / 1000.0) * 10) / 10;
    refresh_from_ledger(q.key);
    log_event({{"event", "exit"}, {"key", q.key}, {"device", dev.id}, {"status", r.describe()}, {"rounds", after},
               {"wall_ms", std::round(r.wall_ms)}});
    if (r.stopped || stop) {
      save_state();
      return Outcome::stopped;
    }
    if (after >= o.rounds) continue;  // marked done at the top of the loop
    if (r.ok()) {
      auto doc = try_parse_json(r.out);
      if (doc && doc->is_object() && doc->value("exhausted", false)) {
        e["status"] = "exhausted";
        e["error"] = "croq's search has no untried move left for this shape";
        save_state();
        log_event({{"event", "shape_exhausted"}, {"key", q.key}, {"device", dev.id}, {"rounds", after}});
        note(fmt::format("[{}@{}] exhausted at round {}: no untried move is left", q.key, dev.id, after));
        return Outcome::exhausted;
      }
    }
    if (after > stored) {
      failures = 0;  // progress: the driver is restarted to finish the budget
      if (r.ok()) continue;
    }
    // The driver died (or ended without progress): the device first, then a restart.
    if (auto why = devices.unhealthy(dev)) {
      e["status"] = "active";
      save_state();
      log_event({{"event", "device_unhealthy"}, {"device", dev.id}, {"reason", *why}, {"key", q.key}});
      note(fmt::format("croq sweep: device {} failed its health check ({}); {} goes to another worker", dev.id, *why,
                       q.key));
      device_report.push_back({{"device", dev.id}, {"name", dev.name}, {"healthy", false}, {"reason", *why},
                               {"at", now_iso8601()}});
      return Outcome::device_failed;
    }
    ++failures;
    e["restarts"] = e.value("restarts", 0) + 1;
    std::string err = r.err.size() > 1500 ? r.err.substr(r.err.size() - 1500) : r.err;
    if (auto doc = try_parse_json(r.out); doc && doc->is_object() && (*doc).contains("error")) {
      err = (*doc)["error"].is_object() ? (*doc)["error"].value("message", err) : (*doc)["error"].dump();
    }
    e["error"] = fmt::format("{}: {}", r.describe(), err);
    if (failures > o.max_restarts) {
      e["status"] = "failed";
      save_state();
      log_event({{"event", "shape_failed"}, {"key", q.key}, {"device", dev.id}, {"error", e["error"]}});
      note(fmt::format("croq sweep: {} failed {} times in a row ({}); the other shapes go on", q.key, failures,
                       r.describe()));
      return Outcome::failed;
    }
    save_state();
    note(fmt::format("[{}@{}] the driver ended ({}); restarting it ({} of {})", q.key, dev.id, r.describe(), failures,
                     o.max_restarts));
  }
}

void Runner::worker(Device dev) {
  while (!stop) {
    if (auto why = devices.unhealthy(dev)) {
      std::lock_guard<std::mutex> lock(mu);
      // The device's other workers (--workers-per-device) found it first: reported once.
      if (std::any_of(device_report.begin(), device_report.end(),
                      [&](const json& x) { return x.value("device", "") == dev.id && !x.value("healthy", true); })) {
        return;
      }
      log_event({{"event", "device_unhealthy"}, {"device", dev.id}, {"reason", *why}});
      device_report.push_back({{"device", dev.id}, {"name", dev.name}, {"healthy", false}, {"reason", *why},
                               {"at", now_iso8601()}});
      note(fmt::format("croq sweep: device {} ({}) is not healthy: {}; it is skipped (croq never resets a GPU)", dev.id,
                       dev.name, *why));
      return;
    }
    auto q = next_item();
    if (!q) return;
    auto shape_lock = FileLock::try_acquire(shape_lock_path(o.root, q->key), std::chrono::milliseconds(0),
                                            fmt::format("croq sweep (pid {}): {}", ::getpid(), q->key), o.root);
    if (!shape_lock) {
      std::lock_guard<std::mutex> lock(mu);
      --busy_workers;
      touched.erase(q->key);  // its entry is the holder's to write
      results[q->key] = "held_elsewhere";
      const std::string holder = FileLock::describe_holder(shape_lock_path(o.root, q->key));
      log_event({{"event", "shape_held"}, {"key", q->key}, {"device", dev.id}, {"holder", holder}});
      note(fmt::format("croq sweep: {} is being tuned by another process ({}); left to it", q->key, holder));
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      log_event({{"event", "take"}, {"key", q->key}, {"device", dev.id}, {"plan", plan_name(q->plan)},
                 {"origin", q->origin}});
      note(fmt::format("croq sweep: {} {} on device {} ({} rounds stored of {})", plan_name(q->plan), q->key, dev.id,
                       q->stored_rounds, o.rounds));
    }
    Outcome out = Outcome::failed;
    try {
      out = run_shape(*q, dev);
    } catch (const Error& e) {
      std::lock_guard<std::mutex> lock(mu);
      entry(q->key)["status"] = "failed";
      entry(q->key)["error"] = e.what();
      try {
        save_state();
      } catch (...) {
        // Already handling a failure; the next save (or croq sweep status) records the state.
      }
      note(fmt::format("croq sweep: {} failed: {}", q->key, e.what()));
    }
    std::lock_guard<std::mutex> lock(mu);
    --busy_workers;
    const char* names[] = {"done", "exhausted", "failed", "stopped", "device_failed"};
    results[q->key] = names[static_cast<int>(out)];
    if (out == Outcome::device_failed) {
      queue.push_front(*q);  // another worker takes it
      log_event({{"event", "requeue"}, {"key", q->key}, {"from_device", dev.id}});
      return;
    }
  }
}

json Runner::run() {
  ensure_dir(o.root / "tuning");
  std::optional<FileLock> run_lock =
      o.exclusive ? FileLock::try_acquire(sweep_lock_path(o.root), std::chrono::milliseconds(0),
                                          fmt::format("croq sweep run (pid {})", ::getpid()), o.root)
                  : std::optional<FileLock>();
  if (o.exclusive && !run_lock) {
    throw Error(ExitCode::busy,
                "a sweep already runs on this workspace: " + FileLock::describe_holder(sweep_lock_path(o.root)),
                "`croq sweep status` shows it; `croq sweep stop` ends it");
  }
  std::string error;
  std::vector<Device> all = devices.list(&error);
  if (all.empty()) {
    throw Error(ExitCode::no_device, "no device to sweep on" + (error.empty() ? std::string() : ": " + error),
                "check `croq gpu check`; the cpp dsl sweeps on the host CPU");
  }
  std::vector<Device> chosen = select_devices(all, o.gpus);
  {
    std::lock_guard<std::mutex> lock(mu);
    state = state_file.read();
    auto rounds_of = [&](const std::string& key) { return stored_rounds_of(ws, task_of(key)); };
    std::set<std::string> manifest_keys;
    for (const auto& s : manifest.shapes) manifest_keys.insert(shape_key_for(s, o.mode));
    for (auto& q : plan_sweep(state, manifest, o.mode, o.rounds, rounds_of)) {
      if (o.manifest_only && !manifest_keys.count(q.key)) continue;
      // A shape another process works on now (a Slurm task) is left to it, its entry untouched.
      if (!FileLock::try_acquire(shape_lock_path(o.root, q.key), std::chrono::milliseconds(0), "croq sweep: probe",
                                 o.root)) {
        results[q.key] = "held_elsewhere";
        note(fmt::format("croq sweep: {} is being tuned by another process ({}); left to it", q.key,
                         FileLock::describe_holder(shape_lock_path(o.root, q.key))));
        continue;
      }
      json& e = entry(q.key);
      if (q.plan == Plan::skip_done) {
        // Done at its budget (a sweep killed after the last round's store never wrote it so).
        if (get_string(e, "status").value_or("") != "done") {
          fill_entry(q, "done");
          refresh_from_ledger(q.key);
          if (!e.contains("finished_at")) e["finished_at"] = now_iso8601();
        }
        results[q.key] = "skipped_done";
        continue;
      }
      if (q.plan == Plan::reopen) note(fmt::format("croq sweep: {} was closed at round {} of {}: reopened", q.key,
                                                   q.stored_rounds, o.rounds));
      // A fresh entry is pending; a shape stopped mid-way stays active (resumed first next time).
      if (!e.contains("status") || get_string(e, "status").value_or("") == "done") fill_entry(q, "pending");
      else fill_entry(q, get_string(e, "status").value_or("pending") == "active" ? "active" : "pending");
      refresh_from_ledger(q.key);
      queue.push_back(q);
    }
    json doc = {{"schema", "croq-sweep-v1"},
                {"pid", ::getpid()},
                {"started_at", now_iso8601()},
                {"running", true},
                {"manifest", manifest.source},
                {"mode", mode_name(o.mode)},
                {"driver", o.driver},
                {"rounds", o.rounds},
                {"gpu", o.gpu_key},
                {"dsl", o.dsl},
                {"model", o.model},
                {"workers_per_device", o.workers_per_device > 0 ? json(o.workers_per_device) : json("auto")},
                {"devices", json::array()}};
    for (const auto& d : chosen) doc["devices"].push_back(d.to_json());
    if (o.exclusive) atomic_write(sweep_doc_path(o.root), dump_pretty(doc) + "\n", true, o.root);
    save_state();
    log_event({{"event", "sweep_start"}, {"pid", ::getpid()}, {"devices", doc["devices"]}, {"queue", queue.size()},
               {"skipped", results.size()}});
  }
  const int per_device =
      o.workers_per_device > 0
          ? o.workers_per_device
          : auto_workers_per_device(o.dsl, o.driver, std::thread::hardware_concurrency(), chosen.size());
  note(fmt::format("croq sweep: {} shapes to tune, {} done already; {} worker(s) on {}", queue.size(), results.size(),
                   chosen.size() * static_cast<size_t>(per_device), [&] {
                     std::string s;
                     for (const auto& d : chosen) s += (s.empty() ? "" : ", ") + d.id;
                     return s;
                   }()));
  std::vector<std::thread> threads;
  for (const auto& d : chosen) {
    for (int i = 0; i < per_device; ++i) threads.emplace_back([this, d] { worker(d); });
  }
  for (auto& t : threads) t.join();

  std::lock_guard<std::mutex> lock(mu);
  json summary = {{"shapes", json::array()}, {"devices", json::array()}, {"stopped", stop.load()}};
  int done = 0, failed = 0, pending = 0;
  for (auto it = state["shapes"].begin(); it != state["shapes"].end(); ++it) {
    if (!results.contains(it.key()) && !std::any_of(queue.begin(), queue.end(), [&](const QueueItem& q) { return q.key == it.key(); }))
      continue;
    const json& e = it.value();
    const std::string st = get_string(e, "status").value_or("");
    done += st == "done";
    failed += st == "failed";
    pending += st == "pending" || st == "active";
    summary["shapes"].push_back({{"key", it.key()}, {"status", st}, {"current_iter", e.value("current_iter", 0)},
                                 {"best_tflops", e.value("best_tflops", json(nullptr))},
                                 {"baseline_tflops", e.value("baseline_tflops", json(nullptr))},
                                 {"outcome", results.value(it.key(), "not run")}});
  }
  for (const auto& d : chosen) {
    json r = {{"device", d.id}, {"name", d.name}, {"healthy", true}};
    for (const auto& x : device_report) {
      if (x.value("device", "") == d.id) r = x;
    }
    summary["devices"].push_back(r);
  }
  summary["done"] = done;
  summary["failed"] = failed;
  summary["pending"] = pending;
  summary["wall_s"] = std::round(clock.elapsed_ms() / 100.0) / 10.0;
  log_event({{"event", "sweep_end"}, {"done", done}, {"failed", failed}, {"pending", pending}, {"stopped", stop.load()}});
  if (o.exclusive) {
    json doc = try_parse_json(read_file(sweep_doc_path(o.root)).value_or("{}")).value_or(json::object());
    doc["running"] = false;
    doc["finished_at"] = now_iso8601();
    doc["stopped"] = stop.load();
    doc["device_health"] = summary["devices"];
    atomic_write(sweep_doc_path(o.root), dump_pretty(doc) + "\n", true, o.root);
  }
  if (!stop && pending > 0 && queue.size() > 0) {
    summary["error"] = "no healthy device is left for the shapes still queued";
  }
  return summary;
}

}  // namespace

json run_sweep(const SweepOptions& o, const Manifest& manifest, DeviceSource& devices, const std::atomic<bool>& stop,
               const Note& note) {
  Runner r(o, manifest, devices, stop, note);
  return r.run();
}

json sweep_status(const std::filesystem::path& root) {
  StateFile sf(root);
  json state = sf.read();
  Workspace ws(root);
  json shapes = json::array();
  std::map<std::string, int> counts;
  for (auto it = state["shapes"].begin(); it != state["shapes"].end(); ++it) {
    json e = it.value();
    if (!e.is_object()) continue;
    const std::string gpu = get_string(e, "gpu").value_or(""), dsl = get_string(e, "dsl").value_or(""),
                      model = get_string(e, "model").value_or("");
    // The figures are the ledger's, never state.json's own copy: a shape without a ledger has none
    // (an edited state.json showed 888 TFLOPS and 150 rounds for a shape never tuned).
    e["current_iter"] = 0;
    e.erase("best_tflops");
    e.erase("baseline_tflops");
    if (!gpu.empty() && !dsl.empty() && !model.empty()) {
      try {
        TaskRef t = make_task(gpu, dsl, it.key(), model);
        Ledger l(ws, t);
        if (l.exists()) {
          LedgerIndex idx = l.index();
          e["current_iter"] = idx.max_round;
          if (idx.best && idx.best->tflops) e["best_tflops"] = *idx.best->tflops;
          if (idx.baseline && idx.baseline->tflops) e["baseline_tflops"] = *idx.baseline->tflops;
        }
      } catch (const Error& err) {
        e["ledger_error"] = err.what();  // a damaged ledger is named in the status, not skipped
      }
    }
    const std::string st = get_string(e, "status").value_or("pending");
    ++counts[st];
    json row = {{"key", it.key()}, {"status", st}, {"mode", e.value("mode", "")},
                {"current_iter", e.value("current_iter", 0)}, {"target_rounds", e.value("target_rounds", json(nullptr))},
                {"best_tflops", e.value("best_tflops", json(nullptr))},
                {"baseline_tflops", e.value("baseline_tflops", json(nullptr))}, {"device", e.value("device", json(nullptr))},
                {"worker_seconds", e.value("worker_seconds", 0.0)}};
    if (e.contains("error") && st != "done") row["error"] = e["error"];
    if (e.contains("ledger_error")) row["ledger_error"] = e["ledger_error"];
    shapes.push_back(row);
  }
  json out = {{"state_file", sf.path().string()}, {"shapes", shapes}, {"counts", counts}};
  auto lock = FileLock::try_acquire(sweep_lock_path(root), std::chrono::milliseconds(0), "croq sweep status", root);
  out["running"] = !lock.has_value();
  if (auto doc = read_file(sweep_doc_path(root))) {
    if (auto j = try_parse_json(*doc); j && j->is_object()) {
      out["sweep"] = *j;
      if (!lock) out["pid"] = j->value("pid", 0);
    }
  }
  return out;
}

json stop_sweep(const std::filesystem::path& root, bool wait, std::chrono::milliseconds timeout) {
  {
    auto lock = FileLock::try_acquire(sweep_lock_path(root), std::chrono::milliseconds(0), "croq sweep stop", root);
    if (lock) return {{"was_running", false}, {"stopped", false}};
  }
  auto text = read_file(sweep_doc_path(root));
  auto doc = text ? try_parse_json(*text) : std::nullopt;
  const long long pid = doc && doc->is_object() ? doc->value("pid", 0LL) : 0;
  if (pid <= 1) {
    throw Error(ExitCode::corrupt, "a sweep holds the workspace but tuning/sweep.json does not name its process",
                "the holder: " + FileLock::describe_holder(sweep_lock_path(root)));
  }
  if (::kill(static_cast<pid_t>(pid), SIGTERM) != 0) {
    throw Error(ExitCode::failure, fmt::format("could not signal the sweep (pid {}): {}", pid, std::strerror(errno)),
                "it may run as another user; stop it there");
  }
  json out = {{"was_running", true}, {"pid", pid}, {"stopped", false}};
  if (wait) {
    auto lock = FileLock::try_acquire(sweep_lock_path(root), timeout, "croq sweep stop", root);
    out["stopped"] = lock.has_value();
  }
  return out;
}

}  // namespace croq::sweep
