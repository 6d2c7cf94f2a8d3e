// croq_store_loop: a test helper that stores rounds into one task in a loop, through the same
// library calls as `croq next-iter`, `croq checkpoint write` and `croq store-round`, and prints
// "stored <seq>" after each store returns. The crash-safety test kills it with SIGKILL at random
// moments and checks that what survives is a prefix of what it stored.
//
// Usage: croq_store_loop ROOT FIRST_SEQ [COUNT]   (COUNT 0 or absent: until killed)
// Prints "ready" once started, then "stored <seq>" after each store.
//
// Usage: croq_store_loop --worker W ROOT COUNT
// One of several concurrent writers: COUNT rounds of (reserve the next iteration, store it) into
// the concurrency test's task, each with the idea "worker W round I".
// Round <seq> is fully determined by seq (see expected_idea), so a checker can tell exactly what
// each surviving record must hold.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "croq/ledger/documents.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/ledger/store.hpp"
#include "croq/util/error.hpp"
#include "store_loop.hpp"

namespace {

int run_worker(int argc, char** argv) {
  using namespace croq;
  if (argc != 5) {
    std::fprintf(stderr, "usage: croq_store_loop --worker W ROOT COUNT\n");
    return 2;
  }
  const long worker = std::atol(argv[2]);
  Workspace ws(argv[3]);
  const long count = std::atol(argv[4]);
  TaskRef task = make_task(test::k_loop_gpu, "cuda", test::k_race_shape, test::k_race_model);
  Ledger ledger(ws, task);
  const auto wait = std::chrono::milliseconds(120000);
  for (long i = 0; i < count; ++i) {
    const int n = ledger.reserve_iter(wait);
    StoreRequest q;
    q.kernel = q.iter = IterId{n, "w" + std::to_string(worker) + "_" + std::to_string(i)}.name();
    q.decision = i % 2 ? "DISCARD" : "KEEP";
    q.tflops = 100.0 + static_cast<double>(worker);
    q.bottleneck = "compute_bound";
    q.idea = test::worker_idea(worker, i);
    store_round(ledger, q, wait);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--worker") {
    try {
      return run_worker(argc, argv);
    } catch (const croq::Error& e) {
      std::fprintf(stderr, "croq_store_loop: %s\n", e.what());
      return 1;
    }
  }
  if (argc < 3) {
    std::fprintf(stderr, "usage: croq_store_loop ROOT FIRST_SEQ [COUNT]\n");
    return 2;
  }
  using namespace croq;
  try {
    Workspace ws(argv[1]);
    TaskRef task = make_task(test::k_loop_gpu, "cuda", test::k_loop_shape, test::k_loop_model);
    Ledger ledger(ws, task);
    const long first = std::atol(argv[2]);
    const long count = argc > 3 ? std::atol(argv[3]) : 0;
    const auto wait = std::chrono::milliseconds(30000);
    // The test starts its random delay from here, not from the (slow, variable) process start.
    std::printf("ready\n");
    std::fflush(stdout);
    for (long seq = first; count == 0 || seq < first + count; ++seq) {
      const int n = ledger.reserve_iter(wait);
      Checkpoint cp;
      cp.iter = iter_number_name(n);
      cp.idea = test::expected_idea(seq);
      cp.bottleneck = "memory_bound";
      cp.levers = {"STAGES"};
      write_checkpoint(ws, task, cp);
      StoreRequest q;
      q.kernel = q.iter = IterId{n, test::loop_tag(seq)}.name();
      q.decision = test::loop_decision(seq);
      if (q.decision != "COMPILE_FAIL") q.tflops = 100.0 + static_cast<double>(seq % 97);
      q.bottleneck = "memory_bound";
      q.idea = test::expected_idea(seq);
      q.category = "pipeline";
      q.extra = {{"seq", seq}};
      store_round(ledger, q, wait);
      std::printf("stored %ld\n", seq);
      std::fflush(stdout);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "croq_store_loop: %s\n", e.what());
    return 1;
  }
  return 0;
}
