// croq's Python runner (src/python/croq_runner.py, the triton dsl's) measuring on the CPU with
// PyTorch (Debian's python3-torch, which scripts/setup.sh installs): the whole measure path that
// otherwise runs only on a GPU machine — two seeds, poisoned outputs, the timing with its input
// sets rotated, the timed launches drawn for comparison, the re-check, and the inputs refilled in
// place after the timing — on candidates written as plain PyTorch element-wise code. (A mistake
// in that path once failed every Triton measurement on the GPU while CI stayed green.) Skipped
// where no python3 imports torch.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "croq/measure/rules.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/json.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

namespace fs = std::filesystem;

using test::python_with_torch;

json run_cpu(const std::string& py, const fs::path& candidate, const std::vector<std::string>& more = {}) {
  ProcessSpec spec;
  spec.argv = {py, (find_project_dir("src/python") / "croq_runner.py").string(), "--rules",
               dump_compact(measurement_rules()), "--candidate", candidate.string(), "--m", "64", "--n", "48",
               "--k", "32", "--dtype", "f16f32", "--device", "cpu", "--seed", "5", "--max-reps", "12",
               "--time-budget-ms", "300", "--timeout-s", "120"};
  spec.argv.insert(spec.argv.end(), more.begin(), more.end());
  spec.timeout = std::chrono::seconds(180);
  ProcessResult r = SystemProcessRunner().run(spec);
  auto doc = try_parse_json(r.out);
  return doc ? *doc : json{{"verdict", "NO_DOCUMENT"}, {"reason", r.describe() + ": " + r.err.substr(0, 2000)}};
}

// C = A @ B in element-wise PyTorch (torch.matmul is a library call the runner forbids).
const char* k_product =
    "def _product(problem, a, b):\n"
    "    bb = b.t() if problem['b_layout'] == 'col' else b\n"
    "    return (a.float().unsqueeze(2) * bb.float().unsqueeze(0)).sum(1)\n\n\n";

// A correct candidate (after k_product).
const char* k_correct =
    "def croq_matmul(problem, a, b, c):\n"
    "    c.copy_(_product(problem, a, b).to(c.dtype))\n";

class PythonRunnerCpu : public ::testing::Test {
 protected:
  void SetUp() override {
    py_ = python_with_torch();
    if (py_.empty()) GTEST_SKIP() << "no python3 imports torch (Debian's python3-torch; scripts/setup.sh installs it)";
  }
  fs::path write(const std::string& name, const std::string& body) {
    fs::path p = dir_ / name;
    atomic_write(p, std::string(k_product) + body, false);
    return p;
  }
  std::string py_;
  test::TempDir dir_;
};

TEST_F(PythonRunnerCpu, ACorrectCandidatePassesEveryCheckWithItsInputSetsRotated) {
  json doc = run_cpu(py_, write("iter001_ok.py", k_correct));
  ASSERT_EQ(doc.value("verdict", std::string()), "PASS") << doc.dump();
  const json& v = doc["verification"];
  EXPECT_TRUE(v.value("second_seed_passed", false)) << v.dump();
  EXPECT_TRUE(v.value("rechecked_after_timing", false)) << v.dump();
  EXPECT_TRUE(v.value("second_seed_in_place_passed", false)) << v.dump();
  EXPECT_GE(v.value("timed_checked", 0), 1) << v.dump();
  EXPECT_EQ(doc["timing"].value("rotation_sets", 0), 2) << doc["timing"].dump();  // the rules' default
  EXPECT_GT(doc.value("tflops", 0.0), 0.0);
  // --no-l2-flush measures hot: one input set.
  json hot = run_cpu(py_, dir_ / "iter001_ok.py", {"--no-l2-flush"});
  ASSERT_EQ(hot.value("verdict", std::string()), "PASS") << hot.dump();
  EXPECT_EQ(hot["timing"].value("rotation_sets", 0), 1) << hot["timing"].dump();
}

