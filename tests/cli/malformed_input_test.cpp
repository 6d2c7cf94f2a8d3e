// Malformed inputs never crash croq and never change stored files: damaged records (bad JSONL
// and TSV lines, binary junk, truncated JSON documents), huge texts and arguments of the wrong
// type give a clear error and a documented non-zero exit code, or — for readers — warnings.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <random>

#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "support/test_support.hpp"

using croq::test::CroqRun;
using croq::test::run_croq;
using croq::test::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string k_gpu = "sm90_NVIDIA_H200";
const std::string k_key = "matmul_bf16_1024x1024x1024";

std::vector<std::string> with_task(std::vector<std::string> args) {
  for (const char* a : {"--gpu", "sm90_NVIDIA_H200", "--dsl", "cuda", "--shape-key", "matmul_bf16_1024x1024x1024",
                        "--model", "m1"}) {
    args.emplace_back(a);
  }
  return args;
}

fs::path logs(const fs::path& root) { return root / "tuning" / k_gpu / "cuda" / "logs" / k_key / "m1"; }
fs::path checkpoints(const fs::path& root) { return root / "tuning" / k_gpu / "cuda" / "checkpoints" / k_key / "m1"; }

// The stored files (not the activity trace or the lock, which record that a call happened).
std::map<std::string, std::string> stored_files(const fs::path& root) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(root / "tuning", ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name == "activity.jsonl" || name == ".croq.lock" || name == ".activity.lock") continue;
    out[fs::relative(e.path(), root).string()] = croq::read_file(e.path()).value_or("");
  }
  return out;
}

std::string binary_junk(size_t n, unsigned seed, bool newlines) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) {
    c = static_cast<char>(rng() & 0xff);
    if (!newlines && c == '\n') c = '\x01';
  }
  return s;
}

// A croq run that ended in a documented way: an exit code below 70, not a signal.
void expect_no_crash(const CroqRun& r, const std::string& what) {
  EXPECT_GE(r.rc, 0) << what;
  EXPECT_LT(r.rc, 70) << what << ": " << r.out << r.err;
  // Stdout is one JSON document: the verb's own (e.g. drift, validation failures) or the error one.
  EXPECT_FALSE(r.doc.is_null()) << what << ": " << r.out;
  if (r.rc != 0 && r.doc.contains("error")) {
    EXPECT_EQ(r.doc["ok"], false) << what << ": " << r.out;
    EXPECT_NE(r.err.find("error: "), std::string::npos) << what << ": " << r.err;
  }
}

class Malformed : public ::testing::Test {
 protected:
  Malformed() {
    fs::create_directories(root() / "tuning");
    run_ok(with_task({"task", "init", "--task-uid", "t1"}));
    run_ok(with_task({"store-round", "--iter", "iter000", "--kernel", "iter000_cublas", "--decision", "BASELINE",
                      "--tflops", "500"}));
    run_ok(with_task({"store-round", "--iter", "iter001_draft", "--decision", "KEEP", "--tflops", "200", "--round", "0"}));
    run_ok(with_task({"store-round", "--iter", "iter002_stages", "--decision", "KEEP", "--tflops", "250",
                      "--bottleneck", "latency_bound", "--idea", "stages"}));
    run_ok(with_task({"checkpoint", "write", "--iter", "iter003", "--bottleneck", "mixed", "--idea", "next"}));
  }
  void run_ok(const std::vector<std::string>& args) {
    auto r = run_croq(root(), args);
    ASSERT_EQ(r.rc, 0) << r.out << r.err;
  }
  const fs::path& root() const { return dir.path(); }

