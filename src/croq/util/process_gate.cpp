// The child waiting at croq's gate (process_gate.hpp).
#include "croq/util/process_gate.hpp"

#include <atomic>
#include <exception>
#include <filesystem>
#include <thread>

#include "croq/util/fs.hpp"

namespace croq {

ProcessResult run_at_gate(ProcessSpec spec, const std::string& go, const std::function<void()>& gate,
                          std::chrono::milliseconds gate_timeout, ProcessRunner& runner, bool& opened) {
  opened = false;
  const std::string ready = go + ".ready";
  struct RemoveGate {
    std::string go, ready;
    ~RemoveGate() {
      std::error_code ec;
      std::filesystem::remove(go, ec);
      std::filesystem::remove(ready, ec);
    }
  } cleanup{go, ready};
  spec.argv.insert(spec.argv.end(), {"--go-file", go});
  spec.timeout += gate_timeout;
  std::atomic<bool> stop{false}, done{false};
  spec.should_stop = [&stop] { return stop.load(); };
  ProcessResult r;
  std::exception_ptr thrown;
  std::thread child([&] {
    try {
      r = runner.run(spec);
    } catch (...) {
      thrown = std::current_exception();
    }
    done = true;
  });
  while (!done.load() && !std::filesystem::exists(ready)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (!done.load()) {
    try {
      gate();
      atomic_write(go, "go\n", false);
      opened = true;
    } catch (...) {
      thrown = std::current_exception();
      stop = true;  // the child waits at the gate: stopped, not left waiting
    }
  }
  child.join();
  if (thrown) std::rethrow_exception(thrown);
  return r;
}

}  // namespace croq
