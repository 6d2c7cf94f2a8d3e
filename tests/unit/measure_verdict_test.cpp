// How a finished runner process becomes a verdict (crash, hang, exit codes, a missing document),
// the ledger decision of each verdict, and legacy self-timed programs' output.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "croq/measure/invoke.hpp"
#include "croq/measure/legacy.hpp"
#include "croq/util/error.hpp"

namespace croq {
namespace {

Measurement skeleton() {
  Measurement m;
  m.problem.m = m.problem.n = m.problem.k = 1024;
  m.problem.dtype = "f16f32";
  m.candidate_path = "/w/bin/k.so";
  m.device.name = "NVIDIA H200";
  m.device.peak_tflops = 989.4;
  return m;
}

ProcessResult exited(int code, std::string err = {}, std::string out = {}) {
  ProcessResult r;
  r.started = true;
  r.exit_code = code;
  r.err = std::move(err);
  r.out = std::move(out);
  r.wall_ms = 1234;
  return r;
}

std::string passing_document() {
  Measurement m = skeleton();
  m.verdict = Verdict::PASS;
  m.reason = "ok";
  m.tflops = 500;
  Timing t;
  t.median_ms = 0.0043;
  m.timing = t;
  return m.to_json().dump();
}

TEST(MeasureVerdict, ASignalIsASegfaultThatSaysWhereTheRunnerWas) {
  ProcessResult r = exited(-1, "phase: purity scan\nphase: load\nphase: check (first seed)\n");
  r.term_signal = SIGSEGV;
  Measurement m = interpret_runner(r, std::nullopt, skeleton());
  EXPECT_EQ(m.verdict, Verdict::SEGFAULT);
  EXPECT_EQ(m.reason, "crashed");
  EXPECT_NE(m.detail.find("SIGSEGV"), std::string::npos);
  EXPECT_NE(m.detail.find("check (first seed)"), std::string::npos);
  EXPECT_EQ(m.candidate_path, "/w/bin/k.so");
  EXPECT_EQ(m.process["signal"], SIGSEGV);
}

TEST(MeasureVerdict, KilledAtTheLimitIsAHang) {
  ProcessResult r = exited(-1, "phase: timing\n");
  r.timed_out = true;
  r.term_signal = SIGKILL;
  Measurement m = interpret_runner(r, std::nullopt, skeleton());
  EXPECT_EQ(m.verdict, Verdict::HANG);
  EXPECT_EQ(m.reason, "timed_out");
  EXPECT_NE(m.detail.find("during timing"), std::string::npos);
  EXPECT_TRUE(m.process["timed_out"].get<bool>());
}

TEST(MeasureVerdict, TheRunnersDocumentIsTakenAsItIs) {
  Measurement m = interpret_runner(exited(0), passing_document(), skeleton());
  EXPECT_EQ(m.verdict, Verdict::PASS);
  EXPECT_DOUBLE_EQ(*m.tflops, 500);
  EXPECT_EQ(m.process["exit_code"], 0);
  // Without an --out file, stdout is read.
  Measurement n = interpret_runner(exited(0, {}, passing_document()), std::nullopt, skeleton());
  EXPECT_EQ(n.verdict, Verdict::PASS);
}

TEST(MeasureVerdict, ExitingWithoutADocumentIsTheCandidatesFault) {
  Measurement m = interpret_runner(exited(0, "phase: timing\n", "hello"), std::string(), skeleton());
  EXPECT_EQ(m.verdict, Verdict::RUNTIME_FAIL);
  EXPECT_EQ(m.reason, "no_measurement");
  Measurement e = interpret_runner(exited(3, "phase: check (first seed)\n"), std::nullopt, skeleton());
  EXPECT_EQ(e.verdict, Verdict::RUNTIME_FAIL);
  EXPECT_NE(e.detail.find("status 3"), std::string::npos);
}

TEST(MeasureVerdict, TheRunnersOwnFailuresAreCroqErrorsNotVerdicts) {
  auto code_of = [](int exit_code) {
    try {
      interpret_runner(exited(exit_code, "croq-gpu-runner: something\n"), std::nullopt, skeleton());
    } catch (const Error& e) {
      return e.code();
    }
    return ExitCode::ok;
  };
  EXPECT_EQ(code_of(2), ExitCode::internal);
  EXPECT_EQ(code_of(4), ExitCode::not_found);
  EXPECT_EQ(code_of(7), ExitCode::no_device);
  EXPECT_EQ(code_of(70), ExitCode::internal);
  ProcessResult never;
  never.spawn_error = "croq-gpu-runner: No such file";
  EXPECT_THROW(interpret_runner(never, std::nullopt, skeleton()), Error);
}

// A runner that answers each process with the next document of a list (on stdout) and counts
// the processes.
class ScriptedRunner : public ProcessRunner {
 public:
  std::vector<std::string> documents;
  int calls = 0;
  ProcessResult run(const ProcessSpec&) override {
    return exited(0, {}, documents.at(static_cast<size_t>(calls++)));
  }
};

std::string document(double tflops, double median_ms, Verdict v = Verdict::PASS, uint64_t seed = 1) {
  Measurement m = skeleton();
  m.verdict = v;
  m.reason = v == Verdict::PASS ? "ok" : "mismatch";
  m.seed = seed;
  if (v == Verdict::PASS) {
    m.tflops = tflops;
    Timing t;
    t.median_ms = median_ms;
    t.reps = 500;
    m.timing = t;
  }
  return m.to_json().dump();
}

// A short kernel is measured in three processes and the median one is the result; a long one in
// one process; a failure in any process decides.
TEST(MeasureRepeats, AShortKernelIsTheMedianOfThreeProcesses) {
  MeasureJob job;
  job.program = "/x/croq-gpu-runner";
  job.options.candidate = "/x/k.so";
  job.skeleton = skeleton();

  ScriptedRunner short_runs;
  short_runs.documents = {document(122.0, 0.0074, Verdict::PASS, 11), document(118.5, 0.0076, Verdict::PASS, 12),
                          document(123.1, 0.0073, Verdict::PASS, 13)};
  Measurement m = run_measure_repeated(job, short_runs, RepeatPolicy{});
  EXPECT_EQ(short_runs.calls, 3);
  ASSERT_TRUE(m.tflops);
  EXPECT_DOUBLE_EQ(*m.tflops, 122.0);
  EXPECT_EQ(*m.seed, 11u) << "a real measurement: the median process's own document";
  ASSERT_TRUE(m.runs.is_array());
  ASSERT_EQ(m.runs.size(), 3u);
  EXPECT_DOUBLE_EQ(m.runs[1]["tflops"].get<double>(), 118.5);
  EXPECT_EQ(m.runs[0].value("chosen_run", false), true);
  Measurement back = *Measurement::from_json(m.to_json());
  EXPECT_EQ(back.runs.size(), 3u);

  ScriptedRunner long_run;
  long_run.documents = {document(700.0, 0.2)};
  m = run_measure_repeated(job, long_run, RepeatPolicy{});
  EXPECT_EQ(long_run.calls, 1);
  EXPECT_TRUE(m.runs.is_null());

  ScriptedRunner one_fails;
  one_fails.documents = {document(122.0, 0.0074), document(0, 0, Verdict::VERIFY_FAIL), document(123.0, 0.0073)};
  m = run_measure_repeated(job, one_fails, RepeatPolicy{});
  EXPECT_EQ(one_fails.calls, 2) << "no process after a failure";
  EXPECT_EQ(m.verdict, Verdict::VERIFY_FAIL);
  EXPECT_EQ(m.runs.size(), 2u);

  ScriptedRunner single;
  single.documents = {document(122.0, 0.0074)};
  m = run_measure_repeated(job, single, RepeatPolicy{1, 0.025});
  EXPECT_EQ(single.calls, 1) << "--processes 1";
}

// A runner at croq's gate (--go-file F, the Python runner's protocol): it creates F.ready once its
// imports are done, waits for F, then measures. `waits` false: a runner that ignores the gate.
class GatedRunner : public ProcessRunner {
 public:
  bool waits = true;
  std::atomic<bool> waiting{false};  // its ready file written, waiting for the go file
  std::atomic<bool> saw_go{false};
  bool stopped = false;
  std::string document_text;
  ProcessResult run(const ProcessSpec& spec) override {
    std::string go;
    for (size_t i = 0; i + 1 < spec.argv.size(); ++i) {
      if (spec.argv[i] == "--go-file") go = spec.argv[i + 1];
    }
    if (go.empty() || !waits) return exited(0, {}, document_text);
    std::ofstream(go + ".ready") << "ready\n";
    waiting = std::filesystem::exists(go + ".ready");
    for (int i = 0; i < 2000; ++i) {  // 10 s at most
      if (std::filesystem::exists(go)) {
        saw_go = true;
        return exited(0, {}, document_text);
      }
      if (spec.should_stop && spec.should_stop()) {
        stopped = true;
        ProcessResult r = exited(-1);
        r.stopped = true;
        r.term_signal = SIGTERM;
        return r;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return exited(0, {}, "");
  }
};

// The gate opens only when the runner is ready (its imports done), and the runner measures only
// after it: croq takes the device's lease in between. A runner that measures without waiting is
// croq's error, never a figure; a gate that cannot open (the lease's time is up) stops the runner.
TEST(MeasureGate, TheDeviceIsTakenOnlyWhenTheRunnerIsReady) {
  MeasureJob job;
  job.program = "/usr/bin/python3";
  job.prefix = {"croq_runner.py"};
  job.options.candidate = "/x/k.py";
  job.skeleton = skeleton();
  job.gate_timeout = std::chrono::seconds(5);
  int opened = 0;
  bool ready_when_opened = false;
  GatedRunner runner;
  runner.document_text = document(700.0, 0.2);
  job.gate = [&] {
    ++opened;
    // The runner is waiting at the gate (its ready file written) and has not measured.
    ready_when_opened = runner.waiting.load();
    EXPECT_FALSE(runner.saw_go.load());
  };
  Measurement m = run_measure_job(job, runner);
  EXPECT_EQ(opened, 1);
  EXPECT_TRUE(ready_when_opened);
  EXPECT_TRUE(runner.saw_go.load());
  EXPECT_EQ(m.verdict, Verdict::PASS);
  EXPECT_EQ(m.process.value("gated", false), true);

  GatedRunner ignores;
  ignores.waits = false;
  ignores.document_text = document(700.0, 0.2);
  opened = 0;
  EXPECT_THROW(run_measure_job(job, ignores), Error) << "a figure taken without the lease";
  EXPECT_EQ(opened, 0);

  GatedRunner held;
  held.document_text = document(700.0, 0.2);
  job.gate = [] { throw Error(ExitCode::busy, "the lease is held by another measurement"); };
  EXPECT_THROW(run_measure_job(job, held), Error);
  EXPECT_TRUE(held.stopped) << "the runner waiting at the gate is stopped";
  EXPECT_FALSE(held.saw_go.load());
}

TEST(MeasureVerdict, EachFailureHasItsLedgerDecision) {
  EXPECT_FALSE(failure_decision(Verdict::PASS));
  EXPECT_EQ(*failure_decision(Verdict::VERIFY_FAIL), Decision::VERIFY_FAIL);
  EXPECT_EQ(*failure_decision(Verdict::IMPOSSIBLE), Decision::VERIFY_FAIL);
  EXPECT_EQ(*failure_decision(Verdict::RUNTIME_FAIL), Decision::RUNTIME_FAIL);
  EXPECT_EQ(*failure_decision(Verdict::UNSUPPORTED), Decision::VERIFY_FAIL);
  EXPECT_EQ(*failure_decision(Verdict::SEGFAULT), Decision::SEGFAULT);
  EXPECT_EQ(*failure_decision(Verdict::HANG), Decision::HANG);
  EXPECT_EQ(*failure_decision(Verdict::LIBRARY_CALL_FORBIDDEN), Decision::VERIFY_FAIL);
  EXPECT_EQ(*parse_verdict("verify_fail"), Verdict::VERIFY_FAIL);
  EXPECT_FALSE(parse_verdict("OK"));
}

TEST(MeasureLegacy, ParsesTheSeedsAndChoreosLines) {
  LegacyOutput seeds = parse_legacy_output("VERIFY: PASS\nTFLOPS: 512.30   time_ms: 0.268\n");
  EXPECT_TRUE(*seeds.verify_passed);
  EXPECT_DOUBLE_EQ(*seeds.tflops, 512.30);
  EXPECT_DOUBLE_EQ(*seeds.time_ms, 0.268);
  LegacyOutput choreo = parse_legacy_output("Timing avg ms: 0.2103\nTFLOPS: 653.5\nHW efficiency: 86%\nTest Passed\n");
  EXPECT_TRUE(*choreo.verify_passed);
  EXPECT_DOUBLE_EQ(*choreo.time_ms, 0.2103);
  LegacyOutput skipped = parse_legacy_output("TFLOPS: 600\nTest Passed (verify skipped)\n");
  EXPECT_FALSE(skipped.verify_passed);
  EXPECT_TRUE(skipped.verify_skipped);
  LegacyOutput failed = parse_legacy_output("[3, 4] 1.5 <-> 9, delta: 500%\nvalues are not equal.\nTest Passed\n");
  EXPECT_FALSE(*failed.verify_passed);
  EXPECT_FALSE(*parse_legacy_output("VERIFY: FAIL max_abs_err=3.2\n").verify_passed);
}

TEST(MeasureLegacy, VerdictsOfSelfTimedPrograms) {
  auto verdict = [](const std::string& out, ProcessResult r) {
    Measurement m = skeleton();
    apply_legacy_result(m, parse_legacy_output(out), r);
    return m;
  };
  Measurement pass = verdict("VERIFY: PASS\nTFLOPS: 512.3   time_ms: 0.0042\n", exited(0));
  EXPECT_EQ(pass.verdict, Verdict::PASS);
  EXPECT_EQ(pass.source, "reported");
  EXPECT_EQ(pass.kind, "legacy");
  EXPECT_DOUBLE_EQ(*pass.tflops, 512.3);
  EXPECT_EQ(pass.timing->method, "reported");
  // Time only: TFLOPS from 2MNK / time.
  Measurement from_time = verdict("Timing avg ms: 1.0\nTest Passed\n", exited(0));
  EXPECT_NEAR(*from_time.tflops, 2.147483648, 1e-9);
  EXPECT_EQ(verdict("TFLOPS: 600\nTest Passed (verify skipped)\n", exited(0)).reason, "legacy_verify_skipped");
  EXPECT_EQ(verdict("TFLOPS: 600\n", exited(0)).reason, "legacy_verify_skipped");
  EXPECT_EQ(verdict("VERIFY: FAIL\nTFLOPS: 600\n", exited(1)).verdict, Verdict::VERIFY_FAIL);
  EXPECT_EQ(verdict("VERIFY: PASS\n", exited(0)).reason, "legacy_no_timing");
  EXPECT_EQ(verdict("VERIFY: PASS\nTFLOPS: 5000\n", exited(0)).verdict, Verdict::IMPOSSIBLE);
  EXPECT_EQ(verdict("VERIFY: PASS\nTFLOPS: 500\n", exited(2)).verdict, Verdict::RUNTIME_FAIL);
  ProcessResult crash = exited(-1);
  crash.term_signal = SIGABRT;
  EXPECT_EQ(verdict("TFLOPS: 5\n", crash).verdict, Verdict::SEGFAULT);
  ProcessResult hang = exited(-1);
  hang.timed_out = true;
  EXPECT_EQ(verdict("", hang).verdict, Verdict::HANG);
}

}  // namespace
}  // namespace croq