  // The writing verbs: each must refuse a damaged ledger and change nothing.
  std::vector<std::pair<std::string, std::vector<std::string>>> writers() const {
    return {
        {"next-iter", with_task({"next-iter", "--tag", "again"})},
        {"next-iter --attempt", with_task({"next-iter", "--tag", "again", "--attempt"})},
        {"store-round", with_task({"store-round", "--iter", "iter003_again", "--decision", "KEEP", "--tflops", "1",
                                   "--bottleneck", "mixed", "--idea", "x"})},
        {"store-round failure", with_task({"store-round", "--iter", "iter003_again", "--decision", "COMPILE_FAIL",
                                           "--bottleneck", "mixed", "--idea", "x"})},
        {"attempt", with_task({"attempt", "--tag", "again", "--reason", "code_bug"})},
    };
  }
  // The reading verbs: tolerant, never a crash.
  std::vector<std::pair<std::string, std::vector<std::string>>> readers() const {
    return {
        {"resume", with_task({"resume"})},
        {"reinforce", with_task({"reinforce"})},
        {"checkpoint read", with_task({"checkpoint", "read"})},
        {"checkpoint verify", with_task({"checkpoint", "verify", "--iter", "iter003"})},
        {"session validate", {"session", "validate", "--gpu", k_gpu, "--dsl", "cuda"}},
        {"next-iter --peek", with_task({"next-iter", "--tag", "again", "--peek"})},
        {"where", {"where"}},
    };
  }

  // Damages one file, then runs every verb: writers refuse with `writer_rc` and change nothing.
  void damage_and_check(const std::string& what, const fs::path& file, const std::string& content, int writer_rc) {
    SCOPED_TRACE(what);
    croq::atomic_write(file, content);
    auto before = stored_files(root());
    for (const auto& [name, args] : writers()) {
      auto r = run_croq(root(), args);
      expect_no_crash(r, name);
      EXPECT_EQ(r.rc, writer_rc) << name << ": " << r.out << r.err;
      EXPECT_EQ(stored_files(root()), before) << name << " changed files";
    }
    for (const auto& [name, args] : readers()) {
      auto r = run_croq(root(), args);
      expect_no_crash(r, name);
    }
    auto resume = run_croq(root(), with_task({"resume"}));
    EXPECT_EQ(resume.rc, 0) << resume.out << resume.err;
    EXPECT_FALSE(resume.doc["warnings"].empty()) << "resume names the damage: " << resume.out;
    // And the repair path works from here.
    auto clean = run_croq(root(), {"session", "clean", "--gpu", k_gpu, "--dsl", "cuda", "--invalid-only"});
    EXPECT_EQ(clean.rc, 0) << clean.out << clean.err;
    auto again = run_croq(root(), writers()[2].second);
    EXPECT_EQ(again.rc, 0) << "after clean, stores work again: " << again.out << again.err;
  }

  TempDir dir;
};

TEST_F(Malformed, BadJsonLinesInTheIdeaLog) {
  const fs::path log = logs(root()) / "idea-log.jsonl";
  const std::string good = *croq::read_file(log);
  damage_and_check("bad JSON line", log, good + "{\"round\": 3, \"iter\": oops}\n", 10);
}

TEST_F(Malformed, RecordWithoutADecisionInTheIdeaLog) {
  const fs::path log = logs(root()) / "idea-log.jsonl";
  const std::string good = *croq::read_file(log);
  damage_and_check("record without decision", log, good + "{\"round\":3,\"iter\":\"iter003\"}\n", 10);
}

TEST_F(Malformed, BinaryJunkIdeaLog) {
  damage_and_check("binary junk with newlines", logs(root()) / "idea-log.jsonl", binary_junk(65536, 1, true), 10);
}

TEST_F(Malformed, BinaryJunkIdeaLogWithoutLineEnds) {
  damage_and_check("binary junk, no newline, 300 KiB", logs(root()) / "idea-log.jsonl", binary_junk(300 << 10, 2, false),
                   10);
}

TEST_F(Malformed, DamagedReservations) {
  damage_and_check("reservations junk", logs(root()) / "reservations.json", binary_junk(100, 3, true), 10);
}

TEST_F(Malformed, TruncatedReservations) {
  damage_and_check("reservations truncated", logs(root()) / "reservations.json",
                   "{\"schema\":\"croq-reservations-v1\",\"live_iters\":[[3,", 10);
}

