// The verbs' steps called as functions, without the command line (issue: src/cli parses,
// components act): the device a measurement runs on, croq measure's refusals before anything runs,
// the library baseline's documents, the runner's command line croq profile gives ncu, and several
// shapes tuned at once in child processes.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <mutex>

#include "croq/build/prepare.hpp"
#include "croq/gpu/device_choice.hpp"
#include "croq/gpu/device_key.hpp"
#include "croq/gpu/gpu_steps.hpp"
#include "croq/measure/baseline.hpp"
#include "croq/profile/run_profile.hpp"
#include "croq/profile/run_sass.hpp"
#include "croq/protocol/evidence.hpp"
#include "croq/search/parallel_tune.hpp"
#include "croq/steps/build_step.hpp"
#include "croq/steps/measure_step.hpp"
#include "croq/sweep/request.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

namespace fs = std::filesystem;

// A runner that must not be reached: the step refuses before anything runs.
class NoProcesses : public ProcessRunner {
 public:
  ProcessResult run(const ProcessSpec& spec) override {
    ADD_FAILURE() << "a process was started: " << (spec.argv.empty() ? "" : spec.argv.front());
    return {};
  }
};

struct EnvGuard {
  explicit EnvGuard(const char* name) : m_name(name) {
    if (const char* v = std::getenv(name)) m_old = v;
    ::unsetenv(name);
  }
  ~EnvGuard() {
    if (m_old) ::setenv(m_name, m_old->c_str(), 1);
    else ::unsetenv(m_name);
  }
  const char* m_name;
  std::optional<std::string> m_old;
};

// One CPU, one lease: a slot cpu<i> is a lease of its own only among a test sweep's fake devices
// (CROQ_SWEEP_FAKE_DEVICES); elsewhere `--device cpu99` would escape the lease every other cpp
// measurement of the machine takes, and overlap them on the same cores.
TEST(Steps, ChooseDeviceOnTheCpuTakesTheLeaseSlotNamedOnlyAmongFakeDevices) {
  EnvGuard env("CROQ_DEVICE");
  EnvGuard fake("CROQ_SWEEP_FAKE_DEVICES");
  const DtypePair f32 = parse_dtype_pair_or_throw("f32");
  DeviceChoice d = choose_device("cpp", "", f32, "matmul");
  EXPECT_EQ(d.lease_id, "cpu");
  EXPECT_EQ(d.facts.key, cpu_device_key());
  EXPECT_EQ(d.facts.name, "host CPU");
  EXPECT_TRUE(d.visible.empty());  // the CPU runner is not pinned to a GPU
  EXPECT_EQ(choose_device("cpp", "cpu99", f32, "matmul").lease_id, "cpu");
  ::setenv("CROQ_SWEEP_FAKE_DEVICES", "16", 1);
  EXPECT_EQ(choose_device("cpp", "cpu3", f32, "matmul").lease_id, "cpu3");
  ::setenv("CROQ_DEVICE", "cpu12", 1);  // croq sweep's worker on a fake device
  EXPECT_EQ(choose_device("cpp", "", f32, "matmul").lease_id, "cpu12");
  // Not a slot name: the one CPU lease.
  EXPECT_EQ(choose_device("cpp", "cpu", f32, "matmul").lease_id, "cpu");
  EXPECT_EQ(choose_device("cpp", "cpu12345678", f32, "matmul").lease_id, "cpu");
  EXPECT_EQ(choose_device("cpp", "cpux", f32, "matmul").lease_id, "cpu");
}

// dsl cpp files its tasks under a CPU key: a GPU key passed for it is refused, and a GPU key in
// CROQ_GPU is not taken for it.
TEST(Steps, ACppTaskIsNeverFiledUnderAGpusKey) {
  EnvGuard env("CROQ_GPU");
  EXPECT_THROW(resolve_device_key("sm90_NVIDIA_H200", "cpp"), Error);
  EXPECT_EQ(resolve_device_key("cpu_test", "cpp"), "cpu_test");
  ::setenv("CROQ_GPU", "sm90_NVIDIA_H200", 1);
  EXPECT_EQ(resolve_device_key("", "cpp"), cpu_device_key());
  EXPECT_EQ(resolve_device_key("", "cuda"), "sm90_NVIDIA_H200");
}

