// The measurement procedure against a recording fake device: the timing protocol's order, the
// verdict of each kind of failure and their precedence, the stopping rule, the wall-clock check
// and the library baseline's choice, all without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>

#include "croq/measure/portable.hpp"
#include "croq/measure/procedure.hpp"
#include "croq/measure/tolerance.hpp"

namespace croq {
namespace {

// Records every call; times and comparison outcomes come from the test.
class FakeBackend : public MeasureBackend {
 public:
  std::vector<std::string> calls;
  double clock = 0;
  // Event time of timed launch number n (0-based over the whole run).
  std::function<double(int)> event_ms = [](int) { return 1.0; };
  double wall_per_launch = 0.001;  // host time a launch takes when not timed by events
  // Host time the device spends on a timed launch beyond its events (work on another stream),
  // seen when the device is synchronised.
  double hidden_ms = 0;
  // Called for compare number n (0-based): fills the figures.
  std::function<void(int, Verification&)> on_compare = [](int, Verification&) {};
  int status = 0;
  bool sync_fails_after_launch = false;
  bool fill_fails = false;
  int hold_timeouts = 0;  // how many held launches wait for the held stream
  int variants = 1;
  std::vector<double> variant_ms;  // event time per library variant
  // While the procedure screens (it asks for no failure details then): these times instead.
  std::vector<double> screen_variant_ms;
  bool screening = false;
  void set_failure_details(bool on) override { screening = !on; }
  double peak = 100;

  DeviceFacts facts() override {
    DeviceFacts f;
    f.name = "Fake GPU";
    f.peak_tflops = peak;
    f.peak_source = "test";
    return f;
  }
  double host_now_ms() override { return clock; }
  DeviceStatus prepare(int sets) override {
    calls.push_back("prepare(" + std::to_string(sets) + ")");
    return {};
  }
  DeviceStatus fill_inputs(int set, uint64_t seed) override {
    calls.push_back("fill(" + std::to_string(set) + "," + std::to_string(seed) + ")");
    if (fill_fails) return DeviceStatus::fail("out of memory");
    return {};
  }
  DeviceStatus compute_reference(int set) override {
    calls.push_back("reference(" + std::to_string(set) + ")");
    return {};
  }
  DeviceStatus perturb_inputs(int set, int64_t column, uint64_t) override {
    calls.push_back("perturb(" + std::to_string(set) + ")");
    columns.push_back(column);
    return {};
  }
  std::vector<int64_t> columns;
  DeviceStatus poison_output() override {
    calls.push_back("poison");
    return {};
  }
  LaunchOutcome launch(int set) override {
    calls.push_back("launch(" + std::to_string(set) + ")");
    ++launches;
    if (!timing_now) clock += wall_per_launch;
    return {status, {}};
  }
  DeviceStatus synchronize() override {
    calls.push_back("sync");
    clock += pending_ms;
    pending_ms = 0;
    if (sync_fails_after_launch && launches > 0) return DeviceStatus::fail("cudaErrorIllegalAddress: an illegal memory access", true);
    return {};
  }
  std::vector<int> compared_sets;
  DeviceStatus compare(int set, const ToleranceSpec& tol, Verification& v) override {
    calls.push_back("compare");
    compared_sets.push_back(set);
    v.tolerance = tol;
    v.elements = 100;
    v.mismatches = 0;
    v.nan_count = 0;
    v.guard_bytes_changed = 0;
    v.normwise_rel_err = 1e-7;
    on_compare(compares++, v);
    decide_passed(v);
    return {};
  }
  DeviceStatus flush_cache() override {
    calls.push_back("flush");
    return {};
  }
  bool can_hold_stream() const override { return true; }
  DeviceStatus hold_stream() override {
    calls.push_back("hold");
    return {};
  }
  DeviceStatus release_stream() override {
    calls.push_back("release");
    return {};
  }
  bool hold_timed_out() override {
    if (hold_timeouts > 0) {
      --hold_timeouts;
      return true;
    }
    return false;
  }
  DeviceStatus start_timer() override {
    calls.push_back("start");
    timing_now = true;
    return {};
  }
  DeviceStatus stop_timer() override {
    calls.push_back("stop");
    timing_now = false;
    double ms = variant_ms.empty() ? event_ms(timed)
                : screening && !screen_variant_ms.empty() ? screen_variant_ms[selected]
                                                          : variant_ms[selected];
    ++timed;
    last_ms = ms;
    pending_ms += ms + hidden_ms;  // the device's time, seen by the host when it synchronises
    return {};
  }
  DeviceStatus read_timer(double& ms) override {
    calls.push_back("read");
    ms = last_ms;
    return {};
  }
  std::string timer_method() const override { return "fake_events"; }
  bool asynchronous() const override { return async; }
  bool async = true;
  void sample_clock() override {}
  std::vector<double> rests;  // each rest's length
  void rest(double ms) override {
    calls.push_back("rest");
    rests.push_back(ms);
    clock += ms;
  }
  LaunchOutcome profile_launch(int set, const std::string& name) override {
    calls.push_back("profile_launch(" + std::to_string(set) + "," + name + ")");
    return {status, {}};
  }
  // check_inputs: every call's set, in order, and what the target changed at check number n.
  std::vector<int> input_checks;
  std::function<void(int, std::vector<std::string>&)> on_check_inputs = [](int, std::vector<std::string>&) {};
  DeviceStatus check_inputs(int set, std::vector<std::string>& changed) override {
    on_check_inputs(static_cast<int>(input_checks.size()), changed);
    input_checks.push_back(set);
    checks_before_compare.push_back(compares);
    return {};
  }
  std::vector<int> checks_before_compare;  // per check: the compares made before it
  // The untimed preparation after each fill (croq_gemm_prepare, or a library's compression).
  int prepare_status = 0;
  LaunchOutcome prepare_operands(int set) override {
    calls.push_back("prepare_operands(" + std::to_string(set) + ")");
    return {prepare_status, {}};
  }
  int variant_count() override { return variants; }
  std::vector<int> fast_accum_variants;  // described as fast accumulation
  std::vector<std::string> variant_library;  // per variant (default: cublas, then cublasLt)
  json variant_description(int i) override {
    const std::string lib = variant_library.empty() ? (i == 0 ? "cublas" : "cublasLt") : variant_library[i];
    json d = {{"library", lib}, {"variant", i}};
    if (std::count(fast_accum_variants.begin(), fast_accum_variants.end(), i)) d["fast_accum"] = true;
    return d;
  }
  DeviceStatus select_variant(int i) override {
    calls.push_back("select(" + std::to_string(i) + ")");
    selected = i;
    return {};
  }