TEST_F(Malformed, BadAttemptLog) {
  // Only the attempt verb writes the attempt log; the others are unaffected.
  const fs::path log = logs(root()) / "attempt-log.jsonl";
  croq::atomic_write(log, "{\"attempt\":\"attemptAAAA\"}\nnot json\n");
  auto before = stored_files(root());
  auto r = run_croq(root(), with_task({"attempt", "--tag", "again", "--reason", "x"}));
  expect_no_crash(r, "attempt");
  EXPECT_EQ(r.rc, 10) << r.out;
  EXPECT_EQ(stored_files(root()), before);
  auto v = run_croq(root(), {"session", "validate", "--gpu", k_gpu, "--dsl", "cuda"});
  EXPECT_EQ(v.rc, 1);
  EXPECT_EQ(run_croq(root(), {"session", "clean", "--gpu", k_gpu, "--dsl", "cuda", "--invalid-only"}).rc, 0);
  EXPECT_EQ(run_croq(root(), with_task({"attempt", "--tag", "again", "--reason", "x"})).rc, 0);
}

TEST_F(Malformed, LegacyTsvWithBadRowsAndNoIdeaLog) {
  fs::remove(logs(root()) / "idea-log.jsonl");
  fs::remove(logs(root()) / ".ledger-index.json");
  croq::atomic_write(logs(root()) / "results.tsv",
                     "iter\tkernel\ttflops\tdecision\tbottleneck\tidea_summary\n"
                     "iter001\titer001_draft\t200\tKEEP\tmixed\tok\n"
                     "this row is not a row\n" +
                         binary_junk(500, 4, false) + "\n");
  auto before = stored_files(root());
  for (const auto& [name, args] : writers()) {
    auto r = run_croq(root(), args);
    expect_no_crash(r, name);
    EXPECT_EQ(r.rc, 10) << name << ": " << r.out;
    EXPECT_EQ(stored_files(root()), before) << name;
  }
  for (const auto& [name, args] : readers()) expect_no_crash(run_croq(root(), args), name);
  auto resume = run_croq(root(), with_task({"resume"}));
  EXPECT_EQ(resume.doc["current_best_kernel"], "iter001_draft");
}

TEST_F(Malformed, JunkResultsTsvIsAViewAndIsRebuiltKeepingTheOldOne) {
  const fs::path tsv = logs(root()) / "results.tsv";
  const std::string junk = binary_junk(4096, 5, true);
  croq::atomic_write(tsv, junk);
  for (const auto& [name, args] : readers()) expect_no_crash(run_croq(root(), args), name);
  auto r = run_croq(root(), with_task({"store-round", "--iter", "iter003_x2", "--decision", "KEEP", "--tflops", "1",
                                       "--bottleneck", "mixed", "--idea", "x"}));
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(r.doc["tsv_rebuilt"], true);
  bool kept = false;
  for (const auto& e : fs::directory_iterator(logs(root()))) {
    if (e.path().filename().string().rfind("results.tsv.bak.", 0) == 0) kept = *croq::read_file(e.path()) == junk;
  }
  EXPECT_TRUE(kept) << "the junk is kept aside, not deleted";
  EXPECT_EQ(run_croq(root(), {"session", "validate", "--gpu", k_gpu, "--dsl", "cuda"}).rc, 0);
}

TEST_F(Malformed, TruncatedCheckpoint) {
  const fs::path cp = checkpoints(root()) / "current_idea.json";
  const std::string text = *croq::read_file(cp);
  croq::atomic_write(cp, text.substr(0, text.size() / 2));
  auto before = stored_files(root());
  for (const char* verb : {"read", "verify"}) {
    std::vector<std::string> a = {"checkpoint", verb};
    if (std::string(verb) == "verify") a.insert(a.end(), {"--iter", "iter003"});
    auto r = run_croq(root(), with_task(a));
    expect_no_crash(r, verb);
    EXPECT_EQ(r.rc, 10) << verb << r.out;
    EXPECT_NE(r.doc["error"]["message"].get<std::string>().find("current_idea.json"), std::string::npos);
  }
  EXPECT_EQ(stored_files(root()), before);
  EXPECT_EQ(run_croq(root(), with_task({"resume"})).rc, 0);
  EXPECT_EQ(run_croq(root(), {"session", "validate", "--gpu", k_gpu, "--dsl", "cuda"}).rc, 1);
}

