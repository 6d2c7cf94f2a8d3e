// croq_sweep_driver: a fast driver for the sweep's tests and benchmark (croq sweep run --driver
// command). It works a task like croq tune does, without compiling: for each round it takes the
// lease of the device it was pinned to (CROQ_DEVICE, as a worker's child sees it), holds it for
// the "measurement" (HOLD_MS), lets it go, and stores the round through the ledger's store_round
// -- the same crash-safe call as `croq store-round`. It prints tune's JSON round events on stderr
// and records its device and pid in each record (extra.device, extra.pid), so a test can check
// that every round of a shape ran on the device its worker was pinned to.
//
// Usage: croq_sweep_driver ROOT GPU DSL MODEL KEY TARGET [HOLD_MS] [BUILD_MS]
//   BUILD_MS: CPU time before each measurement (a build), default 0.
// CROQ_SWEEP_DRIVER_FAIL_ON=<device>: on that device, after one round, the driver marks the device
// unhealthy in CROQ_SWEEP_FAKE_HEALTH and exits 1 (a GPU lost under a running tune).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "croq/gpu/lease.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/ledger/store.hpp"
#include "croq/util/error.hpp"
#include "croq/util/json.hpp"

int main(int argc, char** argv) {
  using namespace croq;
  if (argc < 7) {
    std::fprintf(stderr, "usage: croq_sweep_driver ROOT GPU DSL MODEL KEY TARGET [HOLD_MS] [BUILD_MS]\n");
    return 2;
  }
  const char* dev = std::getenv("CROQ_DEVICE");
  if (!dev || !*dev) {
    std::fprintf(stderr, "croq_sweep_driver: CROQ_DEVICE is not set (the sweep pins each worker's driver)\n");
    return 2;
  }
  // CROQ_SWEEP_DRIVER_LEASE: measure on this lease instead of the pinned device's (the scheduling
  // benchmark's "shared" configuration: several workers on one device).
  const char* lease_env = std::getenv("CROQ_SWEEP_DRIVER_LEASE");
  const std::string lease_id = lease_env && *lease_env ? lease_env : dev;
  const int target = std::atoi(argv[6]);
  const int hold_ms = argc > 7 ? std::atoi(argv[7]) : 20;
  const int build_ms = argc > 8 ? std::atoi(argv[8]) : 0;
  try {
    Workspace ws(argv[1]);
    TaskRef task = make_task(argv[2], argv[3], argv[5], argv[4]);
    Ledger ledger(ws, task);
    const auto wait = std::chrono::milliseconds(60000);
    auto measure = [&](const std::string& what) {
      if (build_ms > 0) {  // a build: CPU work, no lease
        auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(build_ms);
        volatile double x = 0;
        while (std::chrono::steady_clock::now() < until) x = x + 1;
      }
      DeviceLease lease = DeviceLease::acquire(lease_id, "croq_sweep_driver " + task.shape.text + " " + what, wait);
      std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
    };
    const json extra = {{"device", dev}, {"pid", static_cast<long long>(::getpid())}};
    if (!ledger.exists() || !ledger.index().baseline) {
      measure("baseline");
      StoreRequest q;
      q.iter = "iter000";
      q.kernel = "iter000_library";
      q.tflops = 1.0;
      q.decision = "BASELINE";
      q.bottleneck = "n/a";
      q.idea = "library baseline";
      q.extra = extra;
      store_round(ledger, q, wait);
    }
    for (int round = ledger.index().max_round; round < target; round = ledger.index().max_round) {
      const int n = ledger.reserve_iter(wait);
      const int next = round + 1;
      measure("iter" + std::to_string(n));
      StoreRequest q;
      q.iter = q.kernel = IterId{n, "r" + std::to_string(next)}.name();
      q.tflops = 1.0 + 0.01 * next;
      q.decision = next % 3 == 0 ? "DISCARD" : "KEEP";
      q.bottleneck = "compute_bound";
      q.idea = "round " + std::to_string(next) + " of " + task.shape.text;
      q.extra = extra;
      StoreRoundResult r = store_round(ledger, q, wait);
      json e = {{"event", "round"}, {"round", r.outcome.record.round}, {"kernel", q.kernel}, {"decision", q.decision},
                {"tflops", *q.tflops}, {"best", r.outcome.index.best && r.outcome.index.best->tflops
                                                    ? json(*r.outcome.index.best->tflops) : json(nullptr)},
                {"baseline", 1.0}};
      std::fprintf(stderr, "%s\n", dump_compact(e).c_str());
      std::fflush(stderr);
      // A device that fails under the driver (tests): marked unhealthy, the driver dies.
      const char* fail_on = std::getenv("CROQ_SWEEP_DRIVER_FAIL_ON");
      const char* health = std::getenv("CROQ_SWEEP_FAKE_HEALTH");
      if (fail_on && health && std::string(fail_on) == dev) {
        FILE* f = std::fopen(health, "a");
        if (f) {
          std::fprintf(f, "%s driver lost the device (test)\n", dev);
          std::fclose(f);
        }
        return 1;
      }
    }
    std::printf("{\"rounds\": %d}\n", ledger.index().max_round);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "croq_sweep_driver: %s\n", e.what());
    return 1;
  }
}
