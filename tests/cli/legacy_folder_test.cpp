// Tuning folders written by the croq-tune skill's original shell tools, read by croq: small synthetic
// folders in their layout (tuning/<gpu>/<dsl>/{srcs,bin,perf,logs}/<key>/<model>/, iter<NNN>_<tag>
// names, the seven-column results.tsv and the JSON lines of idea-log.jsonl as the skill documents
// them), for a DSL croq cannot build. Each test fails on the behaviour the folders met before:
// next-iter reusing a number that files already carry, resume without the best kernel's name or
// with a bare last id, DSLs refused outright, fields of the original rows lost on import.
#include <gtest/gtest.h>

#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "support/test_support.hpp"

using croq::json;
using croq::test::CroqRun;
using croq::test::run_croq;
using croq::test::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string k_gpu = "sm90_H100";
const std::string k_dsl = "tilelang";
const std::string k_key = "matmul_bf16fp32_2048x2048x1024";
const std::string k_model = "opus-4";

std::vector<std::string> with_task(std::vector<std::string> args, const std::string& dsl = k_dsl) {
  for (const std::string& a : {std::string("--gpu"), k_gpu, std::string("--dsl"), dsl, std::string("--shape-key"),
                               k_key, std::string("--model"), k_model}) {
    args.push_back(a);
  }
  return args;
}

// The records as the original store_round.sh wrote them: round, iter, kernel, tflops, decision,
// bottleneck, idea, category, and fields of their own (base_kernel, commit).
const char* const k_idea_log =
    R"({"round": 0, "iter": "iter000", "kernel": "iter000_cublas", "tflops": 610.2, "decision": "BASELINE", "bottleneck": "n/a", "idea": "cuBLAS baseline", "category": ""}
{"round": 0, "iter": "iter001", "kernel": "iter001_draft", "tflops": 301.5, "decision": "KEEP", "bottleneck": "n/a", "idea": "first kernel", "category": "", "commit": "a1b2c3d"}
{"round": 1, "iter": "iter012", "kernel": "iter012_stages3", "tflops": 402.0, "decision": "KEEP", "bottleneck": "latency_bound", "idea": "3 stages", "category": "pipeline", "base_kernel": "iter001_draft"}
{"round": 2, "iter": "iter029", "kernel": "iter029_swz128", "tflops": 455.25, "decision": "KEEP", "bottleneck": "memory_bound", "idea": "128B swizzle", "category": "memory", "base_kernel": "iter012_stages3"}
{"round": 3, "iter": "iter030", "kernel": "iter030_bn64", "tflops": 431.0, "decision": "DISCARD", "bottleneck": "compute_bound", "idea": "BN 64", "category": "tiling", "base_kernel": "iter029_swz128"}
)";

const char* const k_results_tsv =
    "round\titer\tkernel\ttflops\tdecision\tbottleneck\tidea_summary\tnotes\n"
    "0\titer000\titer000_cublas\t610.20\tBASELINE\tn/a\tcuBLAS baseline\t\n"
    "0\titer001\titer001_draft\t301.50\tKEEP\tn/a\tfirst kernel\tfrom the examples folder\n"
    "1\titer012\titer012_stages3\t402.00\tKEEP\tlatency_bound\t3 stages\t\n"
    "2\titer029\titer029_swz128\t455.25\tKEEP\tmemory_bound\t128B swizzle\tbest so far\n"
    "3\titer030\titer030_bn64\t431.00\tDISCARD\tcompute_bound\tBN 64\ttoo few CTAs\n";

class LegacyFolder : public ::testing::Test {
 protected:
  fs::path kind(const std::string& k) const { return dir.path() / "tuning" / k_gpu / k_dsl / k / k_key / k_model; }
  void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    croq::atomic_write(p, text, false);
  }
  // The original layout: sources of every iteration (the newest, iter031, written after the last
  // STORE), a compiled binary newer still, and perf files (a build log of iter033 whose round
  // never reached the ledger).
  void make(bool with_idea_log, bool with_tsv) {
    for (const char* src : {"iter001_draft.py", "iter012_stages3.py", "iter029_swz128.py", "iter030_bn64.py",
                            "iter031_warpspec.py", "attemptAAAA_tma.py"}) {
      write(kind("srcs") / src, "# kernel\n");
    }
    write(kind("bin") / "iter032_persist", "\x7f" "ELF");
    write(kind("perf") / "build_iter033.txt", "log\n");
    write(kind("perf") / "ncu_iter030_bn64_round3.csv", "\"ID\"\n");
    write(kind("perf") / "timing_iter030.txt", "1.0 ms\n");
    if (with_idea_log) write(kind("logs") / "idea-log.jsonl", k_idea_log);
    if (with_tsv) write(kind("logs") / "results.tsv", k_results_tsv);
  }
  TempDir dir;
};