TEST_F(Malformed, BinaryJunkCheckpointAndTaskConfig) {
  croq::atomic_write(checkpoints(root()) / "current_idea.json", binary_junk(2048, 6, true));
  croq::atomic_write(logs(root()) / "task_config.json", binary_junk(2048, 7, true));
  auto before = stored_files(root());
  auto init = run_croq(root(), with_task({"task", "init", "--task-uid", "t1"}));
  expect_no_crash(init, "task init");
  EXPECT_EQ(init.rc, 10);
  auto read = run_croq(root(), with_task({"checkpoint", "read"}));
  EXPECT_EQ(read.rc, 10);
  EXPECT_EQ(stored_files(root()), before);
  auto resume = run_croq(root(), with_task({"resume"}));
  EXPECT_EQ(resume.rc, 0);
  EXPECT_GE(resume.doc["warnings"].size(), 2u) << resume.out;
}

TEST_F(Malformed, JunkIndexIsJustACacheMiss) {
  croq::atomic_write(logs(root()) / ".ledger-index.json", binary_junk(1000, 8, true));
  auto r = run_croq(root(), with_task({"resume"}));
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.doc["current_best_kernel"], "iter002_stages");
  EXPECT_TRUE(r.doc["warnings"].empty()) << r.out;
  EXPECT_EQ(run_croq(root(), writers()[2].second).rc, 0);
}

TEST_F(Malformed, HugeAndBinaryTextArguments) {
  auto before = stored_files(root());
  const std::string mib(1 << 20, 'x');
  croq::atomic_write(root() / "mib.txt", mib);
  croq::atomic_write(root() / "bin.txt", binary_junk(1000, 9, true));
  const std::vector<std::vector<std::string>> calls = {
      with_task({"store-round", "--iter", "iter003_big", "--decision", "KEEP", "--tflops", "1", "--bottleneck", "mixed",
                 "--idea-file", (root() / "mib.txt").string()}),
      with_task({"store-round", "--iter", "iter003_big", "--decision", "KEEP", "--tflops", "1", "--bottleneck", "mixed",
                 "--idea-file", (root() / "bin.txt").string()}),
      with_task({"store-round", "--iter", "iter003_big", "--decision", "KEEP", "--tflops", "1", "--bottleneck", "mixed",
                 "--idea", std::string(100000, 'y')}),
      with_task({"checkpoint", "write", "--iter", "iter003", "--bottleneck", "mixed", "--idea-file",
                 (root() / "mib.txt").string()}),
      with_task({"checkpoint", "write", "--iter", "iter003", "--bottleneck", "mixed", "--idea", std::string(100000, 'z')}),
      with_task({"attempt", "--tag", "big", "--reason", "x", "--idea", std::string(100000, 'w')}),
      with_task({"store-round", "--iter", "iter003_big", "--decision", "KEEP", "--tflops", "1", "--bottleneck", "mixed",
                 "--idea", "ok", "--extra", "{\"k\":\"" + std::string(100000, 'e') + "\"}"}),
  };
  for (const auto& a : calls) {
    auto r = run_croq(root(), a);
    expect_no_crash(r, croq::preview(a[0] + " " + a.back(), 60));
    EXPECT_EQ(r.rc, 2) << r.out;
  }
  // 1 MiB on standard input.
  auto in = run_croq(root(),
                     with_task({"store-round", "--iter", "iter003_big", "--decision", "KEEP", "--tflops", "1",
                                "--bottleneck", "mixed", "--idea-file", "-"}),
                     {}, mib);
  expect_no_crash(in, "stdin");
  EXPECT_EQ(in.rc, 2);
  EXPECT_EQ(stored_files(root()), before);
}