// nvidia-smi as an H200 machine answers it: one GPU, and the compute processes given.
class FakeNvidiaSmi : public ProcessRunner {
 public:
  std::string apps = "No running processes found\n";
  int calls = 0;
  ProcessResult run(const ProcessSpec& spec) override {
    ++calls;
    ProcessResult r;
    EXPECT_EQ(spec.argv.at(0), "nvidia-smi");
    r.started = true;
    r.exit_code = 0;
    if (spec.argv.at(1).rfind("--query-gpu=", 0) == 0) {
      r.out = "0, NVIDIA H200, GPU-8d6b5f52-1d4e-2e47-5c59-3d1a0e2a9f11, 9.0, 580.159.04, 00000000:18:00.0, 143771, 14, 0, "
              "31, 345, 1980\n";
    } else {
      r.out = apps;
    }
    return r;
  }
};

TEST(Steps, GpuKeyAndCheckReadNvidiaSmiThroughTheRunnerGiven) {
  EnvGuard env("CUDA_VISIBLE_DEVICES");
  FakeNvidiaSmi smi;
  std::vector<std::string> notes;
  StepDeps deps{smi, [&](const std::string& l) { notes.push_back(l); }};
  StepResult key = run_gpu_key("", deps);
  EXPECT_EQ(key.doc.value("key", ""), "sm90_NVIDIA_H200");
  EXPECT_EQ(key.notes, std::vector<std::string>{"sm90_NVIDIA_H200"});
  try {
    run_gpu_key("3", deps);
    ADD_FAILURE() << "no refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::no_device);
    EXPECT_NE(std::string(e.what()).find("GPU-8d6b5f52"), std::string::npos) << e.what();  // the GPUs there are
  }
  GpuCheckOptions o;
  StepResult idle = run_gpu_check(o, deps);
  EXPECT_EQ(idle.code, ExitCode::ok);
  EXPECT_TRUE(idle.doc.value("idle", false));
  EXPECT_EQ(idle.doc["device"].value("uuid", ""), "GPU-8d6b5f52-1d4e-2e47-5c59-3d1a0e2a9f11");
  // Another user's process on it: busy, and said why; without --wait it does not wait.
  smi.apps = "4242, /usr/bin/python3, 20480, GPU-8d6b5f52-1d4e-2e47-5c59-3d1a0e2a9f11\n";
  StepResult busy = run_gpu_check(o, deps);
  EXPECT_EQ(busy.code, ExitCode::failure);
  EXPECT_FALSE(busy.doc.value("idle", true));
  ASSERT_EQ(busy.doc["processes"].size(), 1u);
  EXPECT_EQ(busy.doc["processes"][0].value("pid", 0), 4242);
  ASSERT_EQ(busy.notes.size(), 1u);
  EXPECT_NE(busy.notes[0].find("is busy"), std::string::npos);
  // With --wait and no time left: busy (exit code busy), after one look.
  o.wait = true;
  o.timeout_s = 0;
  EXPECT_EQ(run_gpu_check(o, deps).code, ExitCode::busy);
  EXPECT_TRUE(notes.empty());
  // Contention: a process this machine cannot see is another's (nothing is ended: no --kill).
  smi.apps = "4194303, /usr/bin/python3, 20480, GPU-8d6b5f52-1d4e-2e47-5c59-3d1a0e2a9f11\n";
  StepResult cont = run_gpu_contention(GpuContentionOptions{}, deps);
  EXPECT_EQ(cont.doc.value("foreign", 0), 1);
  EXPECT_EQ(cont.doc.value("ours", 1), 0);
  EXPECT_TRUE(cont.doc["killed"].empty());
  EXPECT_TRUE(cont.doc.contains("note"));
}