  int count(const std::string& call) const { return static_cast<int>(std::count(calls.begin(), calls.end(), call)); }

  int launches = 0;
  int compares = 0;
  int timed = 0;
  int selected = 0;
  bool timing_now = false;
  double last_ms = 0;
  double pending_ms = 0;
};

ProblemDesc problem_1024() {
  ProblemDesc p;
  p.m = p.n = p.k = 1024;  // 2.147 GFLOP: 1 ms = 2.15 TFLOPS
  p.dtype = "f16f32";
  return p;
}

ProcedureOptions quick() {
  ProcedureOptions o;
  o.seed = 42;
  o.warmup = 2;
  o.stop.min_reps = 5;
  o.stop.max_reps = 50;
  o.stop.cv_target = 0.01;
  o.stop.time_budget_ms = 1e9;
  // The order of the checks without the random parts: no timed launch verified at random, B
  // never changed (the tests of those set them).
  o.verify_fraction = 0;
  o.min_verified = 0;
  o.perturb = false;
  o.draw = [] { return 0.5; };
  return o;
}

Measurement measure(FakeBackend& b, ProcedureOptions o = quick()) {
  return run_procedure(b, problem_1024(), *parse_dtype_pair("f16f32"), o);
}

// A checked launch and a timed one are made the same way: a fresh column of B, C poisoned, the L2
// flushed, the stream held, start, launch, stop, release, synchronise, read. Whether a timed
// launch is compared is drawn after it ran (the draw comes after the read), and nothing before a
// launch differs between the ones that will be compared and the ones that will not.
TEST(MeasureProcedure, EveryLaunchCheckedOrTimedIsMadeTheSameWay) {
  FakeBackend b;
  ProcedureOptions o = quick();
  o.perturb = true;
  o.verify_fraction = 0.25;
  o.min_verified = 1;
  int draws = 0;
  o.draw = [&] {
    b.calls.push_back("draw");
    return (++draws % 3) * 0.2;  // 0.2, 0.4, 0.0, 0.2, ...: two draws of three are under 0.25
  };
  Measurement m = measure(b, o);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  const std::vector<std::string> before = {"perturb", "poison", "flush", "hold", "start"};
  const std::vector<std::string> after = {"launch", "stop", "release", "sync", "read"};
  auto head = [](const std::string& c) { return c.substr(0, c.find('(')); };
  int shots = 0, compared_shots = 0;
  for (size_t i = 0; i < b.calls.size(); ++i) {
    if (b.calls[i] != "start") continue;
    ++shots;
    // perturb is preceded by the draw of its column.
    ASSERT_GE(i, 5u);
    EXPECT_EQ(b.calls[i - 5], "draw");
    for (size_t k = 0; k + 1 < before.size(); ++k) EXPECT_EQ(head(b.calls[i - 4 + k]), before[k]) << i;
    ASSERT_LT(i + 5, b.calls.size());
    for (size_t k = 0; k < after.size(); ++k) EXPECT_EQ(head(b.calls[i + 1 + k]), after[k]) << i;
    // After the read: a compare (a check, or a timed launch drawn), or the next launch's draw.
    size_t j = i + 6;
    if (j < b.calls.size() && b.calls[j] == "draw" && j + 1 < b.calls.size() &&
        (b.calls[j + 1] == "compare" || b.calls[j + 1].rfind("reference(", 0) == 0)) {
      ++j;
    }
    if (j < b.calls.size() && b.calls[j].rfind("reference(", 0) == 0) ++j;  // a changed set's reference, made again
    if (j < b.calls.size() && b.calls[j] == "compare") ++compared_shots;
  }
  // Every launch (the warm-up's too) is preceded by a fresh column and the poison.
  EXPECT_EQ(b.count("poison"), b.launches);
  EXPECT_EQ(b.count("perturb(0)") + b.count("perturb(1)"), b.launches);
  EXPECT_EQ(shots, 3 /* checks */ + 3 /* probe */ + m.timing->reps);
  EXPECT_EQ(compared_shots, 3 + m.verification.timed_checked);
  EXPECT_GT(m.verification.timed_checked, 0);
  EXPECT_EQ(b.count("compare"), 3 + m.verification.timed_checked);
  // The columns are spread over B.
  std::set<int64_t> distinct(b.columns.begin(), b.columns.end());
  EXPECT_GE(distinct.size(), 2u);
}

// A candidate that does the work only on the launches it believes are checked: every timed launch
// may be compared after it ran, so one that skipped is caught (VERIFY_FAIL timed_mismatch) before
// the re-check or the second seed would have seen anything.
// On a synchronous backend (the CPU) B gets its fresh values after the flush, right before the timer:
// the flush is milliseconds in which a candidate's own thread, watching B, computed most of C and the
// launch copied it (an attack: 6x the honest figure, PASS).
TEST(MeasureProcedure, OnASynchronousBackendBIsRefreshedAfterTheFlushRightBeforeTheTimer) {
  FakeBackend b;
  b.async = false;
  ProcedureOptions o = quick();
  o.perturb = true;
  Measurement m = measure(b, o);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  auto head = [](const std::string& c) { return c.substr(0, c.find('(')); };
  int shots = 0;
  for (size_t i = 0; i < b.calls.size(); ++i) {
    if (b.calls[i] != "start") continue;
    ++shots;
    ASSERT_GE(i, 4u);
    const std::vector<std::string> before = {b.calls[i - 4], b.calls[i - 3], head(b.calls[i - 2]), b.calls[i - 1]};
    EXPECT_EQ(before, (std::vector<std::string>{"poison", "flush", "perturb", "hold"})) << i;
  }
  EXPECT_EQ(shots, 3 /* checks */ + 3 /* probe */ + m.timing->reps);
  EXPECT_EQ(b.count("perturb(0)") + b.count("perturb(1)"), b.launches);
}

TEST(MeasureProcedure, ATimedLaunchDrawnAfterItRanIsComparedAndAWrongOneFails) {
  FakeBackend b;
  ProcedureOptions o = quick();
  o.verify_fraction = 0.25;
  std::vector<double> draws = {0.9, 0.9, 0.9, 0.9, 0.9, 0.1};  // the probe's three, then the 3rd repetition
  size_t next = 0;
  o.draw = [&] { return next < draws.size() ? draws[next++] : 0.9; };
  // Compare 0 is the first seed's; compare 1 the third repetition's, which skipped its work.
  b.on_compare = [](int n, Verification& v) {
    if (n == 1) v.mismatches = v.nan_count = 100;
  };
  Measurement m = measure(b, o);
  EXPECT_EQ(m.verdict, Verdict::VERIFY_FAIL);
  EXPECT_EQ(m.reason, "timed_mismatch");
  EXPECT_NE(m.detail.find("timed launch 3 (input set 0)"), std::string::npos) << m.detail;
  EXPECT_EQ(m.verification.nan_count, 100);
  EXPECT_EQ(m.verification.timed_checked, 1);
  EXPECT_EQ(b.compared_sets, (std::vector<int>{0, 0}));
  EXPECT_FALSE(m.verification.rechecked_after_timing.has_value()) << "caught before the re-check";
}

// The probe's launches are timed launches: one drawn for comparison that fails is timed_mismatch,
// named as the probe launch it was (not as the first seed's check, which passed).
TEST(MeasureProcedure, AProbeLaunchDrawnForComparisonThatFailsIsATimedMismatch) {
  FakeBackend b;
  ProcedureOptions o = quick();
  o.verify_fraction = 0.25;
  std::vector<double> draws = {0.9, 0.1};  // the second probe launch
  size_t next = 0;
  o.draw = [&] { return next < draws.size() ? draws[next++] : 0.9; };
  b.on_compare = [](int n, Verification& v) {
    if (n == 1) v.mismatches = 7;
  };
  Measurement m = measure(b, o);
  EXPECT_EQ(m.verdict, Verdict::VERIFY_FAIL);
  EXPECT_EQ(m.reason, "timed_mismatch") << m.detail;
  EXPECT_NE(m.detail.find("probe launch 2"), std::string::npos) << m.detail;
  EXPECT_EQ(m.verification.mismatches, 7);
  EXPECT_FALSE(m.timing) << "nothing timed after a failed probe";
}

// Both input sets are compared against their own reference, made again when the set's inputs
// changed since (a fresh column of B before every launch).
TEST(MeasureProcedure, EachInputSetIsComparedWithItsOwnReferenceMadeAfterItsInputsChanged) {
  FakeBackend b;
  ProcedureOptions o = quick();
  o.perturb = true;
  o.verify_fraction = 1.0;  // every timed launch
  o.draw = [] { return 0.3; };
  Measurement m = measure(b, o);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  EXPECT_EQ(m.verification.timed_checked, 3 + m.timing->reps);
  EXPECT_NE(std::find(b.compared_sets.begin(), b.compared_sets.end(), 1), b.compared_sets.end());
  for (size_t i = 0; i < b.calls.size(); ++i) {
    if (b.calls[i] != "compare") continue;
    // The reference of the compared set was made after the last change of that set's inputs.
    size_t change = 0, ref = 0;
    const std::string set = std::to_string(b.compared_sets[static_cast<size_t>(std::count(b.calls.begin(), b.calls.begin() + static_cast<long>(i), "compare"))]);
    for (size_t j = 0; j < i; ++j) {
      if (b.calls[j] == "perturb(" + set + ")" || b.calls[j].rfind("fill(" + set + ",", 0) == 0) change = j;
      if (b.calls[j] == "reference(" + set + ")") ref = j;
    }
    EXPECT_GT(ref, change) << "compare " << i << " of set " << set << " against a reference older than its inputs";
  }
}

// When no draw chose a repetition, the last one is compared: at least one timed launch is, and
// the candidate cannot know which launch is the last before it has run.
TEST(MeasureProcedure, WhenNoDrawChoosesARepetitionTheLastOneIsCompared) {
  FakeBackend b;
  ProcedureOptions o = quick();
  o.verify_fraction = 0.25;
  o.min_verified = 1;
  o.draw = [] { return 0.99; };
  Measurement m = measure(b, o);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  EXPECT_EQ(m.verification.timed_checked, 1);
  EXPECT_EQ(b.count("compare"), 4);  // first seed, the last repetition, re-check, second seed
  // The timed compare comes right after the last repetition's read.
  size_t last_read = 0, second_compare = 0;
  int compares = 0;
  for (size_t i = 0; i < b.calls.size(); ++i) {
    if (b.calls[i] == "compare" && ++compares == 2) second_compare = i;
  }
  int starts = 0;
  for (size_t i = 0; i < second_compare; ++i) {
    if (b.calls[i] == "read") last_read = i;
    if (b.calls[i] == "start") ++starts;
  }
  EXPECT_EQ(starts, 1 + 3 + m.timing->reps);
  EXPECT_EQ(second_compare, last_read + 1);
}

TEST(MeasureProcedure, APassingCandidateIsVerifiedTimedRecheckedAndCheckedOnASecondSeed) {
  FakeBackend b;
  Measurement m = measure(b);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  EXPECT_EQ(m.reason, "ok");
  EXPECT_EQ(m.seed, 42u);
  EXPECT_EQ(m.second_seed, second_seed(42));
  EXPECT_TRUE(*m.verification.passed);
  EXPECT_TRUE(*m.verification.rechecked_after_timing);
  EXPECT_TRUE(*m.verification.second_seed_passed);
  ASSERT_TRUE(m.timing);
  EXPECT_EQ(m.timing->reps, 5);
  EXPECT_EQ(m.timing->stop_reason, "cv_target");
  EXPECT_EQ(m.timing->rotation_sets, 2);
  EXPECT_TRUE(m.timing->stream_held);
  EXPECT_NEAR(*m.tflops, 2.147483648, 1e-6);
  // Set 0 from the seed, set 1 for rotation, set 0 refilled in place with the second seed.
  EXPECT_EQ(b.calls[0], "prepare(2)");
  EXPECT_EQ(b.calls[1], "fill(0,42)");
  EXPECT_EQ(b.count("fill(0," + std::to_string(second_seed(42)) + ")"), 1);
  EXPECT_EQ(b.count("reference(0)"), 2);
  EXPECT_EQ(b.count("compare"), 3);  // first seed, re-check, second seed
  EXPECT_EQ(b.count("poison"), b.launches);  // before every launch, checked or timed
  // Rotation: both sets are launched while timing.
  EXPECT_GT(b.count("launch(1)"), 0);
}

TEST(MeasureProcedure, TheWarmUpRunsBackToBackUntilItHasLastedWarmupMs) {
  FakeBackend b;
  b.wall_per_launch = 0.1;  // host time per untimed launch
  ProcedureOptions o = quick();
  o.warmup_ms = 30;
  Measurement m = measure(b, o);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  ASSERT_TRUE(m.timing);
  ASSERT_TRUE(m.timing->warmup_ms);
  EXPECT_GE(*m.timing->warmup_ms, 30.0);
  EXPECT_LT(*m.timing->warmup_ms, 60.0) << "at most one batch beyond the target";
  EXPECT_GE(m.timing->warmup, 300) << "30 ms of 0.1 ms launches";
  // Every warm-up launch comes before the first timed repetition of the timing phase: count the
  // launches between the last probe repetition and the first start of the timed section.
  int starts = 0;
  size_t first_timed = 0;
  for (size_t i = 0; i < b.calls.size(); ++i) {
    if (b.calls[i] == "start" && ++starts == 5) {  // the check and 3 probe launches first
      first_timed = i;
      break;
    }
  }
  ASSERT_GT(first_timed, 0u);
  int untimed = 0;
  for (size_t i = 0; i < first_timed; ++i) {
    if (b.calls[i].rfind("launch(", 0) == 0) ++untimed;
  }
  EXPECT_GE(untimed, m.timing->warmup);

  FakeBackend plain;
  plain.wall_per_launch = 0.1;
  Measurement n = measure(plain);  // warmup_ms 0: the counted warm-up only
  ASSERT_TRUE(n.timing);
  EXPECT_EQ(n.timing->warmup, 2);
}

TEST(MeasureProcedure, ASteadyKernelIsTimedForAtLeastTheMinimumTime) {
  FakeBackend b;  // 1 ms per repetition, no spread: the CV target is met after min_reps
  ProcedureOptions o = quick();
  o.stop.min_time_ms = 40;
  Measurement m = measure(b, o);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  ASSERT_TRUE(m.timing);
  EXPECT_EQ(m.timing->stop_reason, "cv_target");
  EXPECT_GE(m.timing->reps, 40);
  ASSERT_TRUE(m.timing->timed_ms);
  EXPECT_GE(*m.timing->timed_ms, 40.0);
}

// The duty cycle: once the GPU has been busy for the window, it idles rest_ratio times as long,
// never inside a timed repetition, and the rests do not count against the timing's budget.
TEST(MeasureProcedure, RestsKeepTheDutyCycleOutsideTheTimedRepetitions) {
  auto noisy = [](int n) { return n % 2 ? 1.0 : 1.2; };  // never meets the CV target
  ProcedureOptions o = quick();
  o.stop.cv_target = 0.0001;
  o.stop.max_reps = 1000;
  o.stop.time_budget_ms = 60;

  FakeBackend plain;
  plain.event_ms = noisy;
  Measurement p = measure(plain, o);
  ASSERT_EQ(p.verdict, Verdict::PASS) << p.detail;
  EXPECT_EQ(plain.count("rest"), 0);
  EXPECT_FALSE(p.timing->rest_ms);

  FakeBackend b;
  b.event_ms = noisy;
  o.rest_ratio = 1.0;
  o.rest_window_ms = 10;
  Measurement m = measure(b, o);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  EXPECT_EQ(m.timing->stop_reason, "time_budget");
  EXPECT_EQ(m.timing->reps, p.timing->reps) << "rests are outside the time budget";
  // 60 ms of 1.1 ms repetitions in windows of at least 10 ms: five or six rests, each as long as
  // the work before it.
  EXPECT_GE(b.count("rest"), 5);
  for (double r : b.rests) EXPECT_GE(r, 10.0);
  ASSERT_TRUE(m.timing->rest_ms);
  EXPECT_GE(*m.timing->rest_ms, 50.0);
  EXPECT_DOUBLE_EQ(*m.timing->rest_ratio, 1.0);
  ASSERT_TRUE(m.timing->timed_ms);
  EXPECT_LT(*m.timing->timed_ms, 62.0) << "timed_ms leaves the rests out";
  bool in_rep = false;
  for (const auto& c : b.calls) {
    if (c == "start") in_rep = true;
    if (c == "read") in_rep = false;
    EXPECT_FALSE(in_rep && c == "rest") << "a rest inside a timed repetition";
  }

  // The library's screening and full measurements are paced too.
  FakeBackend lib;
  lib.variants = 3;
  lib.event_ms = noisy;
  o.library = true;
  o.stop.time_budget_ms = 30;
  Measurement l = measure(lib, o);
  ASSERT_EQ(l.verdict, Verdict::PASS) << l.detail;
  EXPECT_GE(lib.count("rest"), 3 * 2) << "each of three full measurements rests at least twice";
}

TEST(MeasureProcedure, ATimeFasterThanPeakIsImpossibleBeforeVerificationIsConsidered) {
  FakeBackend b;
  b.event_ms = [](int) { return 0.001; };  // 2147 TFLOPS against a peak of 100
  b.on_compare = [](int, Verification& v) { v.mismatches = 50; };
  Measurement m = measure(b);
  EXPECT_EQ(m.verdict, Verdict::IMPOSSIBLE);
  EXPECT_EQ(m.reason, "above_peak");
  ASSERT_TRUE(m.timing);
  EXPECT_EQ(m.timing->stop_reason, "probe");
  EXPECT_FALSE(*m.verification.passed);  // the figures are still reported
}

TEST(MeasureProcedure, WrongValuesAreAVerifyFailWithoutTiming) {
  FakeBackend b;
  b.on_compare = [](int, Verification& v) {
    v.mismatches = 7;
    v.max_abs_err = 3.5;
  };
  Measurement m = measure(b);
  EXPECT_EQ(m.verdict, Verdict::VERIFY_FAIL);
  EXPECT_EQ(m.reason, "mismatch");
  EXPECT_EQ(m.verification.mismatches, 7);
  EXPECT_EQ(b.count("fill(1," + std::to_string(splitmix64(42 + 0x101)) + ")"), 0);  // never got to timing
}

TEST(MeasureProcedure, UnwrittenOutputAndOutOfBoundsWritesHaveTheirOwnReasons) {
  {
    FakeBackend b;
    b.on_compare = [](int, Verification& v) { v.mismatches = v.nan_count = 50; };
    EXPECT_EQ(measure(b).reason, "unwritten_output");
  }
  {
    FakeBackend b;
    b.on_compare = [](int, Verification& v) { v.guard_bytes_changed = 4096; };
    Measurement m = measure(b);
    EXPECT_EQ(m.verdict, Verdict::VERIFY_FAIL);
    EXPECT_EQ(m.reason, "out_of_bounds_write");
  }
  {
    FakeBackend b;
    b.on_compare = [](int, Verification& v) { v.normwise_rel_err = 0.5; };
    EXPECT_EQ(measure(b).reason, "normwise_error");
  }
}

TEST(MeasureProcedure, AStaleResultIsCaughtByTheSecondSeed) {
  FakeBackend b;
  b.on_compare = [](int n, Verification& v) {
    if (n == 2) v.mismatches = 100;  // the third comparison is the second seed's
  };
  Measurement m = measure(b);
  EXPECT_EQ(m.verdict, Verdict::VERIFY_FAIL);
  EXPECT_EQ(m.reason, "second_seed_mismatch");
  EXPECT_FALSE(*m.verification.second_seed_passed);
  EXPECT_TRUE(*m.verification.rechecked_after_timing);
}

TEST(MeasureProcedure, AnOutputThatChangesDuringTimingFailsTheRecheck) {
  FakeBackend b;
  b.on_compare = [](int n, Verification& v) {
    if (n == 1) v.mismatches = 3;
  };
  Measurement m = measure(b);
  EXPECT_EQ(m.verdict, Verdict::VERIFY_FAIL);
  EXPECT_EQ(m.reason, "recheck_mismatch");
}

TEST(MeasureProcedure, LaunchStatusesMapToUnsupportedAndRuntimeFail) {
  FakeBackend b;
  b.status = 1;
  Measurement m = measure(b);
  EXPECT_EQ(m.verdict, Verdict::UNSUPPORTED);
  EXPECT_EQ(m.reason, "candidate_unsupported");
  FakeBackend c;
  c.status = 3;
  m = measure(c);
  EXPECT_EQ(m.verdict, Verdict::RUNTIME_FAIL);
  EXPECT_EQ(m.reason, "launch_status");
  EXPECT_NE(m.detail.find("CROQ_LAUNCH_FAILED"), std::string::npos);
}

TEST(MeasureProcedure, ADeviceErrorAfterTheLaunchIsARuntimeFail) {
  FakeBackend b;
  b.sync_fails_after_launch = true;
  Measurement m = measure(b);
  EXPECT_EQ(m.verdict, Verdict::RUNTIME_FAIL);
  EXPECT_EQ(m.reason, "cuda_error");
  EXPECT_NE(m.detail.find("illegal memory access"), std::string::npos);
}

TEST(MeasureProcedure, AHarnessFailureBeforeTheCandidateRanIsNotBlamedOnIt) {
  FakeBackend b;
  b.fill_fails = true;
  EXPECT_THROW(measure(b), HarnessError);
}

TEST(MeasureProcedure, NoisyTimesStopOnTheBudgetOrAtMaxReps) {
  FakeBackend b;
  b.event_ms = [](int n) { return n % 2 ? 1.0 : 2.0; };  // cv ~ 0.33
  ProcedureOptions o = quick();
  o.stop.time_budget_ms = 40;
  Measurement m = measure(b, o);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  EXPECT_EQ(m.timing->stop_reason, "time_budget");
  FakeBackend c;
  c.event_ms = b.event_ms;
  o.stop.time_budget_ms = 1e9;
  o.stop.max_reps = 12;
  m = measure(c, o);
  EXPECT_EQ(m.timing->stop_reason, "max_reps");
  EXPECT_EQ(m.timing->reps, 12);
  EXPECT_NEAR(m.timing->median_ms, 1.5, 1e-9);
}

TEST(MeasureProcedure, ALaunchThatWaitsForTheHeldStreamIsTimedUnheldWithAWarning) {
  FakeBackend b;
  b.hold_timeouts = 1000;  // it synchronises in every launch
  Measurement m = measure(b);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  EXPECT_FALSE(m.timing->stream_held);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_NE(m.warnings[0].find("synchronises inside croq_matmul"), std::string::npos);
  EXPECT_NE(std::find(m.flags.begin(), m.flags.end(), "launch_waits"), m.flags.end());
}

// On the H200 every candidate and cuBLASLt waited for the held stream once, in its first launch (the
// driver's lazy module loading, the library's initialisation): that one wait is not a synchronising
// candidate. The launch is made again, held, and the measurement carries no flag.
TEST(MeasureProcedure, AFirstLaunchThatWaitsOnceForTheHeldStreamIsNotFlagged) {
  FakeBackend b;
  b.hold_timeouts = 1;
  Measurement m = measure(b);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  EXPECT_TRUE(m.timing->stream_held);
  EXPECT_TRUE(m.warnings.empty()) << m.warnings[0];
  EXPECT_EQ(std::find(m.flags.begin(), m.flags.end(), "launch_waits"), m.flags.end());
}

TEST(MeasureProcedure, WorkHiddenFromTheEventsIsCaughtByTheHostClock) {
  FakeBackend b;
  b.event_ms = [](int) { return 0.05; };  // 43 TFLOPS by the events: plausible
  b.hidden_ms = 1.95;                      // but the host sees 2 ms per launch
  Measurement m = measure(b);
  EXPECT_EQ(m.verdict, Verdict::IMPOSSIBLE);
  EXPECT_EQ(m.reason, "timing_escape");
  ASSERT_TRUE(m.timing->wall_check_ms);
  EXPECT_NEAR(*m.timing->wall_check_ms, 2.0, 1e-9);
  // A synchronous device (the CPU) cannot hide work from its timer: a slow host clock there is
  // noise, flagged but not refused.
  FakeBackend c;
  c.async = false;
  c.event_ms = b.event_ms;
  c.hidden_ms = 1.95;
  Measurement n = measure(c);
  EXPECT_EQ(n.verdict, Verdict::PASS);
  EXPECT_NE(std::find(n.flags.begin(), n.flags.end(), "wall_clock_disagrees"), n.flags.end());
}

TEST(MeasureProcedure, AResultNearThePeakIsFlagged) {
  FakeBackend b;
  b.peak = 2.2;  // the fake candidate runs at 2.15 TFLOPS: 97.6 %
  Measurement m = measure(b);
  EXPECT_EQ(m.verdict, Verdict::PASS);
  EXPECT_NE(std::find(m.flags.begin(), m.flags.end(), "near_peak"), m.flags.end());
}

TEST(MeasureProcedure, VerifyModeChecksTwoSeedsAndTimesNothing) {
  FakeBackend b;
  ProcedureOptions o = quick();
  o.mode = RunMode::verify;
  Measurement m = measure(b, o);
  EXPECT_EQ(m.verdict, Verdict::PASS);
  EXPECT_FALSE(m.timing);
  EXPECT_FALSE(m.tflops);
  EXPECT_TRUE(*m.verification.second_seed_passed);
  EXPECT_EQ(b.count("start"), 2) << "the two checked launches only";
}

TEST(MeasureProcedure, ProfileModeRunsTheWarmupThenExactlyOneRangedLaunchAndNoReference) {
  FakeBackend b;
  ProcedureOptions o = quick();
  o.mode = RunMode::profile;
  o.warmup = 3;
  Measurement m = measure(b, o);
  EXPECT_EQ(m.verdict, Verdict::PASS);
  EXPECT_EQ(b.count("profile_launch(0,croq_candidate)"), 1);
  EXPECT_EQ(b.count("launch(0)"), 3);
  EXPECT_EQ(b.count("reference(0)"), 0);
  EXPECT_EQ(b.count("compare"), 0);
  EXPECT_EQ(b.count("poison"), 4) << "before every launch";
  EXPECT_EQ(b.calls.back(), "sync");
}

TEST(MeasureProcedure, TheBaselineIsTheFasterOfTheDefaultAndTheBestScreenedVariant) {
  FakeBackend b;
  b.variants = 3;
  b.variant_ms = {2.0, 1.0, 1.5};
  ProcedureOptions o = quick();
  o.library = true;
  Measurement m = measure(b, o);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  EXPECT_EQ(m.kind, "baseline");
  EXPECT_EQ(m.library["chosen"], "best_screened");
  EXPECT_EQ(m.library["algo"]["variant"], 1);
  EXPECT_EQ(m.library["default"]["variant"], 0);
  EXPECT_NEAR(m.timing->median_ms, 1.0, 1e-9);
  EXPECT_EQ(m.library["screened"].size(), 3u);
  EXPECT_EQ(b.count("prepare(2)"), 1) << "the library rotates its inputs as a candidate does";
  EXPECT_GT(b.count("launch(1)"), 0);

  FakeBackend c;
  c.variants = 2;
  c.variant_ms = {1.0, 1.2};
  m = measure(c, o);
  EXPECT_EQ(m.library["chosen"], "default");
  EXPECT_NEAR(m.timing->median_ms, 1.0, 1e-9);
}

// Screening ranks close variants unreliably (5 repetitions): the two fastest screened variants are
// both measured in full with the default, and the fastest of the three full measurements wins.
TEST(MeasureProcedure, TheBaselineMeasuresTheTwoFastestScreenedVariantsInFull) {
  FakeBackend b;
  b.variants = 4;
  b.screen_variant_ms = {2.0, 1.0, 1.05, 1.5};  // screening ranks 1, 2, 3
  b.variant_ms = {2.0, 1.3, 1.1, 0.9};          // full measurements: 2 beats 1; 3 was ranked third
  ProcedureOptions o = quick();
  o.library = true;
  Measurement m = measure(b, o);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  EXPECT_EQ(m.library["algo"]["variant"], 2);
  EXPECT_EQ(m.library["chosen"], "screened");
  EXPECT_EQ(m.library["chosen_screen_rank"], 2);
  EXPECT_EQ(m.library["measured"].size(), 3u);  // the default and the two fastest screened
  EXPECT_EQ(m.library["best_screened"]["variant"], 1);
  EXPECT_NEAR(m.library["best_screened"]["median_ms"].get<double>(), 1.3, 1e-9);
  EXPECT_NEAR(m.timing->median_ms, 1.1, 1e-9);
  EXPECT_FALSE(b.screening) << "failure details are asked for again after the screening";
}

// A fast-accumulation variant passes the tolerance for some seeds and not for others: it is
// screened and reported, but it is the baseline only when no f32-accumulating variant passes.
TEST(MeasureProcedure, FastAccumulationVariantsAreReportedButNotTheBaseline) {
  FakeBackend b;
  b.variants = 4;
  b.variant_ms = {2.0, 1.5, 0.8, 0.9};
  b.fast_accum_variants = {2, 3};
  ProcedureOptions o = quick();
  o.library = true;
  Measurement m = measure(b, o);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  EXPECT_EQ(m.library["algo"]["variant"], 1);
  EXPECT_NEAR(m.timing->median_ms, 1.5, 1e-9);
  ASSERT_EQ(m.library["screened"].size(), 4u);
  EXPECT_EQ(m.library["screened"][2]["eligible"], false);
  EXPECT_NEAR(m.library["screened"][2]["median_ms"].get<double>(), 0.8, 1e-9) << "still screened and reported";
  EXPECT_EQ(m.library["measured"].size(), 2u) << "the default and variant 1: no fast variant is a finalist";
  EXPECT_NE(m.library["note"].get<std::string>().find("2 fast-accumulation variants"), std::string::npos);

  // Only the fast variants pass: they compete, and the fastest is the baseline.
  FakeBackend c;
  c.variants = 3;
  c.variant_ms = {2.0, 0.8, 0.9};
  c.fast_accum_variants = {1, 2};
  c.on_compare = [](int n, Verification& v) {
    if (n == 0) v.mismatches = 3;  // the default fails its check
  };
  m = measure(c, o);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  EXPECT_EQ(m.library["algo"]["variant"], 1);
  EXPECT_TRUE(*m.verification.passed);
}

}  // namespace
}  // namespace croq

