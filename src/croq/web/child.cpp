// The supervised launcher of child.hpp: the detached start, the supervisor and the signals are
// util/process's (ProcessRunner::start_detached); this file maps them to the scheduler's runs.
#include "croq/web/child.hpp"

#include <fmt/format.h>

#include "croq/util/fs.hpp"
#include "croq/util/json.hpp"

namespace croq::web {

std::optional<ChildStatus> read_child_status(const std::filesystem::path& status_path) {
  // Absent: still running (or gone without one). Present but unreadable or not JSON: the
  // supervisor writes it atomically, so that is damage; poll() then reports the run as vanished.
  auto text = read_file(status_path);
  if (!text) return std::nullopt;
  auto j = try_parse_json(*text);
  if (!j || !j->is_object()) return std::nullopt;
  ChildStatus s;
  s.kind = ChildStatus::Kind::exited;
  s.exit_code = static_cast<int>(get_integer(*j, "exit_code").value_or(-1));
  s.signal = static_cast<int>(get_integer(*j, "signal").value_or(0));
  return s;
}

Launched SupervisedLauncher::launch(const LaunchSpec& spec) {
  DetachedSpec d;
  d.argv = spec.argv;
  d.cwd = spec.cwd;
  d.env_set = spec.env_set;
  d.log_path = spec.log_path;
  d.status_path = spec.status_path;
  d.pid_path = spec.pid_path;
  d.who = "croq serve";
  DetachedProcess p = m_runner.start_detached(d);
  Launched out;
  out.started = p.started;
  out.error = p.error;
  out.handle.pid = p.pid;
  out.handle.start = p.start_time;
  out.handle.status_path = spec.status_path;
  return out;
}

ChildStatus SupervisedLauncher::poll(const ChildHandle& h) {
  reap_if_exited(h.pid);  // our own supervisor; a no-op for an adopted one
  if (auto s = read_child_status(h.status_path)) return *s;
  if (h.pid > 0) {
    auto start = process_start_time(h.pid);
    char state = process_state(h.pid);
    if (start && (h.start == 0 || *start == h.start) && state != 'Z' && state != 0) return ChildStatus{};
  }
  // Gone: it may have written its status between the two reads.
  if (auto s = read_child_status(h.status_path)) return *s;
  ChildStatus v;
  v.kind = ChildStatus::Kind::vanished;
  return v;
}

void SupervisedLauncher::signal(const ChildHandle& h, int sig) { signal_process_group(h.pid, h.start, sig); }

}  // namespace croq::web