class StepsOnATask : public ::testing::Test {
 protected:
  TaskRef m_task = make_task(cpu_device_key(), "cpp", "matmul_f32_64x64x64", "opus-4");
  test::TempDir m_dir;
  Workspace m_ws{m_dir.path()};
  NoProcesses m_no_processes;
  std::vector<std::string> m_notes;
  StepDeps deps() {
    return {m_no_processes, [this](const std::string& l) { m_notes.push_back(l); }};
  }
};

TEST_F(StepsOnATask, MeasureRecordsACandidateThatIsNoSharedObjectWithoutRunningIt) {
  const fs::path so = m_ws.kind_dir(m_task, ArtifactKind::bin) / "iter001_bad.so";
  atomic_write(so, "not an ELF file", false);
  MeasureOptions o;
  o.iter = "iter001_bad";
  StepResult r = run_measure(m_ws, m_task, o, deps());
  EXPECT_EQ(r.code, ExitCode::candidate_failed);
  EXPECT_EQ(r.doc.value("verdict", ""), "RUNTIME_FAIL");
  EXPECT_EQ(r.doc.value("reason", ""), "load_failed");
  EXPECT_FALSE(r.doc.value("ran", true));
  EXPECT_EQ(r.trace.value("kernel", ""), "iter001_bad");
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("croq measure iter001_bad: RUNTIME_FAIL"), std::string::npos) << r.notes[0];
  // The measurement file, its timing text and the protocol's evidence are written.
  const fs::path file = m_ws.kind_dir(m_task, ArtifactKind::perf) / "measure_iter001_bad.json";
  ASSERT_TRUE(fs::is_regular_file(file));
  EXPECT_EQ(r.doc["files"].value("measurement", ""), m_ws.display(file));
  auto evidence = read_evidence(m_ws, m_task);
  ASSERT_EQ(evidence.size(), 1u);
  EXPECT_EQ(evidence[0].kind, EvidenceKind::measure);
  EXPECT_EQ(evidence[0].kernel, "iter001_bad");
  EXPECT_EQ(evidence[0].summary.value("verdict", ""), "RUNTIME_FAIL");
}

TEST_F(StepsOnATask, BuildRefusesALibraryCallBeforeCompilingAndRecordsIt) {
  atomic_write(m_ws.kind_dir(m_task, ArtifactKind::srcs) / "iter001_blas.cpp",
               "#include \"croq/kernel_abi.h\"\nvoid f(const float* a) { cblas_sgemm(a); }\n", false);
  BuildStepOptions o;
  o.iters = {"iter001"};
  // A typo in one target: nothing is built.
  o.iters.push_back("iter009");
  EXPECT_THROW(run_build(m_ws, m_task, o, deps()), Error);
  EXPECT_TRUE(read_evidence(m_ws, m_task).empty());
  o.iters = {"iter001"};
  StepResult r = run_build(m_ws, m_task, o, deps());
  EXPECT_EQ(r.code, ExitCode::candidate_failed);
  EXPECT_EQ(r.doc.value("verdict", ""), "LIBRARY_CALL_FORBIDDEN");
  EXPECT_EQ(r.doc.value("kernel", ""), "iter001_blas");
  ASSERT_FALSE(m_notes.empty());
  EXPECT_EQ(m_notes[0].rfind("[build] iter001_blas LIBRARY_CALL_FORBIDDEN", 0), 0u) << m_notes[0];
  auto evidence = read_evidence(m_ws, m_task);
  ASSERT_EQ(evidence.size(), 1u);
  EXPECT_EQ(evidence[0].kind, EvidenceKind::build);
  EXPECT_EQ(evidence[0].summary.value("verdict", ""), "LIBRARY_CALL_FORBIDDEN");
}

