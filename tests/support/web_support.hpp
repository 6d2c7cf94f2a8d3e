// Helpers of the monitor's tests: ledgers filled through the real store path, a fake child
// launcher for the scheduler, waiting for a condition, and (CLI and browser tests) a `croq serve`
// process started in the background on a free port.
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "croq/ledger/ledger.hpp"
#include "croq/ledger/store.hpp"
#include "croq/util/json.hpp"
#include "croq/web/child.hpp"
#include "croq/workspace/workspace.hpp"

extern char** environ;

namespace croq::test {

// Polls `ok` every 25 ms until it holds or `limit` passes (a wait, never a timing assertion).
inline bool wait_for(const std::function<bool()>& ok, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return ok();
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Stores the baseline (iter000, `base` TFLOPS) and rounds 1..n with the given TFLOPS; a value
// <= 0 stores a COMPILE_FAIL. A round is KEEP when it beats the best so far, else DISCARD.
inline void store_rounds(const Workspace& ws, const TaskRef& t, const std::vector<double>& tflops,
                         std::optional<double> base = 100.0, int first_iter = 1) {
  Ledger ledger(ws, t);
  if (base) {
    StoreRequest b;
    b.iter = "iter000";
    b.kernel = "iter000_cublas";
    b.tflops = *base;
    b.decision = "BASELINE";
    store_round(ledger, b, std::chrono::seconds(5));
  }
  double best = 0;
  int iter = first_iter;
  static const char* bottlenecks[] = {"memory_bound", "compute_bound", "latency_bound", "mixed"};
  static const char* cats[] = {"tiling", "pipeline", "memory", "compute"};
  int k = 0;
  for (double v : tflops) {
    StoreRequest r;
    r.bottleneck = bottlenecks[k % 4];
    r.category = cats[k % 4];
    r.idea = "idea " + std::to_string(k) + ": try something";
    if (v <= 0) {
      r.iter = iter_number_name(iter);  // stored under a fresh attempt id
      r.kernel = r.iter + "_broken";
      r.decision = "COMPILE_FAIL";
    } else {
      r.iter = iter_number_name(iter);
      r.kernel = r.iter + "_k" + std::to_string(k);
      r.tflops = v;
      r.decision = v > best ? "KEEP" : "DISCARD";
      if (v > best) best = v;
      ++iter;
    }
    store_round(ledger, r, std::chrono::seconds(5));
    ++k;
  }
}

// A child launcher whose children do what the test says.
class FakeLauncher : public web::ChildLauncher {
 public:
  struct Child {
    web::LaunchSpec spec;
    web::ChildStatus status;  // running until the test (or a signal) ends it
    std::vector<int> signals;
  };
  bool fail_launch = false;
  bool term_ends_child = true;  // SIGTERM ends the child (signal 15); false: it ignores SIGTERM
  std::map<int, Child> children;
  int next_pid = 1000;

  web::Launched launch(const web::LaunchSpec& spec) override {
    web::Launched l;
    if (fail_launch) {
      l.error = "program not found";
      return l;
    }
    int pid = next_pid++;
    children[pid] = Child{spec, {}, {}};
    l.started = true;
    l.handle.pid = pid;
    l.handle.start = 42;
    l.handle.status_path = spec.status_path;
    return l;
  }
  web::ChildStatus poll(const web::ChildHandle& h) override {
    auto it = children.find(h.pid);
    if (it == children.end()) {
      web::ChildStatus v;
      v.kind = web::ChildStatus::Kind::vanished;
      return v;
    }
    return it->second.status;
  }
  void signal(const web::ChildHandle& h, int sig) override {
    auto it = children.find(h.pid);
    if (it == children.end()) return;
    it->second.signals.push_back(sig);
    if ((sig == SIGTERM && term_ends_child) || sig == SIGKILL) end(h.pid, -1, sig);
  }
  void end(int pid, int exit_code, int sig = 0) {
    auto& c = children.at(pid).status;
    c.kind = web::ChildStatus::Kind::exited;
    c.exit_code = exit_code;
    c.signal = sig;
  }
  int last_pid() const { return children.empty() ? 0 : children.rbegin()->first; }
  int running() const {
    int n = 0;
    for (const auto& [pid, c] : children) n += c.status.kind == web::ChildStatus::Kind::running;
    return n;
  }
};

// The token of the tests' monitors (requests that change something need one, on loopback too).
inline constexpr const char* k_test_token = "0123456789abcdef0123456789abcdef";

// Writes k_test_token into `dir`/token, readable only by its owner; returns the path.
inline std::string write_token_file(const std::filesystem::path& dir) {
  const std::filesystem::path p = dir / "token";
  std::ofstream(p) << k_test_token << "\n";
  std::filesystem::permissions(p, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  return p.string();
}

#ifdef CROQ_BIN
// `croq serve` in the background; its stdout and stderr go to files in `dir`.
class ServeProcess {
 public:
  ServeProcess(const std::filesystem::path& root, const std::filesystem::path& dir, std::vector<std::string> extra,
               const std::string& name = "serve")
      : m_out(dir / (name + ".out")), m_err(dir / (name + ".err")) {
    std::vector<std::string> args = {CROQ_BIN, "--root", root.string(), "serve"};
    bool has_bind = false;
    for (const auto& a : extra) has_bind = has_bind || a == "--bind";
    if (!has_bind) {
      args.push_back("--bind");
      args.push_back("127.0.0.1:0");
    }
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, m_out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, m_err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    std::vector<std::string> env_strings;
    for (char** e = environ; e && *e; ++e) {
      std::string kv(*e);
      if (kv.rfind("CROQ_ROOT=", 0) == 0 || kv.rfind("CROQ_GPU=", 0) == 0 || kv.rfind("CROQ_SERVE_", 0) == 0) continue;
      env_strings.push_back(kv);
    }
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    if (posix_spawn(&m_pid, CROQ_BIN, &fa, nullptr, argv.data(), envp.data()) != 0) m_pid = 0;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~ServeProcess() {
    if (m_pid > 0 && !m_reaped) {
      ::kill(m_pid, SIGTERM);
      for (int i = 0; i < 200 && !reap(false); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
      if (!m_reaped) {
        ::kill(m_pid, SIGKILL);
        reap(true);
      }
    }
  }
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  // Waits for the startup document on stdout; false if the process ended first.
  bool wait_ready(std::chrono::milliseconds limit = std::chrono::seconds(60)) {
    return wait_for(
        [&] {
          std::string out = slurp(m_out);
          auto nl = out.find('\n');
          if (nl != std::string::npos) {
            if (auto j = try_parse_json(out.substr(0, nl))) {
              m_doc = *j;
              m_port = m_doc.value("port", 0);
              return m_port > 0;
            }
          }
          return reap(false);  // ended: stop waiting
        },
        limit) &&
           m_port > 0;
  }
  int port() const { return m_port; }
  int pid() const { return m_pid; }
  const json& doc() const { return m_doc; }
  std::string out() const { return slurp(m_out); }
  std::string err() const { return slurp(m_err); }
  void kill(int sig) { ::kill(m_pid, sig); }
  // Waits for the exit; returns the exit code (128 + signal when killed).
  int wait() {
    reap(true);
    return m_status;
  }

 private:
  bool reap(bool block) {
    if (m_reaped) return true;
    int st = 0;
    pid_t r = ::waitpid(m_pid, &st, block ? 0 : WNOHANG);
    if (r == m_pid) {
      m_reaped = true;
      m_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      return true;
    }
    return false;
  }
  std::filesystem::path m_out, m_err;
  pid_t m_pid = 0;
  bool m_reaped = false;
  int m_status = -1;
  int m_port = 0;
  json m_doc;
};
#endif

}  // namespace croq::test
