// The monitor service (monitor.hpp).
#include "croq/web/monitor.hpp"

#include <unistd.h>

#include <fstream>
#include <map>

#include <fmt/format.h>

#include "croq/gpu/lease.hpp"
#include "croq/util/build_info.hpp"
#include "croq/util/error.hpp"
#include "croq/util/text.hpp"
#include "croq/util/time.hpp"

namespace croq::web {

namespace {

// The options with this server's owner name filled in, for the sync and the scheduler alike.
MonitorOptions with_owner(MonitorOptions o, const Workspace& ws) {
  if (o.owner.empty()) o.owner = server_owner(ws);
  o.scheduler.owner = o.owner;
  return o;
}

}  // namespace

Monitor::Monitor(const Workspace& ws, Database& db, ChildLauncher& launcher, MonitorOptions options)
    : m_ws(ws),
      m_db(db),
      m_options(with_owner(std::move(options), ws)),
      m_sync(ws, db, &m_bus, m_options.owner),
      m_scheduler(ws, db, &m_bus, launcher, m_options.scheduler),
      m_started_at(now_iso8601()),
      m_started(std::chrono::steady_clock::now()) {}

Monitor::~Monitor() { stop(); }

SyncStats Monitor::initial_sync() {
  SyncStats s = m_sync.full_scan();
  {
    std::lock_guard lock(m_mutex);
    m_last_scan = s;
    m_last_sync = s;
  }
  if (m_options.run_scheduler) m_scheduler.recover();
  return s;
}

void Monitor::step(bool full_scan) {
  SyncStats s = full_scan ? m_sync.full_scan() : m_sync.poll_known();
  {
    std::lock_guard lock(m_mutex);
    m_last_sync = s;
    if (full_scan) m_last_scan = s;
    ++m_steps;
  }
  if (m_options.run_scheduler) {
    m_scheduler.tick();
    // A child that started or stopped may already have written: pick it up in the same step.
  }
}

void Monitor::start() {
  {
    std::lock_guard lock(m_mutex);
    m_stop = false;
  }
  m_thread = std::thread([this] { loop(); });
  if (m_options.query_gpus) m_gpu_thread = std::thread([this] { gpu_loop(); });
}

void Monitor::stop() {
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
  }
  m_cv.notify_all();
  if (m_thread.joinable()) m_thread.join();
  if (m_gpu_thread.joinable()) m_gpu_thread.join();
}

void Monitor::wake() {
  {
    std::lock_guard lock(m_mutex);
    m_woken = true;
  }
  m_cv.notify_all();
}

void Monitor::loop() {
  long long n = 0;
  while (true) {
    {
      std::unique_lock lock(m_mutex);
      m_cv.wait_for(lock, std::chrono::milliseconds(m_options.poll_ms), [this] { return m_stop || m_woken; });
      if (m_stop) return;
      m_woken = false;
    }
    ++n;
    try {
      step(m_options.scan_every > 0 && n % m_options.scan_every == 0);
    } catch (const std::exception& e) {
      // A failing step (disk full, a damaged file) is reported and retried at the next poll.
      m_bus.publish("sync", "", {{"error", e.what()}});
    }
  }
}

void Monitor::gpu_loop() {
  while (true) {
    std::string error;
    std::vector<GpuInfo> gpus;
    try {
      gpus = query_gpus(&error);
    } catch (const std::exception& e) {
      error = e.what();
    }
    {
      std::unique_lock lock(m_mutex);
      m_gpus = std::move(gpus);
      m_gpu_error = error;
      m_gpu_queried_at = now_iso8601();
      m_cv.wait_for(lock, std::chrono::seconds(10), [this] { return m_stop; });
      if (m_stop) return;
    }
  }
}