TEST_F(StepsOnATask, PrepareCopiesTheStartingKernelToIter001Once) {
  const fs::path start = m_dir / "blocked.cpp";
  atomic_write(start, "// a starting kernel\n", false);
  PrepareOptions o;
  o.from = start.string();
  o.croq_exe = "/opt/croq/croq";
  StepResult r = run_prepare(m_ws, m_task, o, deps());
  EXPECT_EQ(r.doc.value("kernel", ""), "iter001_blocked");
  const fs::path dest = m_ws.kind_dir(m_task, ArtifactKind::srcs) / "iter001_blocked.cpp";
  EXPECT_EQ(read_file(dest).value_or(""), "// a starting kernel\n");
  EXPECT_TRUE(fs::is_regular_file(m_ws.kind_dir(m_task, ArtifactKind::cmd) / "build_iter001.sh"));
  EXPECT_NE(read_file(m_ws.kind_dir(m_task, ArtifactKind::cmd) / "run_iter001.sh").value_or("").find("/opt/croq/croq"),
            std::string::npos);
  ASSERT_EQ(m_notes.size(), 1u);
  EXPECT_EQ(m_notes[0].rfind("[prepare] ", 0), 0u);
  // iter001 has a source: refused, unless --force (it is not stored).
  try {
    run_prepare(m_ws, m_task, o, deps());
    ADD_FAILURE() << "no refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::conflict);
  }
  o.force = true;
  o.tag = "again";
  EXPECT_EQ(run_prepare(m_ws, m_task, o, deps()).doc.value("kernel", ""), "iter001_again");
  EXPECT_FALSE(fs::exists(dest));
  o.pick = 1;
  EXPECT_THROW(run_prepare(m_ws, m_task, o, deps()), Error);
}

TEST_F(StepsOnATask, MeasureNeedsExactlyOneCandidate) {
  MeasureOptions o;
  EXPECT_THROW(run_measure(m_ws, m_task, o, deps()), Error);
  o.iter = "iter001_x";
  o.candidate = "x.so";
  EXPECT_THROW(run_measure(m_ws, m_task, o, deps()), Error);
}

TEST_F(StepsOnATask, BaselineRefusesAGpuLibraryForTheCppDslBeforeMeasuring) {
  BaselineOptions o;
  o.library = "cublas";
  try {
    run_baseline(m_ws, m_task, o, deps());
    ADD_FAILURE() << "no refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    EXPECT_NE(std::string(e.what()).find("openblas"), std::string::npos) << e.what();
  }
  o.library = "auto";
  o.m = 65;  // the original skill's --m, checked against the shape key
  EXPECT_THROW(run_baseline(m_ws, m_task, o, deps()), Error);
}

Measurement passed_baseline(double cv) {
  Measurement m;
  m.verdict = Verdict::PASS;
  m.tflops = 0.5;
  m.created_at = "2026-12-02T08:00:00Z";
  m.problem.dtype = "f32";
  m.problem.op = "matmul";
  m.device.name = "host CPU";
  m.device.peak_tflops = 2.0;
  Timing t;
  t.median_ms = 1.25;
  t.cv = cv;
  t.reps = 40;
  t.method = "steady_clock";
  m.timing = t;
  m.seed = 7;
  m.library = {{"name", "cublaslt"},
               {"chosen", "heuristic"},
               {"libraries", {{"cublas", {{"tflops", 0.4}, {"median_ms", 1.5}}}, {"cublaslt", {{"tflops", 0.5}, {"median_ms", 1.25}}}}}};
  return m;
}