TEST_F(LegacyFolder, NextIterExceedsEveryNumberInSrcsBinPerfAndTheLedger) {
  make(true, true);
  CroqRun peek = run_croq(dir.path(), with_task({"next-iter", "--tag", "again", "--peek"}));
  ASSERT_EQ(peek.rc, 0) << peek.err;
  EXPECT_EQ(peek.doc["number"], 34) << "iter033 is in perf/, iter032 in bin/, iter031 in srcs/, iter030 in the ledger";
  CroqRun next = run_croq(dir.path(), with_task({"next-iter", "--tag", "again"}));
  ASSERT_EQ(next.rc, 0) << next.err;
  EXPECT_EQ(next.doc["kernel"], "iter034_again");
  CroqRun resume = run_croq(dir.path(), with_task({"resume"}));
  ASSERT_EQ(resume.rc, 0) << resume.err;
  EXPECT_EQ(resume.doc["next_iter_number"], 35) << "iter034 is reserved now";
  // Every number is above what the files carry, whichever folder holds the newest.
  fs::remove(kind("perf") / "build_iter033.txt");
  write(kind("perf") / "ncu_iter040_fast_round9.ncu-rep", "x");
  EXPECT_EQ(run_croq(dir.path(), with_task({"next-iter", "--tag", "later", "--peek"})).doc["number"], 41);
}

// A failure croq stores under an attempt id gives its planned number back (croq's rule: a failure
// never consumes an iteration number), even though its source still carries the number.
TEST_F(LegacyFolder, ANumberCroqGaveBackIsNotHeldByItsFiles) {
  make(true, true);
  CroqRun failed = run_croq(dir.path(), with_task({"store-round", "--iter", "iter034", "--kernel", "iter034_wide",
                                                   "--decision", "COMPILE_FAIL", "--bottleneck", "mixed", "--idea",
                                                   "wider tiles"}));
  ASSERT_EQ(failed.rc, 0) << failed.err;
  EXPECT_EQ(failed.doc["planned_iter"], "iter034");
  write(kind("srcs") / "iter034_wide.py", "# does not compile\n");
  write(kind("perf") / "build_iter034.txt", "error\n");
  EXPECT_EQ(run_croq(dir.path(), with_task({"next-iter", "--tag", "again", "--peek"})).doc["number"], 34);
  EXPECT_EQ(run_croq(dir.path(), with_task({"resume"})).doc["next_iter_number"], 34);
  // A number no record gave back still counts.
  write(kind("srcs") / "iter035_other.py", "# kernel\n");
  EXPECT_EQ(run_croq(dir.path(), with_task({"next-iter", "--tag", "again", "--peek"})).doc["number"], 36);
}

TEST_F(LegacyFolder, ResumeReportsTheBestKernelAndTheFullLastName) {
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant == 0 ? "both files" : variant == 1 ? "results.tsv only" : "idea-log.jsonl only");
    fs::remove_all(dir.path() / "tuning");
    make(variant != 1, variant != 2);
    CroqRun r = run_croq(dir.path(), with_task({"resume"}));
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.doc["dsl"], "tilelang");
    EXPECT_EQ(r.doc["current_best_kernel"], "iter029_swz128") << r.out;
    EXPECT_EQ(r.doc["current_best_iter"], "iter029");
    EXPECT_DOUBLE_EQ(r.doc["current_best_tflops"].get<double>(), 455.25);
    EXPECT_EQ(r.doc["last_iter"], "iter030_bn64");
    EXPECT_EQ(r.doc["last_decision"], "DISCARD");
    EXPECT_EQ(r.doc["last_round"], 3);
    EXPECT_EQ(r.doc["src_count"], 5);
    EXPECT_EQ(r.doc["next_iter_number"], 34);
  }
}

// Ledgers whose "iter" field holds the whole kernel name and that have no kernel field.
TEST_F(LegacyFolder, RecordsNamingTheKernelInTheIterFieldKeepTheName) {
  make(false, false);
  std::string log;
  for (const auto& line : croq::split_lines(k_idea_log)) {
    if (line.empty()) continue;
    json j = json::parse(line);
    j["iter"] = j["kernel"];
    j.erase("kernel");
    log += j.dump() + "\n";
  }
  write(kind("logs") / "idea-log.jsonl", log);
  CroqRun r = run_croq(dir.path(), with_task({"resume"}));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.doc["current_best_kernel"], "iter029_swz128");
  EXPECT_EQ(r.doc["current_best_iter"], "iter029");
  EXPECT_EQ(r.doc["last_iter"], "iter030_bn64");
}

