// croq measure, croq baseline and store-round --measurement end to end on the cpp dsl: real
// candidates compiled here, run by the real croq-cpu-runner in a child process, verified against
// OpenBLAS and timed. A correct candidate passes; a wrong, a crashing, a looping and a
// library-calling one each get their verdict, and croq goes on.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

#include "croq/gpu/device_key.hpp"
#include "croq/measure/measurement.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/hash.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

namespace fs = std::filesystem;
using test::run_croq;

const char* k_key = "matmul_f32_64x48x32";

class MeasureCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!find_executable("g++")) GTEST_SKIP() << "no g++ to build the test candidates";
    ASSERT_TRUE(fs::exists(fs::path(CROQ_BINARY_DIR) / "bin" / "croq-cpu-runner")) << "build croq-cpu-runner first";
    m_env = {{"CROQ_LEASE_DIR", (m_dir / "leases").string()}};
    fs::create_directories(m_dir / "leases");
    fs::create_directories(m_dir.path() / "tuning");
  }

  fs::path bin_dir(const std::string& key = k_key) {
    return m_dir.path() / "tuning" / cpu_device_key() / "cpp" / "bin" / key / "m1";
  }
  fs::path perf_dir(const std::string& key = k_key) {
    return m_dir.path() / "tuning" / cpu_device_key() / "cpp" / "perf" / key / "m1";
  }

  // Compiles tests/data/measure/cpu_candidate.cpp in `mode` to bin/<key>/m1/<kernel>.so.
  fs::path build(const std::string& mode, const std::string& kernel) {
    fs::create_directories(bin_dir());
    fs::path out = bin_dir() / (kernel + ".so");
    ProcessSpec spec;
    spec.argv = {"g++", "-O1", "-shared", "-fPIC", "-DCROQ_TEST_MODE=" + mode,
                 "-I" + std::string(CROQ_SOURCE_DIR) + "/include",
                 std::string(CROQ_TEST_DATA_DIR) + "/measure/cpu_candidate.cpp", "-o", out.string()};
    spec.timeout = std::chrono::seconds(120);
    SystemProcessRunner r;
    ProcessResult res = r.run(spec);
    EXPECT_TRUE(res.ok()) << res.err;
    return out;
  }

  test::CroqRun measure(const std::string& kernel, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"measure", "--dsl", "cpp", "--shape-key", k_key, "--model", "m1",
                                     "--iter", kernel, "--seed", "7", "--warmup", "1", "--min-reps", "3",
                                     "--max-reps", "20", "--time-budget-ms", "100"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_croq(m_dir.path(), args, m_env);
  }

  test::TempDir m_dir;
  std::map<std::string, std::string> m_env;
};

TEST_F(MeasureCli, ACorrectCandidatePassesAndIsRecordedWithItsProvenance) {
  fs::path so = build("naive", "iter001_naive");
  auto r = measure("iter001_naive");
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  const json& d = r.doc;
  EXPECT_EQ(d["schema"], "croq-measurement-v1");
  EXPECT_EQ(d["verdict"], "PASS");
  EXPECT_EQ(d["source"], "measured");
  EXPECT_EQ(d["kind"], "candidate");
  EXPECT_EQ(d["candidate"]["sha256"], sha256_file(so));
  EXPECT_EQ(d["candidate"]["info"]["name"], "cpu test candidate");
  EXPECT_EQ(d["seed"], 7);
  EXPECT_EQ(d["problem"]["m"], 64);
  EXPECT_EQ(d["problem"]["b_layout"], "row");
  EXPECT_TRUE(d["verification"]["passed"].get<bool>());
  EXPECT_EQ(d["verification"]["elements"], 64 * 48);
  EXPECT_TRUE(d["verification"]["second_seed_passed"].get<bool>());
  EXPECT_TRUE(d["verification"]["rechecked_after_timing"].get<bool>());
  EXPECT_EQ(d["timing"]["method"], "steady_clock");
  EXPECT_GE(d["timing"]["reps"].get<int>(), 3);
  EXPECT_GT(d["tflops"].get<double>(), 0.0);
  EXPECT_EQ(d["device"]["key"], cpu_device_key());
  // The files: the measurement and the seeds' timing text.
  auto stored = try_parse_json(*read_file(perf_dir() / "measure_iter001_naive.json"));
  ASSERT_TRUE(stored);
  EXPECT_EQ((*stored)["verdict"], "PASS");
  std::string timing = *read_file(perf_dir() / "timing_iter001.txt");
  EXPECT_NE(timing.find("VERIFY: PASS"), std::string::npos);
  EXPECT_NE(timing.find("TFLOPS: "), std::string::npos);
  // The same candidate in its column-major form, and on a dtype it does not handle.
  auto col = measure("iter001_naive", {"--b-layout", "col"});
  EXPECT_EQ(col.doc["verdict"], "PASS") << col.out;
  EXPECT_EQ(col.doc["problem"]["b_layout"], "col");
}