TEST(Steps, TheBaselineDocumentsComeFromItsMeasurement) {
  const ShapeKey shape = make_task("sm90_NVIDIA_H200", "cuda", "matmul_f32_64x64x64", "m").shape;
  MeasurementFile mf{"/w/baseline/measure_cublas.json", "abc123", passed_baseline(0.002)};
  json result = baseline_result_document(mf, shape, "cublas", "uid-1", "baseline/measure_cublas.json");
  EXPECT_EQ(result.value("schema", ""), "croq-baseline-v1");
  EXPECT_EQ(result.value("library", ""), "cublaslt");  // the measurement's fastest, not the tag
  EXPECT_EQ(result.value("m", 0), 64);
  EXPECT_DOUBLE_EQ(result.value("time_ms", 0.0), 1.25);
  EXPECT_EQ(result.value("measurement_sha256", ""), "abc123");
  EXPECT_EQ(result.value("task_uid", ""), "uid-1");
  EXPECT_EQ(result["libraries"].size(), 2u);
  StoreRequest req = baseline_store_request(mf, "cublas", "uid-1", "baseline/measure_cublas.json");
  EXPECT_EQ(req.iter, "iter000");
  EXPECT_EQ(req.kernel, "iter000_cublas");
  EXPECT_EQ(req.decision, "BASELINE");
  EXPECT_EQ(req.round, 0);
  EXPECT_EQ(req.source, "measured");
  EXPECT_NE(req.idea.find("fastest of: cublas 0.40, cublaslt 0.50"), std::string::npos) << req.idea;
  EXPECT_TRUE(baseline_warnings(mf.measurement, 0.01).empty());
  // A noisy baseline and one far below the device's peak are flagged.
  Measurement noisy = passed_baseline(0.05);
  noisy.tflops = 0.001;
  json w = baseline_warnings(noisy, 0.01);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].value("flag", ""), "noisy");
  EXPECT_EQ(w[1].value("flag", ""), "implausible");
  // The spread judged is the robust one the decisions use: a few stray repetitions (plain CV 74 %,
  // robust 1.5 %... 0.5 %) do not make a baseline noisy.
  Measurement strays = passed_baseline(0.74);
  strays.timing->robust_cv = 0.005;
  EXPECT_TRUE(baseline_warnings(strays, 0.01).empty());
  strays.timing->robust_cv = 0.03;
  EXPECT_EQ(baseline_warnings(strays, 0.01).size(), 1u);
  // A failed measurement is no baseline.
  Measurement failed = passed_baseline(0.002);
  failed.verdict = Verdict::VERIFY_FAIL;
  EXPECT_THROW(baseline_result_document({"/x", "s", failed}, shape, "cublas", "u", "x"), Error);
  // Which library, by dsl and operator.
  EXPECT_EQ(baseline_library("cpp", shape, "auto").runner_library, "openblas");
  EXPECT_EQ(baseline_library("cuda", shape, "auto").tag, "cublas");
  EXPECT_EQ(baseline_library("cuda", shape, "cublaslt").tag, "cublaslt");
  EXPECT_THROW(baseline_library("cuda", shape, "cusparselt"), Error);  // a dense problem
  EXPECT_THROW(baseline_library("cuda", shape, "openblas"), Error);
}

TEST(Steps, ProfileGivesNcuTheRunnersCommandLineInItsProfileMode) {
  test::TempDir dir;
  Workspace ws(dir.path());
  const TaskRef t = make_task("sm90_NVIDIA_H200", "cuda", "matmul_f16fp32_256x128x64", "opus-4");
  profile::ProfileOptions o;
  o.library = "cublas";
  o.round = 3;
  o.runner = "/opt/croq/croq-gpu-runner";
  o.ncu = "/usr/local/cuda/bin/ncu";
  o.seed = 5;
  profile::ProfileCapture pc = profile::profile_capture(ws, t, o);
  EXPECT_EQ(pc.kernel, "iter000_cublas");
  EXPECT_EQ(pc.capture.stem, "ncu_iter000_cublas_round3");
  EXPECT_EQ(pc.capture.ncu, "/usr/local/cuda/bin/ncu");
  EXPECT_TRUE(pc.capture.expect_library);
  EXPECT_EQ(pc.capture.nvtx_range, "croq_candidate");
  const std::vector<std::string> want{"/opt/croq/croq-gpu-runner", "--library", "cublas", "--op", "matmul", "--m", "256",
                                      "--n", "128", "--k", "64", "--dtype", "f16f32", "--b-layout", "auto",
                                      "--seed", "5", "--mode", "profile", "--warmup", "3"};
  EXPECT_EQ(pc.capture.program, want);
  // A candidate must be built first; exactly one source is named.
  o.library.clear();
  o.iter = "iter002_tiles";
  EXPECT_THROW(profile::profile_capture(ws, t, o), Error);
  o.library = "cublas";
  EXPECT_THROW(profile::profile_capture(ws, t, o), Error);
}