// A DSL croq cannot build: the folder is read, validated, stored into, listed and reported;
// building it is refused with a message that says what still works.
TEST_F(LegacyFolder, AnyDslIsReadStoredAndMonitoredButNotBuilt) {
  make(true, true);
  CroqRun where = run_croq(dir.path(), {"where"});
  ASSERT_EQ(where.rc, 0) << where.err;
  EXPECT_NE(where.out.find(k_gpu + "/tilelang/" + k_key + "/" + k_model), std::string::npos) << where.out;
  CroqRun valid = run_croq(dir.path(), with_task({"session", "validate"}));
  EXPECT_EQ(valid.rc, 0) << valid.out << valid.err;
  CroqRun reinforce = run_croq(dir.path(), with_task({"reinforce"}));
  EXPECT_EQ(reinforce.rc, 0) << reinforce.err;
  EXPECT_NE(reinforce.out.find("iter029_swz128"), std::string::npos) << reinforce.out;
  CroqRun stored = run_croq(dir.path(), with_task({"store-round", "--iter", "iter034", "--kernel", "iter034_pipe4",
                                                   "--decision", "KEEP", "--tflops", "470.5", "--bottleneck",
                                                   "memory_bound", "--idea", "4 stages"}));
  ASSERT_EQ(stored.rc, 0) << stored.err;
  EXPECT_EQ(run_croq(dir.path(), with_task({"resume"})).doc["current_best_kernel"], "iter034_pipe4");
  CroqRun report = run_croq(dir.path(), {"report", "--all", "--out", (dir / "report").string()});
  ASSERT_EQ(report.rc, 0) << report.out << report.err;
  std::string html;
  for (const auto& e : fs::recursive_directory_iterator(dir / "report")) {
    if (e.path().extension() == ".html") html += croq::read_file(e.path()).value_or("");
  }
  EXPECT_NE(html.find("tilelang"), std::string::npos);
  EXPECT_NE(html.find("iter034_pipe4"), std::string::npos);
  CroqRun build = run_croq(dir.path(), with_task({"build", "--iter", "iter034_pipe4"}));
  EXPECT_EQ(build.rc, 2) << build.out << build.err;
  EXPECT_NE(build.err.find("croq cannot build dsl 'tilelang'"), std::string::npos) << build.err;
  EXPECT_NE(build.err.find("resume"), std::string::npos) << "the message says what still works: " << build.err;
}

// Importing a results.tsv-only ledger (its first store) keeps every column of the original rows,
// and storing into a seeds' idea-log.jsonl keeps every field of its records.
TEST_F(LegacyFolder, EveryFieldOfTheOriginalRowsIsKept) {
  make(false, true);
  CroqRun stored = run_croq(dir.path(), with_task({"store-round", "--iter", "iter034", "--kernel", "iter034_pipe4",
                                                   "--decision", "DISCARD", "--tflops", "440", "--bottleneck",
                                                   "memory_bound", "--idea", "4 stages"}));
  ASSERT_EQ(stored.rc, 0) << stored.err;
  auto lines = croq::split_lines(croq::read_file_or_throw(kind("logs") / "idea-log.jsonl"));
  std::vector<json> recs;
  for (const auto& l : lines) {
    if (!l.empty()) recs.push_back(json::parse(l));
  }
  ASSERT_EQ(recs.size(), 6u);
  EXPECT_EQ(recs[1]["kernel"], "iter001_draft");
  EXPECT_EQ(recs[1]["notes"], "from the examples folder");
  EXPECT_EQ(recs[3]["notes"], "best so far");
  EXPECT_EQ(recs[3]["round"], 2);
  EXPECT_EQ(recs[4]["notes"], "too few CTAs");
  EXPECT_EQ(recs[4]["idea"], "BN 64");
  EXPECT_EQ(recs[5]["kernel"], "iter034_pipe4");

  fs::remove_all(dir.path() / "tuning");
  make(true, true);
  stored = run_croq(dir.path(), with_task({"store-round", "--iter", "iter034", "--kernel", "iter034_pipe4",
                                          "--decision", "DISCARD", "--tflops", "440", "--bottleneck", "memory_bound",
                                          "--idea", "4 stages"}));
  ASSERT_EQ(stored.rc, 0) << stored.err;
  const std::string log = croq::read_file_or_throw(kind("logs") / "idea-log.jsonl");
  EXPECT_EQ(log.rfind(k_idea_log, 0), 0u) << "the original records are left exactly as they were";
  CroqRun valid = run_croq(dir.path(), with_task({"session", "validate"}));
  EXPECT_EQ(valid.rc, 0) << valid.out << valid.err;
}

}  // namespace
