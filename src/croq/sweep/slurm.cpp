// Slurm's commands (slurm.hpp).
#include "croq/sweep/slurm.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/util/process.hpp"
#include "croq/util/text.hpp"

namespace croq::sweep {

json SlurmTask::to_json() const {
  json j = {{"index", index}, {"state", state}, {"source", source}};
  if (!reason.empty() && reason != "None") j["reason"] = reason;
  if (!node.empty() && node != "(null)") j["node"] = node;
  if (!exit_code.empty()) j["exit_code"] = exit_code;
  if (!elapsed.empty()) j["elapsed"] = elapsed;
  return j;
}

json SlurmJobView::to_json() const {
  json t = json::array();
  for (const auto& x : tasks) t.push_back(x.to_json());
  return {{"tasks", t}, {"accounting", accounting}, {"notes", notes}};
}

bool slurm_state_is_live(const std::string& state) {
  static const char* live[] = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED",
                               "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED",
                               "RESV_DEL_HOLD"};
  return std::any_of(std::begin(live), std::end(live), [&](const char* s) { return state == s; });
}

namespace {

std::vector<std::string> split_on(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t at = text.find(sep, start);
    out.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) break;
    start = at + 1;
  }
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "CANCELLED by 1001" -> "CANCELLED"; "COMPLETED+" -> "COMPLETED".
std::string state_word(const std::string& s) {
  std::string w = trim(s);
  w = w.substr(0, w.find(' '));
  while (!w.empty() && w.back() == '+') w.pop_back();
  return w;
}

}  // namespace

std::vector<int> expand_array_indexes(const std::string& spec_in) {
  std::string spec = trim(spec_in);
  spec = spec.substr(0, spec.find('%'));  // the throttle of "0-9%2", "[0-9]%2"
  if (!spec.empty() && spec.front() == '[') spec.erase(0, 1);
  if (!spec.empty() && spec.back() == ']') spec.pop_back();
  std::vector<int> out;
  if (spec.empty()) return out;
  for (const auto& part : split_on(spec, ',')) {
    const size_t dash = part.find('-');
    if (dash == std::string::npos) {
      if (!all_digits(part)) return {};
      out.push_back(std::stoi(part));
      continue;
    }
    std::string a = part.substr(0, dash), b = part.substr(dash + 1);
    const size_t colon = b.find(':');  // "0-15:4": a step
    int step = 1;
    if (colon != std::string::npos) {
      if (!all_digits(b.substr(colon + 1))) return {};
      step = std::max(1, std::stoi(b.substr(colon + 1)));
      b = b.substr(0, colon);
    }
    if (!all_digits(a) || !all_digits(b)) return {};
    const int lo = std::stoi(a), hi = std::stoi(b);
    if (hi < lo || hi - lo > 1000000) return {};
    for (int i = lo; i <= hi; i += step) out.push_back(i);
  }
  return out;
}

std::vector<SlurmTask> parse_squeue(const std::string& out) {
  std::vector<SlurmTask> tasks;
  for (const auto& line : split_lines(out)) {
    auto f = split_on(trim(line), '|');
    if (f.size() < 6) continue;
    for (int idx : expand_array_indexes(f[1])) {
      SlurmTask t;
      t.index = idx;
      t.state = state_word(f[2]);
      t.reason = f[3];
      t.node = f[4];
      t.elapsed = f[5];
      t.source = "squeue";
      tasks.push_back(t);
    }
  }
  return tasks;
}

std::vector<SlurmTask> parse_sacct(const std::string& out) {
  std::vector<SlurmTask> tasks;
  for (const auto& line : split_lines(out)) {
    auto f = split_on(trim(line), '|');
    if (f.size() < 5) continue;
    const size_t us = f[0].find('_');
    if (us == std::string::npos) continue;  // not an array task
    for (int idx : expand_array_indexes(f[0].substr(us + 1))) {
      SlurmTask t;
      t.index = idx;
      t.state = state_word(f[1]);
      t.exit_code = f[2];
      t.elapsed = f[3];
      t.node = f[4] == "None assigned" ? "" : f[4];
      t.source = "sacct";
      tasks.push_back(t);
    }
  }
  return tasks;
}

std::vector<SlurmTask> parse_scontrol_jobs(const std::string& out) {
  std::vector<SlurmTask> tasks;
  for (const auto& line : split_lines(out)) {
    std::map<std::string, std::string> kv;
    for (const auto& word : split_on(trim(line), ' ')) {
      const size_t eq = word.find('=');
      if (eq == std::string::npos || eq == 0) continue;
      kv.emplace(word.substr(0, eq), word.substr(eq + 1));  // the first of a repeated key
    }
    if (!kv.count("ArrayTaskId") || !kv.count("JobState")) continue;
    for (int idx : expand_array_indexes(kv["ArrayTaskId"])) {
      SlurmTask t;
      t.index = idx;
      t.state = state_word(kv["JobState"]);
      t.reason = kv["Reason"];
      t.node = kv["NodeList"] == "(null)" ? "" : kv["NodeList"];
      if (!slurm_state_is_live(t.state)) t.exit_code = kv["ExitCode"];
      t.elapsed = kv["RunTime"];
      t.source = "scontrol";
      tasks.push_back(t);
    }
  }
  return tasks;
}