// Other work on the runner's CPU shows as the runner's run-queue delay during its launches
// (schedstat): with two busy threads on the one CPU it runs on, the measurement keeps its figures
// but carries the share it waited (device.cpu_wait_share), the flag cpu_shared and a warning, and
// its line says so. (Before, a busy CPU gave a baseline at 2 % of its figure with at most a "noisy"
// warning, docs/measurement.md.) This thread, the busy ones and croq's processes (which inherit
// this thread's affinity) share one CPU, so tests beside this one keep theirs.
TEST_F(MeasureCli, ACpuSharedWithOtherWorkIsFlaggedWithTheShareTheRunnerWaited) {
  build("naive", "iter001_naive");
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &allowed)) ++cpu;
  ASSERT_LT(cpu, CPU_SETSIZE);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  std::atomic<bool> stop{false};
  std::vector<std::thread> hogs;
  for (int i = 0; i < 2; ++i) {
    hogs.emplace_back([&stop, one] {
      sched_setaffinity(0, sizeof one, &one);
      volatile uint64_t x = 0;
      while (!stop.load(std::memory_order_relaxed)) x = x + 1;
    });
  }
  // Enough launches for 10 ms of them in all (the share is left out below that).
  auto r = run_croq(m_dir.path(),
                    {"measure", "--dsl", "cpp", "--shape-key", k_key, "--model", "m1", "--iter", "iter001_naive",
                     "--seed", "7", "--warmup", "1", "--min-reps", "200", "--max-reps", "300", "--time-budget-ms", "3000"},
                    m_env);
  stop = true;
  for (auto& h : hogs) h.join();
  sched_setaffinity(0, sizeof allowed, &allowed);
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  const json& d = r.doc;
  EXPECT_EQ(d["verdict"], "PASS");
  ASSERT_TRUE(d["device"]["cpu_wait_share"].is_number()) << d["device"].dump();
  EXPECT_GT(d["device"]["cpu_wait_share"].get<double>(), k_cpu_shared_share) << d["device"].dump();
  EXPECT_NE(std::find(d["flags"].begin(), d["flags"].end(), k_cpu_shared_flag), d["flags"].end()) << d["flags"].dump();
  EXPECT_NE(d["warnings"].dump().find("waited for a CPU"), std::string::npos) << d["warnings"].dump();
  EXPECT_GT(d["tflops"].get<double>(), 0.0);
  // The stored measurement keeps it too.
  auto stored = try_parse_json(*read_file(perf_dir() / "measure_iter001_naive.json"));
  ASSERT_TRUE(stored);
  EXPECT_EQ((*stored)["device"]["cpu_wait_share"], d["device"]["cpu_wait_share"]);
}

TEST_F(MeasureCli, AWrongCandidateIsAVerifyFailWithTheWorstElements) {
  build("wrong", "iter002_wrong");
  auto r = measure("iter002_wrong");
  EXPECT_EQ(r.rc, 8) << r.err;
  EXPECT_EQ(r.doc["verdict"], "VERIFY_FAIL");
  EXPECT_EQ(r.doc["reason"], "mismatch");
  EXPECT_EQ(r.doc["verification"]["mismatches"], 64 * 48);
  EXPECT_FALSE(r.doc["verification"]["worst"].empty());
  EXPECT_TRUE(r.doc["timing"].is_null());
}

TEST_F(MeasureCli, ACrashingCandidateIsASegfaultAndCroqCarriesOn) {
  build("segv", "iter003_segv");
  auto r = measure("iter003_segv");
  EXPECT_EQ(r.rc, 8) << r.err;
  EXPECT_EQ(r.doc["verdict"], "SEGFAULT");
  EXPECT_EQ(r.doc["reason"], "crashed");
  EXPECT_NE(r.doc["detail"].get<std::string>().find("SIGSEGV"), std::string::npos);
  EXPECT_EQ(r.doc["candidate"]["path"], (bin_dir() / "iter003_segv.so").string());
  EXPECT_TRUE(fs::exists(perf_dir() / "measure_iter003_segv.json"));
}