namespace croq {
namespace {

// The untimed preparation (croq_gemm_prepare of a sparse candidate, cuSPARSELt's compression):
// after every fill of a set and before anything is launched on it, the second seed included.
TEST(MeasureProcedure, EveryFillOfASetIsPreparedBeforeItsFirstLaunch) {
  FakeBackend b;
  Measurement m = measure(b);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  int fills = 0;
  for (size_t i = 0; i < b.calls.size(); ++i) {
    if (b.calls[i].rfind("fill(", 0) != 0) continue;
    ++fills;
    const std::string set = b.calls[i].substr(5, b.calls[i].find(',') - 5);
    bool prepared = false;
    for (size_t j = i + 1; j < b.calls.size(); ++j) {
      if (b.calls[j] == "prepare_operands(" + set + ")") {
        prepared = true;
        break;
      }
      EXPECT_NE(b.calls[j], "launch(" + set + ")") << "set " << set << " launched before its preparation";
      EXPECT_NE(b.calls[j], "start") << "timing started before set " << set << " was prepared";
    }
    EXPECT_TRUE(prepared) << "fill " << i << " of set " << set << " was never prepared";
  }
  EXPECT_EQ(fills, 3);  // set 0, set 1 (rotation), set 0 again with the second seed
  EXPECT_EQ(b.count("prepare_operands(0)"), 2);
  EXPECT_EQ(b.count("prepare_operands(1)"), 1);
}

TEST(MeasureProcedure, APreparationThatFailsIsTheCandidatesVerdict) {
  FakeBackend b;
  b.prepare_status = 1;  // CROQ_UNSUPPORTED
  Measurement m = measure(b);
  EXPECT_EQ(m.verdict, Verdict::UNSUPPORTED);
  EXPECT_NE(m.detail.find("croq_gemm_prepare"), std::string::npos) << m.detail;
  EXPECT_EQ(b.count("launch(0)"), 0) << "nothing runs on an unprepared set";
  FakeBackend c;
  c.prepare_status = 3;  // CROQ_LAUNCH_FAILED
  m = measure(c);
  EXPECT_EQ(m.verdict, Verdict::RUNTIME_FAIL);
  EXPECT_EQ(m.reason, "launch_status");
}

// A sparse problem's baseline offers cuSPARSELt and the dense libraries on the same inputs: each
// one's fastest variant is measured in full and reported, and the faster library is the baseline.
TEST(MeasureProcedure, EveryLibraryHasItsFastestVariantMeasuredAndReported) {
  FakeBackend b;
  b.variants = 5;
  b.variant_library = {"cusparseLt", "cusparseLt", "cusparseLt", "cusparseLt", "cublasLt"};
  b.variant_ms = {1.0, 0.8, 0.7, 0.75, 1.4};  // cuBLASLt's only variant is the slowest
  ProcedureOptions o = quick();
  o.library = true;
  o.screen_finalists = 2;
  Measurement m = measure(b, o);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  EXPECT_EQ(m.library["name"], "cusparseLt");
  EXPECT_NEAR(m.timing->median_ms, 0.7, 1e-9);
  ASSERT_TRUE(m.library["libraries"].contains("cusparseLt"));
  ASSERT_TRUE(m.library["libraries"].contains("cublasLt")) << "measured although it ranked last";
  EXPECT_NEAR(m.library["libraries"]["cusparseLt"]["median_ms"].get<double>(), 0.7, 1e-9);
  EXPECT_NEAR(m.library["libraries"]["cublasLt"]["median_ms"].get<double>(), 1.4, 1e-9);
  EXPECT_EQ(m.library["measured"].size(), 4u);  // the default, the two fastest, cuBLASLt's best

  // The dense library wins where it is faster: iter000 is the faster library.
  FakeBackend c;
  c.variants = 3;
  c.variant_library = {"cusparseLt", "cusparseLt", "cublasLt"};
  c.variant_ms = {1.0, 0.9, 0.6};
  m = measure(c, o);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  EXPECT_EQ(m.library["name"], "cublasLt");
  EXPECT_NEAR(m.timing->median_ms, 0.6, 1e-9);
  EXPECT_EQ(m.library["libraries"].size(), 2u);
}

}  // namespace
}  // namespace croq