TEST_F(Malformed, WrongArgumentTypes) {
  auto before = stored_files(root());
  const std::vector<std::vector<std::string>> calls = {
      with_task({"store-round", "--iter", "iter003_t", "--decision", "KEEP", "--tflops", "abc", "--bottleneck", "mixed",
                 "--idea", "x"}),
      with_task({"store-round", "--iter", "iter003_t", "--decision", "KEEP", "--tflops", "1", "--round", "1.5",
                 "--bottleneck", "mixed", "--idea", "x"}),
      with_task({"store-round", "--iter", "3.5", "--decision", "KEEP", "--tflops", "1", "--bottleneck", "mixed", "--idea", "x"}),
      with_task({"store-round", "--iter", "iter003_t", "--decision", "42", "--tflops", "1", "--bottleneck", "mixed",
                 "--idea", "x"}),
      with_task({"store-round", "--iter", "iter003_t", "--decision", "KEEP", "--tflops", "1", "--bottleneck", "mixed",
                 "--idea", "x", "--lock-timeout", "soon"}),
      with_task({"checkpoint", "write", "--iter", "iter003", "--bottleneck", "mixed", "--idea", "x", "--round", "x"}),
      with_task({"checkpoint", "verify", "--iter", "latest"}),
      with_task({"next-iter", "--tag", "12"}),
      with_task({"next-iter", "--tag", std::string("a\0b", 3)}),
      with_task({"attempt", "--tag", "ok", "--reason", "x", "--extra", "[]"}),
      {"session", "validate", "--gpu", k_gpu, "--dsl", "Fortran 77"},
      {"session", "clean", "--gpu", "../x", "--dsl", "cuda", "--invalid-only"},
      {"resume", "--gpu", k_gpu, "--dsl", "cuda", "--shape-key", "matmul_bf16_1024x1024x1024", "--model", "Bad Model"},
      {"resume", "--gpu", k_gpu, "--dsl", "cuda", "--shape-key", "matmul_bf16_1024x1024x1024/../..", "--model", "m1"},
      {"--root"},
      {"store-round"},
  };
  for (const auto& a : calls) {
    auto r = run_croq(root(), a);
    expect_no_crash(r, croq::preview(a.size() > 1 ? a[0] + " " + a[1] : a[0], 60));
    EXPECT_EQ(r.rc, 2) << croq::preview(a[0]) << ": " << r.out;
  }
  EXPECT_EQ(stored_files(root()), before);
}

}  // namespace

namespace {

std::string deep_array(int levels) { return std::string(static_cast<size_t>(levels), '[') + std::string(static_cast<size_t>(levels), ']'); }

std::string deep_object(int levels) {
  std::string s;
  for (int i = 0; i < levels; ++i) s += "{\"a\":";
  return s + "1" + std::string(static_cast<size_t>(levels), '}');
}

// A round record whose `extra` holds a 100 000-deep value.
std::string deep_record(int levels) {
  return "{\"round\":3,\"iter\":\"iter003\",\"kernel\":\"iter003_x\",\"tflops\":1,\"decision\":\"KEEP\","
         "\"bottleneck\":\"mixed\",\"idea\":\"x\",\"nested\":" +
         deep_object(levels) + "}";
}

}  // namespace