void Monitor::check_driver_available(const TaskSpec& spec) const {
  if (spec.driver.kind == "tune" && !m_options.verbs.count("tune")) {
    throw Error(ExitCode::usage, "driver kind 'tune' needs `croq tune`, which this build does not have",
                "use driver kind 'command' with the program to run");
  }
  if (spec.driver.kind == "agent" && !m_options.verbs.count("agent run")) {
    throw Error(ExitCode::usage, "driver kind 'agent' needs `croq agent run`, which this build does not have",
                "use driver kind 'command' with the agent's command line");
  }
}

TaskRow Monitor::create_task(const json& body) {
  TaskSpec spec = TaskSpec::from_json(body, m_options.default_gpu);
  check_driver_available(spec);
  auto no_sync_meanwhile = m_sync.hold();
  // A folder made outside the monitor is adopted first, so that it is not created twice.
  std::error_code ec;
  if (fs::exists(m_ws.kind_dir(spec.task(), ArtifactKind::logs), ec)) {
    TaskRow existing = m_sync.adopt(spec.task());
    throw Error(ExitCode::conflict, fmt::format("task {} exists (task_uid {})", existing.key, existing.uid),
                "set its driver with PATCH /api/v1/tasks/" + existing.uid);
  }
  TaskRow row = m_scheduler.create(spec);
  m_sync.sync_task(row);
  wake();
  return *m_db.task(row.uid);
}

TaskRow Monitor::update_task(const std::string& uid, const json& body) {
  auto row = m_db.task(uid);
  if (!row) throw_not_found(fmt::format("no task {}", uid));
  m_scheduler.require_own_spec(*row);
  if (!body.is_object()) throw_usage("the body must be a JSON object");
  // A patch: the fields given replace the task's; identity fields may be repeated unchanged.
  json merged = row->spec;
  for (auto it = body.begin(); it != body.end(); ++it) merged[it.key()] = it.value();
  TaskSpec spec = TaskSpec::from_json(merged, row->gpu);
  check_driver_available(spec);
  TaskRow out = m_scheduler.update_spec(uid, spec);
  wake();
  return out;
}

ActResult Monitor::act(const std::string& uid, const std::string& action) {
  auto row = m_db.task(uid);
  if (!row) throw_not_found(fmt::format("no task {}", uid));
  ActResult out;
  if (!owns(*row)) {
    // Another server's task: its scheduler carries the request out at its next tick.
    out.request = m_scheduler.request(uid, action);
    out.task = *m_db.task(uid);
    return out;
  }
  out.task = m_scheduler.act(uid, action);
  wake();
  return out;
}

json Monitor::task_json(const TaskRow& r) const {
  json j;
  j["uid"] = r.uid;
  j["key"] = r.key;
  j["gpu"] = r.gpu;
  j["dsl"] = r.dsl;
  j["shape_key"] = r.shape_key;
  j["model"] = r.model;
  j["origin"] = r.origin;
  j["owner"] = r.owner;
  j["this_server"] = owns(r);
  j["state"] = r.state;
  j["reason"] = r.reason;
  j["spec"] = r.spec;
  j["created_at"] = r.created_at;
  j["updated_at"] = r.updated_at;
  j["queued_at"] = r.queued_at;
  j["not_before"] = r.not_before;
  j["stop_target"] = r.stop_target;
  j["runs"] = r.runs;
  j["crash_count"] = r.crash_count;
  j["park_count"] = r.park_count;
  double secs = r.run_seconds;
  if (!r.run_started_at.empty()) {
    if (auto t = parse_iso8601(r.run_started_at)) {
      secs += std::max(0.0, std::chrono::duration<double>(std::chrono::system_clock::now() - *t).count());
    }
  }
  j["run_seconds"] = secs;
  j["pid"] = r.pid;
  j["run_started_at"] = r.run_started_at;
  j["last_exit"] = r.last_exit;
  j["stats"] = r.stats;
  return j;
}

void Monitor::set_server_fact(const std::string& key, const json& value) {
  std::lock_guard lock(m_mutex);
  m_options.server_facts[key] = value;
}