namespace croq {
namespace {

// The target gets its inputs as const and croq's reference is made from them: they are compared
// with what the backend wrote before every comparison of an output, after each croq_gemm_prepare
// and, for every input set, after the timing; a change is VERIFY_FAIL input_modified, found before
// the output it would have excused is compared.
TEST(MeasureProcedure, InputsAreCheckedBeforeEveryComparisonAndAChangeIsInputModified) {
  FakeBackend b;
  ProcedureOptions o = quick();
  o.rotation_sets = 2;
  Measurement ok = run_procedure(b, problem_1024(), *parse_dtype_pair("f16f32"), o);
  ASSERT_EQ(ok.verdict, Verdict::PASS) << ok.detail;
  // one check per comparison, plus one after each prepare (fills of set 0 and 1, the second seed)
  // and one per set after the timing
  EXPECT_GE(b.input_checks.size(), static_cast<size_t>(b.compares + 2));
  EXPECT_NE(std::find(b.input_checks.begin(), b.input_checks.end(), 1), b.input_checks.end());
  for (size_t i = 0; i + 1 < b.checks_before_compare.size(); ++i) {
    EXPECT_LE(b.checks_before_compare[i], b.checks_before_compare[i + 1]);
  }

  for (int at : {0, 3}) {
    SCOPED_TRACE(at);
    FakeBackend c;
    int compares_then = -1;
    c.on_check_inputs = [&](int n, std::vector<std::string>& changed) {
      if (n != at) return;
      changed = {"A's scales"};
      compares_then = c.compares;
    };
    Measurement m = run_procedure(c, problem_1024(), *parse_dtype_pair("f16f32"), o);
    EXPECT_EQ(m.verdict, Verdict::VERIFY_FAIL);
    EXPECT_EQ(m.reason, "input_modified") << m.detail;
    EXPECT_NE(m.detail.find("A's scales"), std::string::npos) << m.detail;
    EXPECT_EQ(c.compares, compares_then) << "an output was compared after the change was found";
  }
}

}  // namespace
}  // namespace croq