// One line nested 100 000 deep (a stack overflow in every verb, the repair tool and the monitor
// before JSON reads were bounded): every verb ends in a documented way, the repair sets the line
// aside (the old file is kept whole beside the repaired one), and stores work again.
TEST_F(Malformed, DeeplyNestedLinesInTheIdeaLog) {
  const fs::path log = logs(root()) / "idea-log.jsonl";
  const std::string good = *croq::read_file(log);
  for (const std::string& deep : {deep_array(100000), deep_record(100000)}) {
    SCOPED_TRACE(deep.substr(0, 20));
    croq::atomic_write(log, good + deep + "\n");
    auto resume = run_croq(root(), with_task({"resume"}));
    expect_no_crash(resume, "resume");
    EXPECT_NE(resume.out.find("nested deeper than"), std::string::npos) << resume.out;
    for (const std::vector<std::string>& args : {std::vector<std::string>{"serve", "--once"},
                                                  std::vector<std::string>{"serve", "--check"}}) {
      auto r = run_croq(root(), args);
      EXPECT_GE(r.rc, 0) << args[1];
      EXPECT_LT(r.rc, 70) << args[1] << ": " << r.out << r.err;
    }
    damage_and_check("100 000-deep line", log, good + deep + "\n", 10);
    // The repair quarantined the line: gone from the log, kept in a .bak file.
    EXPECT_EQ(croq::read_file(log)->find("[[[[[[[[[["), std::string::npos);
    EXPECT_EQ(croq::read_file(log)->find("{\"a\":{\"a\":{\"a\":"), std::string::npos);
    bool kept = false;
    for (const auto& e : fs::directory_iterator(logs(root()))) {
      if (e.path().filename().string().rfind("idea-log.jsonl.bak.", 0) == 0) {
        kept = kept || croq::read_file(e.path())->find(deep) != std::string::npos;
      }
    }
    EXPECT_TRUE(kept) << "the nested line is kept aside";
    // Back to the fixture's ledger for the next case.
    croq::atomic_write(log, good);
    run_croq(root(), {"session", "clean", "--gpu", k_gpu, "--dsl", "cuda", "--invalid-only"});
  }
}

// Deeply nested stored documents and arguments: a clear error, never a crash, nothing changed.
// (One argument is at most 128 KiB on Linux: 60 000 levels, past the ~50 000 that crashed croq.)
TEST_F(Malformed, DeeplyNestedFilesAndArguments) {
  const std::string deep = deep_object(100000);
  const std::string deep_arg = deep_array(60000);
  croq::atomic_write(checkpoints(root()) / "current_idea.json", deep);
  auto cp = run_croq(root(), with_task({"checkpoint", "read"}));
  expect_no_crash(cp, "checkpoint read");
  EXPECT_EQ(cp.rc, 10);
  EXPECT_NE(cp.doc["error"]["message"].get<std::string>().find("nested deeper than"), std::string::npos) << cp.out;
  croq::atomic_write(logs(root()) / "task_config.json", deep_array(100000));
  croq::atomic_write(logs(root()) / ".ledger-index.json", deep);
  croq::atomic_write(root() / "measurement.json", deep);
  for (const auto& [name, args] : readers()) expect_no_crash(run_croq(root(), args), name);
  auto before = stored_files(root());  // the readers may rebuild the index (a cache)
  const std::vector<std::vector<std::string>> calls = {
      with_task({"store-round", "--iter", "iter003_deep", "--decision", "KEEP", "--tflops", "1", "--bottleneck", "mixed",
                 "--idea", "x", "--extra", deep_arg}),
      with_task({"store-round", "--iter", "iter003_deep", "--decision", "KEEP", "--bottleneck", "mixed", "--idea", "x",
                 "--measurement", (root() / "measurement.json").string()}),
      with_task({"decide", "--measurement", (root() / "measurement.json").string()}),
      with_task({"checkpoint", "write", "--iter", "iter003", "--bottleneck", "mixed", "--idea", "x", "--extra",
                 deep_arg}),
  };
  for (const auto& a : calls) {
    auto r = run_croq(root(), a);
    expect_no_crash(r, a[0] + " " + a[a.size() - 2]);
    EXPECT_NE(r.rc, 0);
  }
  auto extra = run_croq(root(), calls[0]);
  EXPECT_EQ(extra.rc, 2) << extra.out;
  EXPECT_NE(extra.doc["error"]["message"].get<std::string>().find("nested deeper than 128 levels"), std::string::npos)
      << extra.out;
  auto after = stored_files(root());
  for (const auto& [path, content] : after) EXPECT_TRUE(before.count(path) && before[path] == content) << path << " changed";
  EXPECT_EQ(after.size(), before.size());
}