// Keeping the result by the input pointers passes both seeds (the second in fresh buffers) and is
// served while timing; the inputs refilled in place afterwards show it stale.
TEST_F(PythonRunnerCpu, AResultKeptByTheInputPointersIsVerifyFail) {
  json doc = run_cpu(py_, write("iter002_kept.py", "_stored = {}\n\n\n"
                                                   "def croq_matmul(problem, a, b, c):\n"
                                                   "    key = (a.data_ptr(), b.data_ptr(), c.data_ptr())\n"
                                                   "    if key not in _stored:\n"
                                                   "        _stored[key] = _product(problem, a, b).to(c.dtype)\n"
                                                   "    c.copy_(_stored[key])\n"));
  EXPECT_EQ(doc.value("verdict", std::string()), "VERIFY_FAIL") << doc.dump();
  EXPECT_NE(doc.value("reason", std::string()).find("refilled in place"), std::string::npos) << doc.dump();
  EXPECT_FALSE(doc["verification"].value("second_seed_in_place_passed", true));
  EXPECT_TRUE(doc["verification"].value("rechecked_after_timing", false)) << "its result was right until then";
}

// A candidate whose output is right only for the input set it first saw (a result kept whatever the
// inputs) fails at once, on the second seed; one that skips the work on some launches is caught by
// the timed launches drawn for comparison (their outputs are poisoned before each launch).
TEST_F(PythonRunnerCpu, SkippedWorkOnTimedLaunchesIsCaughtByTheDrawnComparisons) {
  json stale = run_cpu(py_, write("iter003_stale.py", "_last = []\n\n\n"
                                                      "def croq_matmul(problem, a, b, c):\n"
                                                      "    if not _last:\n"
                                                      "        _last.append(_product(problem, a, b).to(c.dtype))\n"
                                                      "    c.copy_(_last[0])\n"));
  EXPECT_EQ(stale.value("verdict", std::string()), "VERIFY_FAIL") << stale.dump();
  EXPECT_NE(stale.value("reason", std::string()).find("second seed"), std::string::npos) << stale.dump();
  json lazy = run_cpu(py_, write("iter004_lazy.py", "_calls = [0]\n\n\n"
                                                    "def croq_matmul(problem, a, b, c):\n"
                                                    "    _calls[0] += 1\n"
                                                    "    if _calls[0] > 4:  # past the checks before the timing\n"
                                                    "        return\n"
                                                    "    c.copy_(_product(problem, a, b).to(c.dtype))\n"),
                     {"--max-reps", "40", "--min-reps", "40"});
  EXPECT_EQ(lazy.value("verdict", std::string()), "VERIFY_FAIL") << lazy.dump();
}

// croq's gate (--go-file F): the runner imports torch (and triton where installed) first, says so
// with F.ready and does not run the candidate, nor touch the device, until croq creates F (once it
// holds the device's lease); then it measures as always. Without the gate croq would hold the
// device through the imports: seconds of every Triton measurement.
TEST_F(PythonRunnerCpu, TheRunnerWaitsAtCroqsGateAfterItsImports) {
  const fs::path cand = write("iter001_gate.py", k_correct);
  const fs::path go = dir_ / "gate.go";
  std::atomic<bool> done{false};
  json doc;
  std::thread runner([&] {
    doc = run_cpu(py_, cand, {"--go-file", go.string()});
    done = true;
  });
  bool ready = false;
  for (int i = 0; i < 1200 && !done && !ready; ++i) {  // the imports: up to 60 s on a loaded machine
    ready = fs::exists(go.string() + ".ready");
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(ready) << "the runner never said it was ready";
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  EXPECT_FALSE(done.load()) << "the runner measured without waiting at the gate";
  atomic_write(go, "go\n", false);
  runner.join();
  ASSERT_EQ(doc.value("verdict", std::string()), "PASS") << doc.dump();
  EXPECT_TRUE(doc["verification"].value("second_seed_passed", false));
  // process.gate: the time before the gate (start and imports) and at it (here the 700 ms above).
  const json gate = doc["process"].value("gate", json::object());
  EXPECT_GT(gate.value("before_ms", 0.0), 0.0) << doc["process"].dump();
  EXPECT_GE(gate.value("waited_ms", 0.0), 600.0) << doc["process"].dump();
}

}  // namespace
}  // namespace croq