TEST(Steps, SassComparedFromTextFilesIsKeptAndRecordedForATask) {
  const std::string data = std::string(CROQ_TEST_DATA_DIR) + "/sass/";
  NoProcesses none;  // text files: no cuobjdump, no ncu
  std::vector<std::string> notes;
  StepDeps deps{none, [&](const std::string& l) { notes.push_back(l); }};
  profile::SassCompareOptions o;
  o.cand.file = data + "synthetic_naive_sm90a.sass";
  o.base.file = data + "synthetic_hgmma_sm90a.sass";
  StepResult r = profile::run_sass_compare(nullptr, std::nullopt, o, deps);
  ASSERT_TRUE(r.doc["divergences"].is_array());
  EXPECT_FALSE(r.doc["divergences"].empty());  // the naive kernel has no HGMMA
  EXPECT_EQ(r.doc["top"], r.doc["divergences"][0]);
  EXPECT_FALSE(r.doc.contains("file"));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("[sass] top divergence", 0), 0u) << notes[0];
  // With a task: the baseline's dump is kept, the comparison kept beside it and recorded.
  test::TempDir dir;
  Workspace ws(dir.path());
  const TaskRef t = make_task("sm90_NVIDIA_H200", "cuda", "matmul_f16fp32_256x128x64", "opus-4");
  profile::SassDumpOptions d;
  d.baseline = true;
  d.src.file = data + "synthetic_hgmma_sm90a.sass";
  StepResult dumped = profile::run_sass_dump(&ws, t, d, deps);
  EXPECT_TRUE(fs::is_regular_file(ws.kind_dir(t, ArtifactKind::perf) / "sass_baseline.sass"));
  EXPECT_EQ(dumped.doc.value("sass_file", "").find("sass_baseline.sass") != std::string::npos, true);
  profile::SassCompareOptions ot;
  ot.iter = "iter003_naive";
  ot.cand.file = data + "synthetic_naive_sm90a.sass";
  StepResult rt = profile::run_sass_compare(&ws, t, ot, deps);
  EXPECT_TRUE(fs::is_regular_file(ws.kind_dir(t, ArtifactKind::perf) / "sass_compare_iter003_naive.json"));
  auto evidence = read_evidence(ws, t);
  ASSERT_EQ(evidence.size(), 1u);
  EXPECT_EQ(evidence[0].kind, EvidenceKind::sass_compare);
  EXPECT_EQ(evidence[0].kernel, "iter003_naive");
  EXPECT_EQ(evidence[0].summary.value("divergences", 0u), rt.doc["divergences"].size());
}