namespace {

// Whether a device's lease (the one exclusive lock every GPU step takes: gpu/lease.hpp) is held
// now, and by whom. Probed with a non-blocking flock that is released at once; nothing is written.
json lease_state(int index, const std::string& device_id) {
  json j = DeviceLease::state(device_id).to_json();
  j["index"] = index;
  return j;
}

}  // namespace

json Monitor::system_info() {
  json j;
  json server;
  {
    std::lock_guard lock(m_mutex);
    server = m_options.server_facts;
  }
  server["version"] = build_info::k_version;
  server["commit"] = build_info::git_sha();
  server["pid"] = ::getpid();
  server["started_at"] = m_started_at;
  server["uptime_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_started).count();
  server["root"] = m_ws.root().string();
  server["owner"] = m_options.owner;
  j["server"] = server;
  try {
    j["database"] = m_db.info();
  } catch (const std::exception& e) {
    j["database"] = {{"error", e.what()}};
  }
  {
    std::lock_guard lock(m_mutex);
    j["sync"] = {{"poll_ms", m_options.poll_ms},
                 {"scan_every", m_options.scan_every},
                 {"steps", m_steps},
                 {"last", m_last_sync.to_json()},
                 {"last_scan", m_last_scan.to_json()}};
    json gpus = json::array();
    for (const auto& g : m_gpus) {
      gpus.push_back({{"index", g.index},
                      {"name", g.name},
                      {"uuid", g.uuid},
                      {"compute_cap", g.compute_cap},
                      {"key", make_gpu_key(g.name, g.compute_cap)},
                      {"memory_total_mib", g.memory_total_mib},
                      {"memory_used_mib", g.memory_used_mib},
                      {"utilization_pct", g.utilization_pct},
                      {"temperature_c", g.temperature_c},
                      {"sm_clock_mhz", g.sm_clock_mhz}});
    }
    j["gpus"] = {{"list", gpus},
                 {"error", m_gpu_error},
                 {"queried_at", m_gpu_queried_at},
                 {"enabled", m_options.query_gpus}};
  }
  json devices = m_scheduler.devices();
  j["scheduler"] = {{"enabled", m_options.run_scheduler},
                    {"max_running", m_options.scheduler.max_running},
                    {"devices", devices}};
  // The leases of the GPUs found (by UUID, as croq measure and croq profile take them) and of the
  // numeric devices tasks name (by the UUID of that index when nvidia-smi listed it, else gpu<index>).
  std::map<int, std::string> ids;
  for (const auto& g : j["gpus"]["list"]) {
    const int index = g.value("index", 0);
    const std::string uuid = g.value("uuid", "");
    ids[index] = uuid.empty() ? "gpu" + std::to_string(index) : uuid;
  }
  for (auto it = devices.begin(); it != devices.end(); ++it) {
    const std::string& d = it.key();
    if (!d.empty() && d.size() < 4 && d.find_first_not_of("0123456789") == std::string::npos) {
      const int index = std::stoi(d);
      if (!ids.count(index)) ids[index] = "gpu" + std::to_string(index);
    }
  }
  json leases = json::array();
  for (const auto& [index, id] : ids) leases.push_back(lease_state(index, id));
  j["leases"] = leases;
  json host;
  char name[256] = {0};
  if (::gethostname(name, sizeof name - 1) == 0) host["hostname"] = name;
  host["cpus"] = std::thread::hardware_concurrency();
  if (auto t = std::ifstream("/proc/loadavg")) {
    double a = 0, b = 0, c = 0;
    t >> a >> b >> c;
    host["loadavg"] = {a, b, c};
  }
  if (auto m = std::ifstream("/proc/meminfo")) {
    std::string key;
    long long value = 0;
    std::string unit;
    while (m >> key >> value >> unit) {
      if (key == "MemTotal:") host["mem_total_mib"] = value / 1024;
      if (key == "MemAvailable:") host["mem_available_mib"] = value / 1024;
    }
  }
  j["host"] = host;
  j["events"] = {{"last_id", m_bus.last_id()}, {"clients", m_bus.clients()}};
  return j;
}

}  // namespace croq::web
