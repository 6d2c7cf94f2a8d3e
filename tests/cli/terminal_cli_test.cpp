// A person at a terminal gets text, a pipe gets JSON: croq run on a pseudo-terminal (util-linux's
// `script`, as a user's shell would run it) prints a tune's scrolling round log and its summary
// (best kernel, ratio to the baseline, parameters, source) with CPU rates in a unit that fits, and
// the same command with --json, or through a pipe, prints the JSON document.
#include <gtest/gtest.h>

#include <algorithm>

#include <string>
#include <vector>

#include "croq/util/fs.hpp"
#include "croq/util/process.hpp"
#include "support/test_support.hpp"

using croq::test::CroqRun;
using croq::test::run_croq;
using croq::test::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string k_key = "matmul_f32_128x128x128";

std::string quoted(const std::string& word) {
  std::string q = "'";
  for (char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// `croq --root <root> args...` on a pseudo-terminal: stdout and stderr are both the terminal.
croq::ProcessResult on_terminal(const fs::path& root, const std::vector<std::string>& args) {
  std::string cmd = quoted(CROQ_BIN) + " --root " + quoted(root.string());
  for (const auto& a : args) cmd += " " + quoted(a);
  croq::ProcessSpec spec;
  spec.argv = {"script", "-q", "-e", "-c", cmd, "/dev/null"};
  spec.env_unset = {"CROQ_ROOT", "CROQ_GPU", "CROQ_JSON"};
  spec.env_set = {{"TERM", "dumb"}};
  spec.timeout = std::chrono::seconds(300);
  return croq::SystemProcessRunner().run(spec);
}

bool has_script() {
  croq::ProcessSpec spec;
  spec.argv = {"script", "--version"};
  return croq::SystemProcessRunner().run(spec).ok();
}

TEST(Terminal, ATuneShowsItsRoundsAndEndsWithTheBestKernelInText) {
  if (!has_script()) GTEST_SKIP() << "util-linux's script is not installed: no pseudo-terminal to run croq on";
  TempDir dir;
  croq::ProcessResult r = on_terminal(dir.path(), {"tune", k_key, "--dsl", "cpp", "--rounds", "2", "--seed", "1"});
  ASSERT_TRUE(r.started && !r.timed_out) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.out;
  const std::string& out = r.out;  // the terminal's bytes: stdout and stderr together
  // The scrolling log: one line per round.
  EXPECT_NE(out.find(" round 1/2]"), std::string::npos) << out;
  EXPECT_NE(out.find("] done: "), std::string::npos) << out;
  // The summary: the best kernel, its ratio to the baseline, its parameters and source path.
  EXPECT_NE(out.find("best      iter"), std::string::npos) << out;
  EXPECT_NE(out.find("x the baseline"), std::string::npos) << out;
  EXPECT_NE(out.find("params    "), std::string::npos) << out;
  EXPECT_NE(out.find("source    "), std::string::npos) << out;
  // CPU rates read in GFLOPS or MFLOPS, never as a fraction of a TFLOPS; no JSON document.
  EXPECT_EQ(out.find("TFLOPS"), std::string::npos) << out;
  EXPECT_TRUE(out.find("GFLOPS") != std::string::npos || out.find("MFLOPS") != std::string::npos) << out;
  EXPECT_EQ(out.find("{\"task\""), std::string::npos) << out;

  // The task's state, on the terminal: text; with --json: the document.
  const std::vector<std::string> task = {"--dsl", "cpp", "--shape-key", k_key, "--model", "croq-search"};
  std::vector<std::string> state = {"state"};
  state.insert(state.end(), task.begin(), task.end());
  croq::ProcessResult text = on_terminal(dir.path(), state);
  EXPECT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("next      "), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("{\""), std::string::npos) << text.out;
  state.push_back("--json");
  croq::ProcessResult as_json = on_terminal(dir.path(), state);
  EXPECT_NE(as_json.out.find("{\""), std::string::npos) << as_json.out;
  // Through a pipe (how agents and scripts call croq): the JSON document, parsed.
  state.pop_back();
  CroqRun piped = run_croq(dir.path(), state);
  EXPECT_EQ(piped.rc, 0) << piped.err;
  EXPECT_TRUE(piped.doc.is_object() && piped.doc.contains("next_action")) << piped.out;
}

// A family's space on a terminal: its size, the default and a few configurations, not 14192 JSON
// objects; --json gives them all.
TEST(Terminal, ListSpaceSummarisesTheSpaceAndJsonGivesAllOfIt) {
  if (!has_script()) GTEST_SKIP() << "util-linux's script is not installed: no pseudo-terminal to run croq on";
  TempDir dir;
  const std::vector<std::string> args = {"tune", "matmul_f16fp32_4096x4096x4096", "--dsl", "triton", "--gpu",
                                         "sm90_NVIDIA_H200", "--list-space"};
  croq::ProcessResult r = on_terminal(dir.path(), args);
  ASSERT_TRUE(r.started && !r.timed_out) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("family triton_gemm on sm_90a: 14192 legal configurations of 122880"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("default   BLOCK_K=64 BLOCK_M=128 BLOCK_N=256"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("... 14189 more"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("{\""), std::string::npos) << r.out;
  EXPECT_LT(std::count(r.out.begin(), r.out.end(), '\n'), 12) << r.out;
  std::vector<std::string> as_json = args;
  as_json.push_back("--json");
  croq::ProcessResult j = on_terminal(dir.path(), as_json);
  EXPECT_NE(j.out.find("\"configs\""), std::string::npos);
  EXPECT_GT(j.out.size(), 14192u * 100) << "every configuration in the document";
}

// A sweep on a terminal: its rounds with CPU rates in a unit that fits and the ratio to the
// baseline, and at its end (and from croq sweep status) a table of its shapes, not "[2 items]".
TEST(Terminal, ASweepEndsWithATableOfItsShapes) {
  if (!has_script()) GTEST_SKIP() << "util-linux's script is not installed: no pseudo-terminal to run croq on";
  TempDir dir;
  // Before any sweep: a sentence that says how to start one (before, an empty table's header).
  croq::ProcessResult none = on_terminal(dir.path(), {"sweep", "status"});
  EXPECT_EQ(none.exit_code, 0) << none.out;
  EXPECT_NE(none.out.find("no sweep in this workspace"), std::string::npos) << none.out;
  EXPECT_EQ(none.out.find("best/baseline"), std::string::npos) << none.out;
  const fs::path manifest = dir.path() / "m.json";
  croq::atomic_write(manifest, R"({"schema": "croq-sweep-manifest-v1", "operator": "matmul", "dtypes": ["f32"],
                                   "shapes": [[32, 32, 32], [64, 32, 32]]})");
  croq::ProcessResult r = on_terminal(dir.path(), {"sweep", "run", "--manifest", manifest.string(), "--dsl", "cpp",
                                                   "--rounds", "1", "--seed", "1"});
  ASSERT_TRUE(r.started && !r.timed_out) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("x the baseline)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best/baseline"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("matmul_f32_64x32x32_fs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 done, 0 failed, 0 pending"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("items]"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("TFLOPS"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("{\""), std::string::npos) << r.out;
  croq::ProcessResult st = on_terminal(dir.path(), {"sweep", "status"});
  EXPECT_EQ(st.exit_code, 0) << st.out;
  EXPECT_EQ(std::count(st.out.begin(), st.out.end(), '\n'), 5) << "the table once, then the counts: " << st.out;
  EXPECT_NE(st.out.find("GFLOPS"), std::string::npos) << st.out;
  EXPECT_EQ(st.out.find("{\""), std::string::npos) << st.out;
}

// A mistake in the command line, on a terminal: the message and its hint, no JSON document.
TEST(Terminal, ACommandLineErrorIsTextOnly) {
  if (!has_script()) GTEST_SKIP() << "util-linux's script is not installed: no pseudo-terminal to run croq on";
  TempDir dir;
  croq::ProcessResult r = on_terminal(dir.path(), {"state", "--bogus"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("croq state does not take --bogus"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("{\""), std::string::npos) << r.out;
}

}  // namespace

namespace {

// A cpp task whose baseline was typed by hand (store-round --tflops 0.5); its task options.
std::vector<std::string> task_with_a_typed_baseline(const fs::path& root) {
  const std::vector<std::string> task = {"--dsl", "cpp", "--shape-key", "matmul_f32_64x64x64", "--model", "m"};
  auto with = [&](std::vector<std::string> a) {
    a.insert(a.end(), task.begin(), task.end());
    return a;
  };
  EXPECT_EQ(croq::test::run_croq(root, with({"task", "init"})).rc, 0);
  EXPECT_EQ(croq::test::run_croq(root, with({"store-round", "--iter", "iter000", "--kernel", "iter000_openblas",
                                             "--decision", "BASELINE", "--tflops", "0.5"}))
                .rc,
            0);
  return task;
}

}  // namespace

// A verb without its own text view (resume, where, checkpoint read), on a terminal: nested fields
// that fit on a line are shown, larger ones by their keys or an item a row (before, "[1 items]" and
// "{2 fields}" hid them).
TEST(Terminal, NestedFieldsAreShownNotCounted) {
  if (!has_script()) GTEST_SKIP() << "util-linux's script is not installed: no pseudo-terminal to run croq on";
  TempDir dir;
  std::vector<std::string> resume = {"resume"};
  for (const auto& a : task_with_a_typed_baseline(dir.path())) resume.push_back(a);
  croq::ProcessResult r = on_terminal(dir.path(), resume);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("{\"BASELINE\":1}"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("iter000_openblas"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("items]"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("fields}"), std::string::npos) << r.out;
  croq::ProcessResult w = on_terminal(dir.path(), {"where"});
  EXPECT_NE(w.out.find("cpu_x86_64/cpp/matmul_f32_64x64x64/m"), std::string::npos) << w.out;
}

// The status table marks a figure typed by hand (an advisory task's store-round --tflops) as
// reported: before, 9.5 TFLOPS typed against a typed baseline showed as any measurement (95x).
TEST(Terminal, TheStatusTableMarksTypedFigures) {
  if (!has_script()) GTEST_SKIP() << "util-linux's script is not installed: no pseudo-terminal to run croq on";
  TempDir dir;
  task_with_a_typed_baseline(dir.path());
  croq::ProcessResult r = on_terminal(dir.path(), {"status"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("(reported)"), std::string::npos) << r.out;
}