TEST_F(MeasureCli, ALoopingCandidateIsAHangKilledAtTheLimit) {
  build("loop", "iter004_loop");
  auto r = measure("iter004_loop", {"--timeout", "2"});
  EXPECT_EQ(r.rc, 8) << r.err;
  EXPECT_EQ(r.doc["verdict"], "HANG");
  EXPECT_EQ(r.doc["reason"], "timed_out");
  EXPECT_TRUE(r.doc["process"]["timed_out"].get<bool>());
}

TEST_F(MeasureCli, ACandidateThatCallsCublasIsRefusedBeforeItRuns) {
  build("cublas", "iter005_lib");
  auto r = measure("iter005_lib");
  EXPECT_EQ(r.rc, 8) << r.err;
  EXPECT_EQ(r.doc["verdict"], "LIBRARY_CALL_FORBIDDEN");
  EXPECT_EQ(r.doc["reason"], "library_call_forbidden");
  EXPECT_NE(r.doc["detail"].get<std::string>().find("cublasGemmEx"), std::string::npos);
  EXPECT_FALSE(r.doc["ran"].get<bool>());
}

TEST_F(MeasureCli, StoreRoundTakesTflopsAndVerdictFromTheMeasurement) {
  build("naive", "iter001_naive");
  build("wrong", "iter002_wrong");
  ASSERT_EQ(measure("iter001_naive").rc, 0);
  ASSERT_EQ(measure("iter002_wrong").rc, 8);
  const std::vector<std::string> task = {"--dsl", "cpp", "--shape-key", k_key, "--model", "m1"};
  auto store = [&](std::vector<std::string> args) {
    std::vector<std::string> all = {"store-round"};
    all.insert(all.end(), task.begin(), task.end());
    all.insert(all.end(), args.begin(), args.end());
    return run_croq(m_dir.path(), all, m_env);
  };
  const std::string pass_file = (perf_dir() / "measure_iter001_naive.json").string();
  const std::string fail_file = (perf_dir() / "measure_iter002_wrong.json").string();
  auto measured = try_parse_json(*read_file(pass_file));
  auto keep = store({"--iter", "iter001", "--kernel", "iter001_naive", "--decision", "KEEP", "--bottleneck",
                     "compute_bound", "--idea", "naive loops", "--measurement", pass_file});
  ASSERT_EQ(keep.rc, 0) << keep.err;
  EXPECT_DOUBLE_EQ(keep.doc["record"]["tflops"].get<double>(), (*measured)["tflops"].get<double>());
  EXPECT_EQ(keep.doc["record"]["source"], "measured");
  EXPECT_EQ(keep.doc["record"]["measurement"]["verdict"], "PASS");
  EXPECT_EQ(keep.doc["record"]["measurement"]["sha256"], sha256_hex(*read_file(pass_file)));

  // KEEP with a failed measurement: refused, nothing written.
  auto refused = store({"--iter", "iter002", "--kernel", "iter002_wrong", "--decision", "KEEP", "--bottleneck",
                        "compute_bound", "--idea", "plus five", "--measurement", fail_file});
  EXPECT_EQ(refused.rc, 2) << refused.out;
  // Without a decision, the failure decides.
  auto failed = store({"--iter", "iter002", "--kernel", "iter002_wrong", "--bottleneck", "compute_bound", "--idea",
                       "plus five", "--measurement", fail_file});
  ASSERT_EQ(failed.rc, 0) << failed.err;
  EXPECT_EQ(failed.doc["record"]["decision"], "VERIFY_FAIL");
  EXPECT_EQ(failed.doc["record"]["measurement"]["reason"], "mismatch");
  // A typed figure and a file at once: refused.
  auto both = store({"--iter", "iter003", "--kernel", "iter003_both", "--decision", "DISCARD", "--bottleneck",
                     "compute_bound", "--idea", "x", "--tflops", "99", "--measurement", pass_file});
  EXPECT_EQ(both.rc, 2);
}