namespace {

ProcessResult run_slurm(const std::vector<std::string>& argv, const std::filesystem::path& cwd = {}) {
  ProcessSpec spec;
  spec.argv = argv;
  if (!cwd.empty()) spec.cwd = cwd;
  spec.timeout = std::chrono::milliseconds(60000);
  spec.max_capture_bytes = 8u << 20;
  return process_runner().run(spec);
}

std::string last_line(const std::string& text) {
  auto lines = split_lines(text);
  while (!lines.empty() && trim(lines.back()).empty()) lines.pop_back();
  return lines.empty() ? std::string() : trim(lines.back());
}

std::string why(const ProcessResult& r) {
  if (!r.started) return r.spawn_error;
  std::string msg = last_line(r.err);
  if (msg.empty()) msg = last_line(r.out);
  return msg.empty() ? r.describe() : msg;
}

bool invalid_job(const ProcessResult& r) {
  return r.started && (r.err.find("Invalid job id") != std::string::npos ||
                       r.out.find("Invalid job id") != std::string::npos);
}

void check_job_id(const std::string& job_id) {
  if (!all_digits(job_id)) throw Error(ExitCode::usage, fmt::format("'{}' is not a Slurm job id", job_id));
}

}  // namespace

std::string CommandSlurm::submit(const std::filesystem::path& script, const std::filesystem::path& cwd) {
  ProcessResult r = run_slurm({"sbatch", "--parsable", script.string()}, cwd);
  if (!r.started) {
    throw Error(ExitCode::no_device, "sbatch cannot be started: " + r.spawn_error,
                "run croq where Slurm's commands are on PATH (Debian: slurm-client), on a login node of the cluster");
  }
  if (!r.ok()) {
    throw Error(ExitCode::failure, "sbatch refused the job: " + why(r),
                fmt::format("check --partition, --account, --time and --sbatch-arg; the script is {}", script.string()));
  }
  std::string id = trim(last_line(r.out));
  id = id.substr(0, id.find(';'));  // "123;cluster"
  if (!all_digits(id)) {
    throw Error(ExitCode::failure, fmt::format("sbatch answered '{}', not a job id", trim(r.out)),
                "submit the script by hand to see what sbatch says: sbatch " + script.string());
  }
  return id;
}

SlurmJobView CommandSlurm::job(const std::string& job_id) {
  check_job_id(job_id);
  SlurmJobView v;
  std::map<int, SlurmTask> by_index;
  ProcessResult q = run_slurm({"squeue", "-h", "-r", "-j", job_id, "-o", "%F|%K|%T|%r|%N|%M"});
  if (q.ok()) {
    for (auto& t : parse_squeue(q.out)) by_index[t.index] = t;
  } else if (!invalid_job(q)) {
    v.notes.push_back("squeue: " + why(q));
  }
  auto add_ended = [&](const std::vector<SlurmTask>& tasks) {
    for (const auto& t : tasks) {
      auto it = by_index.find(t.index);
      if (it != by_index.end() && slurm_state_is_live(it->second.state)) continue;  // squeue's live view wins
      by_index[t.index] = t;
    }
  };
  ProcessResult a = run_slurm({"sacct", "-n", "-P", "-X", "-j", job_id, "-o", "JobID,State,ExitCode,Elapsed,NodeList"});
  if (a.ok()) {
    v.accounting = "sacct";
    add_ended(parse_sacct(a.out));
  } else {
    ProcessResult c = run_slurm({"scontrol", "-o", "show", "job", job_id});
    if (c.ok()) {
      v.accounting = "scontrol";
      add_ended(parse_scontrol_jobs(c.out));
    } else if (invalid_job(c)) {
      v.notes.push_back(fmt::format("sacct: {}; the controller no longer remembers job {}", why(a), job_id));
    } else {
      v.notes.push_back("sacct: " + why(a));
      v.notes.push_back("scontrol: " + why(c));
    }
  }
  for (auto& [i, t] : by_index) v.tasks.push_back(t);
  return v;
}

void CommandSlurm::cancel(const std::string& job_id) {
  check_job_id(job_id);
  ProcessResult r = run_slurm({"scancel", job_id});
  if (!r.ok()) {
    throw Error(ExitCode::failure, fmt::format("scancel {} failed: {}", job_id, why(r)),
                "cancel it by hand (scancel " + job_id + "); the tasks' shapes resume on the next run");
  }
}

}  // namespace croq::sweep
