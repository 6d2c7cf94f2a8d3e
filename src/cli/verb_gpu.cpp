// croq gpu key, croq gpu check and croq gpu contention (the seeds' detect_gpu, gpu_check and
// gpu_contention): their options; they run as run_gpu_key, run_gpu_check and run_gpu_contention
// (croq/gpu/gpu_steps.hpp). croq gpu lease runs a command while holding the device's lease. None
// of them ever signals another user's process, resets a GPU or uses sudo.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/gpu/gpu_steps.hpp"
#include "croq/gpu/lease.hpp"
#include "croq/util/process.hpp"
#include "croq/util/time.hpp"

namespace croq::cli {

VerbRunner setup_gpu_key(CLI::App& app) {
  auto device = std::make_shared<std::string>();
  app.add_option("--device", *device, "GPU index or UUID (default: CUDA_VISIBLE_DEVICES' first, else 0)");
  return [device](Context& ctx) { return print_step(ctx, run_gpu_key(*device, step_deps(ctx))); };
}

VerbRunner setup_gpu_check(CLI::App& app) {
  struct Opts {
    std::string device;
    bool wait = false;
    double timeout_s = 120;
    double interval_s = 2;
    bool reset = false;
    bool kill_others = false;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--device", o->device, "GPU index or UUID (default: CUDA_VISIBLE_DEVICES' first, else 0)");
  app.add_flag("--wait", o->wait, "poll until the GPU is idle (or --timeout)");
  app.add_option("--timeout", o->timeout_s, "seconds to wait with --wait")->default_val(120)->check(CLI::Range(0.0, 86400.0));
  app.add_option("--interval", o->interval_s, "seconds between polls")->default_val(2)->check(CLI::Range(0.05, 600.0));
  app.add_flag("--reset", o->reset, "(the original skill's option; refused: croq never resets a GPU)");
  app.add_flag("--kill-others", o->kill_others, "(the original skill's option; refused: croq never ends another's process)");
  return [o](Context& ctx) {
    if (o->reset) {
      throw_usage("croq never resets a GPU: it needs root and ends every user's work on it",
                  "if the GPU is stuck, tell its administrator; `croq gpu contention --kill` ends croq's own stale processes");
    }
    if (o->kill_others) {
      throw_usage("croq never ends another process on the GPU",
                  "`croq gpu contention --kill` ends croq's own stale processes only");
    }
    GpuCheckOptions c;
    c.device = o->device;
    c.wait = o->wait;
    c.timeout_s = o->timeout_s;
    c.interval_s = o->interval_s;
    return print_step(ctx, run_gpu_check(c, step_deps(ctx)));
  };
}

VerbRunner setup_gpu_contention(CLI::App& app) {
  struct Opts {
    std::string device;
    bool json_flag = false;
    bool kill = false;
    std::vector<int> except;
    bool kill_ours = false;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--device", o->device, "only this GPU (index or UUID; default: every GPU)");
  app.add_flag("--json", o->json_flag, "(the original skill's option: the output is always one JSON document)");
  app.add_flag("--kill", o->kill, "end croq's own stale processes (orphaned runners and candidate binaries) only");
  app.add_option("--except", o->except, "a pid never to end (repeatable)");
  app.add_flag("--kill-ours", o->kill_ours, "(the original skill's option; refused: croq ends only its stale processes)");
  return [o](Context& ctx) {
    if (o->kill_ours) {
      throw_usage("--kill-ours is not available: a croq process that is still waited for is never ended",
                  "--kill ends the stale ones (whose croq parent is gone)");
    }
    GpuContentionOptions c;
    c.device = o->device;
    c.kill = o->kill;
    c.except = o->except;
    return print_step(ctx, run_gpu_contention(c, step_deps(ctx)));
  };
}

VerbRunner setup_gpu_lease(CLI::App& app) {
  struct Opts {
    std::string device;
    double timeout_s = 1800;
    std::string purpose;
    bool history = false;
    std::vector<std::string> command;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--device", o->device, "GPU index or UUID (default: CUDA_VISIBLE_DEVICES' first, else 0); cpu: the CPU's lease");
  app.add_option("--timeout", o->timeout_s, "seconds to wait for the lease")->default_val(1800)->check(CLI::Range(0.0, 86400.0));
  app.add_option("--purpose", o->purpose, "what the holder line says (default: the command)");
  app.add_flag("--history", o->history, "print the device's lease history instead of running a command");
  app.add_option("command", o->command, "the command to run while holding the lease (after --)");
  return [o](Context& ctx) {
    const std::string id = o->device == "cpu" ? std::string("cpu") : resolve_gpu_lease_id(o->device);
    if (o->history) {
      if (!o->command.empty()) throw_usage("--history runs no command", "drop the command, or drop --history");
      json doc = {{"device_id", id}, {"file", DeviceLease::history_path(id).string()}, {"history", DeviceLease::history(id)},
                  {"state", DeviceLease::state(id).to_json()}};
      ctx.emit(doc);
      return ExitCode::ok;
    }
    if (o->command.empty()) throw_usage("no command to run", "croq gpu lease [--device N] -- COMMAND ARGS...");
    const std::string purpose = o->purpose.empty() ? "croq gpu lease -- " + shell_join(o->command) : o->purpose;
    DeviceLease lease = DeviceLease::acquire(
        id, purpose, std::chrono::milliseconds(static_cast<long long>(o->timeout_s * 1000)),
        [&](const std::string& holder) {
          ctx.note(fmt::format("croq gpu lease: waiting for device {}: held by {}", id,
                               holder.empty() ? "another process" : holder));
        });
    // The command inherits stdin and stderr; its stdout goes to stderr, so that croq's own stdout
    // stays one JSON document. The lock's descriptor is close-on-exec: the lease stays with croq,
    // which holds it until the command has ended.
    std::fflush(nullptr);
    ProcessSpec spec;
    spec.argv = o->command;
    spec.stdout_to_stderr = true;
    spec.new_process_group = false;  // the terminal's Ctrl-C reaches the command as it reaches croq
    ProcessResult r = process_runner().run(spec);
    if (!r.started) std::fprintf(stderr, "croq gpu lease: cannot run %s: %s\n", o->command[0].c_str(), r.spawn_error.c_str());
    const bool exited = !r.started || r.term_signal == 0;
    const int exit_code = r.started ? r.exit_code : 127;
    json doc;
    doc["device_id"] = id;
    doc["command"] = o->command;
    doc["waited_ms"] = lease.waited().count();
    doc["held_ms"] = std::round(r.wall_ms);
    doc["exit_code"] = exited ? json(exit_code) : json(nullptr);
    doc["signal"] = exited ? json(nullptr) : json(r.term_signal);
    ctx.emit(doc);
    const bool ok = exited && exit_code == 0;
    return ok ? ExitCode::ok : ExitCode::failure;
  };
}

}  // namespace croq::cli
