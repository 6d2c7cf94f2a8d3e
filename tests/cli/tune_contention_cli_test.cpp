// croq tune and a shared GPU: a measurement or baseline that comes back contended (exit 6, the
// document's "contended": true; gpu/contention.hpp) decides nothing, so the tune measures again,
// and after three contended answers in a row it stops with the reason instead of storing the
// figure. The real verbs run (croq's executable on the cpp dsl); a client between the tuner and
// them answers `croq baseline` as a shared GPU would, the number of times the test says.
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "croq/gpu/device_key.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/search/tune.hpp"
#include "croq/search/verb_client.hpp"
#include "croq/util/error.hpp"
#include "croq/workspace/workspace.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

namespace fs = std::filesystem;

const char* k_key = "matmul_f32_256x256x256";

// Forwards every verb to croq's executable, except the first `contended` calls of `croq baseline`,
// answered as croq baseline answers on a GPU another process uses. Stops the tune (throws) at the
// verb named `stop_at`, so that a test need not run a whole round.
class SharedGpuClient : public VerbClient {
 public:
  SharedGpuClient(const fs::path& root, int contended, std::string stop_at)
      : m_real(process_runner(), CROQ_BIN, root), m_contended(contended), m_stop_at(std::move(stop_at)) {}

  VerbResult call(const std::vector<std::string>& args, std::chrono::seconds timeout) override {
    const std::string verb = args.empty() ? "" : args[0];
    if (verb == m_stop_at) throw std::runtime_error("stopped at " + verb);
    if (verb == "baseline") {
      ++baseline_calls;
      if (m_contended > 0) {
        --m_contended;
        VerbResult r;
        r.exit_code = 6;
        r.doc = {{"verdict", "PASS"},
                 {"tflops", 999.0},
                 {"contended", true},
                 {"contention", {{"contended", true}, {"reasons", {"before: compute process pid 4242 python3"}}}}};
        return r;
      }
    }
    return m_real.call(args, timeout);
  }

  int baseline_calls = 0;

 private:
  SelfExecClient m_real;
  int m_contended;
  std::string m_stop_at;
};

TuneOptions options() {
  TuneOptions o;
  o.shape_key = k_key;
  o.dsl = "cpp";
  o.gpu = cpu_device_key();
  o.rounds = 1;
  o.seed = 7;
  o.step_timeout = std::chrono::seconds(300);
  return o;
}

int contended_events(const std::vector<json>& events) {
  int n = 0;
  for (const auto& e : events) n += e.value("event", "") == "contended";
  return n;
}

TEST(TuneContention, AContendedBaselineIsMeasuredAgainAndTheSecondFigureIsStored) {
  test::TempDir dir;
  Workspace ws(dir.path());
  TaskRef task = make_task(cpu_device_key(), "cpp", k_key, "croq-search");
  SharedGpuClient client(dir.path(), 2, "next-iter");
  std::vector<json> events;
  Tuner tuner(client, process_runner(), ws, task, options(), [&](const json& e) { events.push_back(e); });
  try {
    tuner.run();
    FAIL() << "the client stops the tune at next-iter";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "stopped at next-iter");
  }
  EXPECT_EQ(client.baseline_calls, 3);
  EXPECT_EQ(contended_events(events), 2);
  LedgerIndex index = Ledger(ws, task).index();
  ASSERT_TRUE(index.baseline) << "the third, uncontended baseline is stored";
  ASSERT_TRUE(index.baseline->tflops);
  EXPECT_LT(*index.baseline->tflops, 999.0) << "the contended figure was stored";
}

TEST(TuneContention, ThreeContendedAnswersInARowStopTheTuneWithTheReasonAndStoreNothing) {
  test::TempDir dir;
  Workspace ws(dir.path());
  TaskRef task = make_task(cpu_device_key(), "cpp", k_key, "croq-search");
  SharedGpuClient client(dir.path(), 1000, "next-iter");
  std::vector<json> events;
  Tuner tuner(client, process_runner(), ws, task, options(), [&](const json& e) { events.push_back(e); });
  try {
    tuner.run();
    FAIL() << "a tune on a GPU that stays shared must stop";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::busy);
    const std::string what = e.what();
    EXPECT_NE(what.find("contended 3 times in a row"), std::string::npos) << what;
    EXPECT_NE(what.find("pid 4242 python3"), std::string::npos) << what;
  }
  EXPECT_EQ(client.baseline_calls, 3);
  EXPECT_EQ(contended_events(events), 3);
  EXPECT_FALSE(Ledger(ws, task).index().baseline) << "nothing stored from a contended answer";
}

}  // namespace
}  // namespace croq