TEST_F(MeasureCli, ALegacyProgramsNumbersAreStoredAsReported) {
  fs::path script = m_dir / "legacy.sh";
  atomic_write(script, "#!/bin/sh\necho 'VERIFY: PASS'\necho 'TFLOPS: 0.50   time_ms: 0.1'\n", false);
  fs::permissions(script, fs::perms::owner_all);
  auto r = run_croq(m_dir.path(),
                    {"measure", "--dsl", "cpp", "--shape-key", k_key, "--model", "m1", "--candidate", script.string(),
                     "--legacy"},
                    m_env);
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_EQ(r.doc["kind"], "legacy");
  EXPECT_EQ(r.doc["source"], "reported");
  EXPECT_DOUBLE_EQ(r.doc["tflops"].get<double>(), 0.5);
  EXPECT_EQ(r.doc["timing"]["method"], "reported");
}

TEST_F(MeasureCli, TheBaselineIsMeasuredStoredAsIter000AndNotRepeated) {
  const std::string key = "matmul_f32_96x64x80";
  const std::vector<std::string> args = {"baseline", "--dsl", "cpp", "--shape-key", key, "--model", "m1",
                                         "--task-uid", "uid-123", "--min-reps", "3", "--time-budget-ms", "100"};
  auto first = run_croq(m_dir.path(), args, m_env);
  ASSERT_EQ(first.rc, 0) << first.err << first.out;
  EXPECT_FALSE(first.doc["skipped"].get<bool>());
  const json& res = first.doc["result"];
  EXPECT_EQ(res["dtype"], "f32");
  EXPECT_EQ(res["m"], 96);
  EXPECT_EQ(res["library"], "openblas");
  EXPECT_GT(res["tflops"].get<double>(), 0.0);
  EXPECT_EQ(res["task_uid"], "uid-123");
  EXPECT_TRUE(res["statistics"].contains("cv"));
  EXPECT_EQ(first.doc["record"]["kernel"], "iter000_openblas");
  EXPECT_EQ(first.doc["record"]["decision"], "BASELINE");
  EXPECT_EQ(first.doc["record"]["source"], "measured");
  const fs::path base = m_dir.path() / "tuning" / cpu_device_key() / "cpp";
  EXPECT_TRUE(fs::exists(base / "baseline" / key / "m1" / "openblas_result.json"));
  auto config = try_parse_json(*read_file(base / "logs" / key / "m1" / "task_config.json"));
  EXPECT_EQ((*config)["task_uid"], "uid-123");

  auto again = run_croq(m_dir.path(), args, m_env);
  ASSERT_EQ(again.rc, 0) << again.err;
  EXPECT_TRUE(again.doc["skipped"].get<bool>());
  EXPECT_DOUBLE_EQ(again.doc["result"]["tflops"].get<double>(), res["tflops"].get<double>());
  // Another task_uid for the same task is a conflict, not a silent overwrite.
  std::vector<std::string> other = args;
  other[8] = "uid-999";
  EXPECT_EQ(run_croq(m_dir.path(), other, m_env).rc, 9);
}

}  // namespace
}  // namespace croq