TEST(Steps, ASweepRequestBecomesItsOptionsAndManifestOrIsRefused) {
  sweep::SweepRequest r;
  r.op = "matmul";
  r.s.dsl = "cpp";
  r.s.gpu_key = cpu_device_key();
  r.driver = "command";
  r.command = "my-driver {key}  {device}";
  sweep::Manifest m = sweep::resolve_sweep_request(r, "/w", "/opt/croq/croq");
  EXPECT_FALSE(m.shapes.empty());
  EXPECT_EQ(r.s.command, (std::vector<std::string>{"my-driver", "{key}", "{device}"}));
  EXPECT_EQ(r.s.root, fs::path("/w"));
  EXPECT_EQ(r.s.croq_exe, fs::path("/opt/croq/croq"));
  EXPECT_EQ(r.s.mode, sweep::Mode::from_scratch);
  sweep::SweepRequest bad = r;
  bad.mode = "sideways";
  EXPECT_THROW(sweep::resolve_sweep_request(bad, "/w", "/c"), Error);
  bad = r;
  bad.command = " ";
  EXPECT_THROW(sweep::resolve_sweep_request(bad, "/w", "/c"), Error);
  bad = r;
  bad.driver = "agent";  // under croq's own model name
  EXPECT_THROW(sweep::resolve_sweep_request(bad, "/w", "/c"), Error);
  // The stop flag: cleared, then set by SIGTERM while the body runs; the old handler is back after.
  std::atomic<bool> stop{true};
  struct sigaction before{};
  ::sigaction(SIGTERM, nullptr, &before);
  json out = sweep::with_stop_signals(stop, [&] {
    EXPECT_FALSE(stop.load());
    ::raise(SIGTERM);
    return json{{"stopped", stop.load()}};
  });
  EXPECT_TRUE(out.value("stopped", false));
  struct sigaction now{};
  ::sigaction(SIGTERM, nullptr, &now);
  EXPECT_EQ(now.sa_handler, before.sa_handler);
}

TEST(Steps, TunesInParallelKeepTheShapesOrderAndGoOnPastAFailure) {
  test::TempDir dir;
  // A stand-in for croq: `croq --root R tune <key> ...` writes a progress line and its summary,
  // and fails for the key "bad".
  const fs::path exe = dir / "fake-croq";
  atomic_write(exe,
               "#!/bin/sh\n"
               "key=$4\n"
               "echo '{\"event\":\"round\",\"round\":1}' >&2\n"
               "if [ \"$key\" = bad ]; then echo '{\"error\":\"no family\"}'; exit 4; fi\n"
               "echo \"{\\\"shape_key\\\":\\\"$key\\\",\\\"rounds\\\":1}\"\n",
               false);
  ::chmod(exe.c_str(), 0755);
  ParallelTuneOptions o;
  o.croq_exe = exe;
  o.root = dir.path();
  o.shape_keys = {"a", "bad", "c"};
  o.gpu = "cpu_x86_64";
  o.dsl = "cpp";
  o.jobs = 2;
  std::mutex m;
  std::vector<std::string> lines, notes;
  SystemProcessRunner runner;
  StepDeps deps{runner, [&](const std::string& l) {
                  std::lock_guard<std::mutex> lock(m);
                  notes.push_back(l);
                }};
  StepResult r = tune_in_parallel(o, deps, [&](const std::string& l) { lines.push_back(l); });
  EXPECT_EQ(r.code, ExitCode::failure);
  ASSERT_EQ(r.doc["shapes"].size(), 3u) << r.doc.dump();
  EXPECT_EQ(r.doc["shapes"][0].value("shape_key", ""), "a");
  EXPECT_EQ(r.doc["shapes"][1].value("shape_key", ""), "bad");
  EXPECT_EQ(r.doc["shapes"][1].value("error", ""), "no family");
  EXPECT_EQ(r.doc["shapes"][1].value("exit_code", 0), 4);
  EXPECT_EQ(r.doc["shapes"][2].value("rounds", 0), 1);
  EXPECT_EQ(r.doc.value("failed", 0), 1);
  EXPECT_FALSE(r.doc.value("stopped", true));
  EXPECT_EQ(lines.size(), 3u);  // each child's progress line, passed on whole
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("1 of 3 shapes failed"), std::string::npos);
  // A terminal gets text lines instead of the JSON.
  EXPECT_EQ(tune_progress_line(json{{"event", "round"}, {"round", 2}}, "a", 5).rfind("[a round 2/5]", 0), 0u);
  // A run that adds rounds to a task counts its own: round 9 of a task is this run's first of 8
  // (before: "round 9/8").
  EXPECT_EQ(tune_progress_line(json{{"event", "round"}, {"round", 9}, {"run_round", 1}}, "a", 8)
                .rfind("[a round 9 (1 of 8 this run)]", 0),
            0u);
}

}  // namespace
}  // namespace croq