namespace croq {
namespace {

// --out writes a new file or replaces an earlier measurement, never a record: inside tuning/ only
// a task's perf/ folder takes it, and an existing file that is not a croq measurement is refused
// before anything runs (before, --out over idea-log.jsonl replaced the ledger with a measurement).
TEST_F(MeasureCli, OutReplacesNoRecordAndNoOtherFile) {
  build("naive", "iter001_naive");
  const fs::path logs = m_dir.path() / "tuning" / cpu_device_key() / "cpp" / "logs" / k_key / "m1";
  fs::create_directories(logs);
  const fs::path ledger = logs / "idea-log.jsonl";
  croq::atomic_write(ledger, "{\"a record\":1}\n", false);
  const fs::path outside = m_dir.path() / "notes" / "precious.txt";
  croq::atomic_write(outside, "mine\n", false);
  for (const fs::path& target : {ledger, logs / "new.json", m_dir.path() / "tuning" / "state.json", outside}) {
    auto r = measure("iter001_naive", {"--out", target.string()});
    EXPECT_EQ(r.rc, 2) << target << ": " << r.out << r.err;
    EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(perf_dir() / "measure_iter001_naive.json")) << "nothing ran";
  }
  EXPECT_EQ(croq::read_file_or_throw(ledger), "{\"a record\":1}\n");
  EXPECT_EQ(croq::read_file_or_throw(outside), "mine\n");
  EXPECT_FALSE(fs::exists(logs / "new.json"));
  EXPECT_FALSE(fs::exists(m_dir.path() / "tuning" / "state.json"));
  // A new file elsewhere, then the same file again (an earlier measurement), and the perf folder.
  const fs::path mine = m_dir.path() / "notes" / "m.json";
  ASSERT_EQ(measure("iter001_naive", {"--out", mine.string()}).rc, 0);
  ASSERT_EQ(measure("iter001_naive", {"--out", mine.string()}).rc, 0);
  auto perf = measure("iter001_naive", {"--out", (perf_dir() / "pair_x.json").string()});
  EXPECT_EQ(perf.rc, 0) << perf.err;
  // Inside tuning/, a new file in the measuring task's own perf/ folder only: not another task's
  // (a stored KEEP's measurement there was replaced from a scratch task), not one already there.
  const std::string stored = croq::read_file_or_throw(perf_dir() / "pair_x.json");
  auto again = measure("iter001_naive", {"--out", (perf_dir() / "pair_x.json").string()});
  EXPECT_EQ(again.rc, 2) << again.out << again.err;
  EXPECT_NE(again.err.find("exists"), std::string::npos) << again.err;
  EXPECT_EQ(croq::read_file_or_throw(perf_dir() / "pair_x.json"), stored);
  const fs::path other = perf_dir("matmul_f32_128x128x128") / "measure_iter004_x.json";
  fs::create_directories(other.parent_path());
  croq::atomic_write(other, stored, false);
  for (const fs::path& target : {other, other.parent_path() / "new.json"}) {
    auto foreign = measure("iter001_naive", {"--out", target.string()});
    EXPECT_EQ(foreign.rc, 2) << target << ": " << foreign.out << foreign.err;
    EXPECT_NE(foreign.err.find("this task's perf/"), std::string::npos) << foreign.err;
  }
  EXPECT_EQ(croq::read_file_or_throw(other), stored);
  EXPECT_FALSE(fs::exists(other.parent_path() / "new.json"));
}

}  // namespace
}  // namespace croq

namespace croq {
namespace {

// An enforced task measures with a fresh seed croq draws: --seed is refused before anything runs
// (with a known seed, a candidate carried a table of the inputs' products and looked them up).
TEST_F(MeasureCli, AnEnforcedTaskMeasuresWithAFreshSeedOnly) {
  build("naive", "iter001_naive");
  const std::vector<std::string> task = {"--dsl", "cpp", "--shape-key", k_key, "--model", "m1"};
  auto with = [&](std::vector<std::string> a, const std::vector<std::string>& more) {
    a.insert(a.end(), task.begin(), task.end());
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  ASSERT_EQ(run_croq(m_dir.path(), with({"protocol", "begin"}, {}), m_env).rc, 0);
  const std::vector<std::string> quick = {"--iter", "iter001_naive", "--warmup", "1", "--min-reps", "3",
                                          "--max-reps", "20", "--time-budget-ms", "100"};
  std::vector<std::string> seeded = quick;
  seeded.insert(seeded.end(), {"--seed", "4242"});
  auto refused = run_croq(m_dir.path(), with({"measure"}, seeded), m_env);
  EXPECT_EQ(refused.rc, 5) << refused.out << refused.err;
  EXPECT_EQ(refused.doc["error"].value("rule", ""), "fresh_inputs") << refused.out;
  EXPECT_FALSE(fs::exists(perf_dir() / "measure_iter001_naive.json"));
  auto fresh = run_croq(m_dir.path(), with({"measure"}, quick), m_env);
  EXPECT_EQ(fresh.rc, 0) << fresh.out << fresh.err;
  EXPECT_NE(fresh.doc.value("seed", 0ull), 4242ull);
}

}  // namespace
}  // namespace croq

namespace croq {
namespace {

// A candidate runs inside the runner and starts no process: one that imports fork (or exec,
// system, popen, ...) is refused before it runs, and the cpp runner forbids the call itself to the
// running candidate (a raw clone from its constructor fails). Before, a constructor's child
// outlived the runner and rewrote the measurement file: 3x the figure, stored as measured.
TEST_F(MeasureCli, ACandidateStartsNoProcess) {
  build("spawn", "iter001_spawn");
  auto spawn = measure("iter001_spawn");
  EXPECT_EQ(spawn.doc["verdict"], "LIBRARY_CALL_FORBIDDEN") << spawn.out;
  EXPECT_NE(spawn.doc.value("detail", "").find("calls fork"), std::string::npos) << spawn.out;
  build("rawclone", "iter002_rawclone");
  const fs::path marker = m_dir.path() / "escaped.txt";
  m_env["CROQ_TEST_MARKER"] = marker.string();
  auto raw = measure("iter002_rawclone");
  EXPECT_EQ(raw.doc["verdict"], "PASS") << raw.out << raw.err;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(fs::exists(marker)) << "the candidate's child ran";
}

}  // namespace
}  // namespace croq

namespace croq {
namespace {

// The runner reads the candidate once: the hash it records, the purity scan and the load are of
// one sealed copy in memory. Before, it opened the workspace's file three times, and a driver that
// renamed another shared object over it between the opens had the built binary's hash recorded
// (and its scan passed) while the other one ran: a KEEP at 28x, stored as measured.
TEST_F(MeasureCli, TheRunnerLoadsTheSameBytesItHashedAndScanned) {
  const fs::path so = build("selfpath", "iter001_selfpath");
  auto r = measure("iter001_selfpath");
  ASSERT_EQ(r.doc["verdict"], "PASS") << r.out << r.err;
  EXPECT_EQ(r.doc["candidate"]["sha256"], sha256_file(so));
  EXPECT_EQ(r.doc["candidate"]["path"], fs::absolute(so).string());
  const std::string loaded = r.doc["candidate"]["info"].value("loaded_from", "");
  EXPECT_EQ(loaded.rfind("/proc/self/fd/", 0), 0u) << "loaded from " << loaded;
}

}  // namespace
}  // namespace croq

namespace croq {
namespace {

// A stored kernel measured again (the best in a re-run, a careless measurement, a round racing
// another) gets a file of its own: the measurement its record names stays as it was stored (before,
// a re-run of the best replaced it, and the task's best could no longer be exported). A perf/ folder
// that is a link to another task's is refused: nothing is written through it.
TEST_F(MeasureCli, AStoredKernelMeasuredAgainKeepsItsRecordsMeasurement) {
  build("naive", "iter001_naive");
  auto first = measure("iter001_naive");
  ASSERT_EQ(first.rc, 0) << first.err;
  const fs::path own = perf_dir() / "measure_iter001_naive.json";
  ASSERT_EQ(first.doc["files"].value("measurement", ""), "tuning/" + cpu_device_key() + "/cpp/perf/" + k_key +
                                                             "/m1/measure_iter001_naive.json");
  auto st = run_croq(m_dir.path(),
                     {"store-round", "--dsl", "cpp", "--shape-key", k_key, "--model", "m1", "--iter", "iter001", "--kernel",
                      "iter001_naive", "--decision", "KEEP", "--measurement", own.string(), "--round", "0",
                      "--bottleneck", "n/a", "--idea", "the naive kernel"},
                     m_env);
  ASSERT_EQ(st.rc, 0) << st.out << st.err;
  const std::string stored = croq::read_file_or_throw(own);
  for (int n : {2, 3}) {
    auto again = measure("iter001_naive");
    ASSERT_EQ(again.rc, 0) << again.err;
    EXPECT_NE(again.doc["files"].value("measurement", "").find(fmt::format("measure_iter001_naive.{}.json", n)),
              std::string::npos)
        << again.out;
  }
  EXPECT_EQ(croq::read_file_or_throw(own), stored);
  auto valid = run_croq(m_dir.path(), {"session", "validate", "--gpu", cpu_device_key(), "--dsl", "cpp", "--shape-key",
                                       k_key, "--model", "m1"});
  EXPECT_EQ(valid.rc, 0) << valid.out << valid.err;

  // Another task whose perf/ folder is a link to this one's.
  const std::string other = "matmul_f32_32x32x32";
  fs::create_directories(bin_dir(other));
  fs::copy_file(bin_dir() / "iter001_naive.so", bin_dir(other) / "iter001_naive.so");
  fs::create_directories(perf_dir(other).parent_path());
  fs::create_directory_symlink(perf_dir(), perf_dir(other));
  auto linked = run_croq(m_dir.path(), {"measure", "--dsl", "cpp", "--shape-key", other, "--model", "m1", "--iter",
                                        "iter001_naive", "--warmup", "1", "--min-reps", "3", "--max-reps", "5"},
                         m_env);
  EXPECT_EQ(linked.rc, 2) << linked.out << linked.err;
  EXPECT_NE(linked.err.find("is a link"), std::string::npos) << linked.err;
  EXPECT_EQ(croq::read_file_or_throw(own), stored);
}

}  // namespace
}  // namespace croq
