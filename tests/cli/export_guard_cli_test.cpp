// croq export's output folder and the operators it keeps apart (cpp dsl, no GPU): the folder an
// export replaces is never the workspace, a folder holding it or one in its artifact tree (--force
// included), a foreign folder is set aside under --force instead of deleted, and a block-scaled and
// a per-tensor-scaled e4m3 task of one shape are two problems of one library, each under its own
// ABI operator.
#include <gtest/gtest.h>

#include <regex>

#include <algorithm>

#include "croq/kernel_abi.h"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "support/test_support.hpp"

using croq::json;
using croq::test::CroqRun;
using croq::test::run_croq;
using croq::test::TempDir;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> task(const std::string& key) {
  return {"--gpu", "cpu_test", "--dsl", "cpp", "--shape-key", key, "--model", "byhand"};
}

std::vector<std::string> with(std::vector<std::string> args, const std::string& key) {
  auto t = task(key);
  args.insert(args.end(), t.begin(), t.end());
  return args;
}

// A task of `key` whose KEEP (a typed figure) is the cpp FP8 reference kernel, built by croq build.
std::string keep_reference(const fs::path& root, const std::string& key) {
  std::string err;
  CroqRun init = run_croq(root, with({"task", "init"}, key));
  if (init.rc != 0) err += "task init: " + init.err;
  const fs::path src = root / "tuning" / "cpu_test" / "cpp" / "srcs" / key / "byhand" / "iter001_reference.cpp";
  fs::create_directories(src.parent_path());
  fs::copy_file(fs::path(CROQ_SOURCE_DIR) / "kernels" / "cpp" / "blockscaled" / "reference.cpp", src);
  CroqRun build = run_croq(root, with({"build", "--iter", "iter001_reference"}, key));
  if (build.rc != 0) err += "build: " + build.out + build.err;
  CroqRun store = run_croq(root, with({"store-round", "--iter", "iter001", "--kernel", "iter001_reference", "--decision",
                                       "KEEP", "--tflops", "0.001", "--round", "0", "--bottleneck", "n/a", "--idea",
                                       "the reference"},
                                      key));
  if (store.rc != 0) err += "store-round: " + store.err;
  return err;
}

const std::string k_scaled = "matmul_e4m3bf16_64x64x128";
const std::string k_blocks = "blockscaled_e4m3bf16_64x64x128";
const std::string k_scaled_task = "cpu_test/cpp/" + k_scaled + "/byhand";
const std::string k_blocks_task = "cpu_test/cpp/" + k_blocks + "/byhand";

TEST(ExportGuard, AnOutThatHoldsTheWorkspaceOrSitsInItsTreeIsRefusedForceIncluded) {
  TempDir dir;
  ASSERT_EQ(keep_reference(dir.path(), k_scaled), "");
  croq::atomic_write(dir.path() / "notes.txt", "the user's own file\n", false);
  const fs::path ledger =
      dir.path() / "tuning" / "cpu_test" / "cpp" / "logs" / k_scaled / "byhand" / "idea-log.jsonl";
  ASSERT_TRUE(fs::exists(ledger));
  const std::string before = croq::read_file_or_throw(ledger);
  for (const fs::path& out : {dir.path(), dir.path() / "tuning", dir.path() / "tuning" / "cpu_test" / "x",
                              dir.path().parent_path()}) {
    SCOPED_TRACE(out.string());
    CroqRun r = run_croq(dir.path(), {"export", k_scaled_task, "--out", out.string(), "--force"});
    EXPECT_EQ(r.rc, 2) << r.out << r.err;
    EXPECT_TRUE(r.err.find("holds the workspace") != std::string::npos ||
                r.err.find("inside the workspace's artifact tree") != std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
  }
  EXPECT_EQ(croq::read_file_or_throw(ledger), before);
  EXPECT_TRUE(fs::exists(dir.path() / "notes.txt"));
}

TEST(ExportGuard, ForceSetsAForeignFolderAsideAndScaledOperatorsStayApart) {
  TempDir dir;
  ASSERT_EQ(keep_reference(dir.path(), k_scaled), "");
  ASSERT_EQ(keep_reference(dir.path(), k_blocks), "");
  const fs::path out = dir.path() / "dist" / "fp8";
  croq::atomic_write(out / "mine.txt", "not an export\n", false);
  CroqRun refused = run_croq(dir.path(), {"export", k_scaled_task, k_blocks_task, "--out", out.string(), "--name", "fp"});
  EXPECT_EQ(refused.rc, 2) << refused.err;
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_TRUE(fs::exists(out / "mine.txt"));
  // Both tasks: one shape, two operators (before, "tuned for the same problem").
  CroqRun r = run_croq(dir.path(), {"export", k_scaled_task, k_blocks_task, "--out", out.string(), "--name", "fp",
                                    "--force"},
                       {}, {}, std::chrono::milliseconds(600000));
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  ASSERT_TRUE(r.doc.is_object()) << r.out;
  ASSERT_TRUE(r.doc.contains("set_aside")) << r.out;
  const fs::path aside = r.doc["set_aside"].get<std::string>();
  EXPECT_EQ(croq::read_file_or_throw(aside / "mine.txt"), "not an export\n");
  EXPECT_EQ(aside.parent_path(), out.parent_path());
  auto manifest = croq::try_parse_json(croq::read_file_or_throw(out / "manifest.json"));
  ASSERT_TRUE(manifest && (*manifest)["kernels"].is_array());
  std::map<std::string, int> abi_op;
  for (const auto& k : (*manifest)["kernels"]) abi_op[k["problem"]["op"].get<std::string>()] = k["problem"]["abi_op"];
  ASSERT_EQ(abi_op.size(), 2u) << manifest->dump();
  EXPECT_EQ(abi_op["matmul"], CROQ_OP_MATMUL);
  EXPECT_EQ(abi_op["blockscaled"], CROQ_OP_MATMUL_BLOCKSCALED);
  // An earlier export there is replaced without --force, and nothing is set aside.
  CroqRun again = run_croq(dir.path(), {"export", k_blocks_task, "--out", out.string(), "--name", "fp"}, {},
                           {}, std::chrono::milliseconds(600000));
  ASSERT_EQ(again.rc, 0) << again.err;
  EXPECT_FALSE(again.doc.contains("set_aside")) << again.out;
}

// What the export ships is what croq built and measured: a source changed after its build, or a
// record whose figure was edited in the ledger (which croq session validate reports), is refused (before, both were exported under the
// KEEP's figure: a kernel that computed nothing, and 99 TFLOPS for a 0.04 TFLOPS kernel).
TEST(ExportGuard, ASourceChangedSinceItsBuildOrAnEditedFigureIsNotExported) {
  TempDir dir;
  ASSERT_EQ(keep_reference(dir.path(), k_scaled), "");
  const fs::path src =
      dir.path() / "tuning" / "cpu_test" / "cpp" / "srcs" / k_scaled / "byhand" / "iter001_reference.cpp";
  const std::string original = croq::read_file_or_throw(src);
  croq::atomic_write(src, original + "// changed after the build\n", false);
  CroqRun changed = run_croq(dir.path(), {"export", k_scaled_task, "--out", (dir.path() / "dist").string()});
  EXPECT_EQ(changed.rc, 2) << changed.out << changed.err;
  EXPECT_NE(changed.err.find("changed after iter001_reference was last built"), std::string::npos) << changed.err;
  croq::atomic_write(src, original, false);

  // A measured KEEP (croq measure, then store-round --measurement), then its figure edited.
  const std::string key = "matmul_e4m3bf16_64x64x256";
  const std::string t = "cpu_test/cpp/" + key + "/byhand";
  ASSERT_EQ(run_croq(dir.path(), with({"task", "init"}, key)).rc, 0);
  const fs::path src2 = dir.path() / "tuning" / "cpu_test" / "cpp" / "srcs" / key / "byhand" / "iter001_reference.cpp";
  fs::create_directories(src2.parent_path());
  fs::copy_file(fs::path(CROQ_SOURCE_DIR) / "kernels" / "cpp" / "blockscaled" / "reference.cpp", src2);
  ASSERT_EQ(run_croq(dir.path(), with({"build", "--iter", "iter001_reference"}, key)).rc, 0);
  CroqRun m = run_croq(dir.path(), with({"measure", "--iter", "iter001_reference", "--min-reps", "3", "--max-reps", "5",
                                         "--warmup", "1"},
                                        key),
                       {{"CROQ_LEASE_DIR", (dir.path() / "leases").string()}});
  ASSERT_EQ(m.rc, 0) << m.out << m.err;
  const std::string file = m.doc["files"].value("measurement", "");
  ASSERT_FALSE(file.empty()) << m.out;
  CroqRun st = run_croq(dir.path(), with({"store-round", "--iter", "iter001", "--kernel", "iter001_reference",
                                          "--decision", "KEEP", "--measurement", file, "--round", "0", "--bottleneck",
                                          "n/a", "--idea", "the reference"},
                                         key));
  ASSERT_EQ(st.rc, 0) << st.out << st.err;
  CroqRun fine = run_croq(dir.path(), {"export", t, "--out", (dir.path() / "dist2").string(), "--name", "ok"}, {}, {},
                          std::chrono::milliseconds(600000));
  ASSERT_EQ(fine.rc, 0) << fine.out << fine.err;
  const fs::path log = dir.path() / "tuning" / "cpu_test" / "cpp" / "logs" / key / "byhand" / "idea-log.jsonl";
  std::string text = croq::read_file_or_throw(log);
  const size_t at = text.find("\"tflops\":");
  ASSERT_NE(at, std::string::npos);
  const size_t end = text.find(',', at);
  text.replace(at, end - at, "\"tflops\":99.0");
  croq::atomic_write(log, text, false);
  fs::remove(dir.path() / "tuning" / "cpu_test" / "cpp" / "logs" / key / "byhand" / ".ledger-index.json");
  CroqRun edited = run_croq(dir.path(), {"export", t, "--out", (dir.path() / "dist3").string(), "--name", "ok"});
  EXPECT_EQ(edited.rc, 2) << edited.out << edited.err;
  EXPECT_NE(edited.err.find("the ledger was edited"), std::string::npos) << edited.err;
  // croq session validate finds the record too.
  CroqRun valid = run_croq(dir.path(), {"session", "validate", "--gpu", "cpu_test", "--dsl", "cpp", "--shape-key", key});
  EXPECT_NE(valid.rc, 0) << valid.out;
  EXPECT_NE(valid.err.find("the log was edited"), std::string::npos) << valid.err;
  // Both places edited (the record's figure and its measurement block's): the measurement file the
  // record names still holds the measured figure, so validate names it and the task has no best.
  text = std::regex_replace(croq::read_file_or_throw(log), std::regex("\"tflops\":[-0-9.eE+]+"), "\"tflops\":99.0");
  croq::atomic_write(log, text, false);
  CroqRun both = run_croq(dir.path(), {"session", "validate", "--gpu", "cpu_test", "--dsl", "cpp", "--shape-key", key});
  EXPECT_NE(both.rc, 0) << both.out;
  EXPECT_NE(both.err.find("its measurement file"), std::string::npos) << both.err;
  CroqRun status = run_croq(dir.path(), {"status", "--dsl", "cpp", "--json"});
  ASSERT_EQ(status.rc, 0) << status.err;
  bool seen = false;
  for (const auto& row : status.doc["tasks"]) {
    if (row.value("shape_key", "") != key) continue;
    seen = true;
    EXPECT_TRUE(row["best"].is_null() || row["best"].dump().find("99") == std::string::npos) << row.dump();
  }
  EXPECT_TRUE(seen) << status.out;
  CroqRun report = run_croq(dir.path(), {"report", "--all", "--out", (dir.path() / "report").string()});
  ASSERT_EQ(report.rc, 0) << report.out << report.err;
  // No figure column holds the edited 99 (a task_uid or a timestamp may hold the digits).
  const std::string summary = croq::read_file_or_throw(dir.path() / "report" / "summary.csv");
  EXPECT_EQ(summary.find(",99"), std::string::npos) << summary;
  EXPECT_NE(croq::read_file_or_throw(dir.path() / "report" / "index.html").find("not counted"), std::string::npos);
}

}  // namespace

namespace {

// A 2:4 sparse kernel with the prepare pair (the cpp_sparse family's source, which compresses A
// once, off the clock) is exported, and the library, measured as a candidate, prepares A through
// its own entries and passes (before, the dispatcher declared croq_gemm_prepare with another
// signature and the export failed with "a kernel does not compile").
TEST(ExportGuard, ASparseKernelThatPreparesAIsExportedAndTheLibraryMeasuresAsACandidate) {
  TempDir dir;
  const std::string key = "gemm_sp_f16fp32_48x40x64";
  ASSERT_EQ(run_croq(dir.path(), with({"task", "init"}, key)).rc, 0);
  const fs::path src = dir.path() / "tuning" / "cpu_test" / "cpp" / "srcs" / key / "byhand" / "iter001_tiled.cpp";
  fs::create_directories(src.parent_path());
  fs::copy_file(fs::path(CROQ_SOURCE_DIR) / "kernels" / "cpp" / "gemm_sp" / "tiled" / "tiled_sparse.cpp", src);
  CroqRun build = run_croq(dir.path(), with({"build", "--iter", "iter001_tiled"}, key));
  ASSERT_EQ(build.rc, 0) << build.out << build.err;
  CroqRun store = run_croq(dir.path(), with({"store-round", "--iter", "iter001", "--kernel", "iter001_tiled", "--decision",
                                             "KEEP", "--tflops", "0.001", "--round", "0", "--bottleneck", "n/a",
                                             "--idea", "the tiled sparse kernel"},
                                            key));
  ASSERT_EQ(store.rc, 0) << store.err;
  const fs::path out = dir.path() / "dist";
  CroqRun ex = run_croq(dir.path(), {"export", "cpu_test/cpp/" + key + "/byhand", "--out", out.string(), "--library",
                                     "shared"},
                        {}, {}, std::chrono::milliseconds(600000));
  ASSERT_EQ(ex.rc, 0) << ex.out << ex.err;
  auto manifest = croq::try_parse_json(croq::read_file_or_throw(out / "manifest.json"));
  ASSERT_TRUE(manifest && (*manifest)["kernels"].is_array() && (*manifest)["kernels"].size() == 1u);
  const json entries = (*manifest)["kernels"][0]["abi_entries"];
  EXPECT_NE(std::find(entries.begin(), entries.end(), json("croq_gemm_prepare")), entries.end()) << entries.dump();
  const std::string header = croq::read_file_or_throw(out / "include" / "croq.h");
  EXPECT_NE(header.find("croq_gemm_prepare(const croq_gemm_desc* desc, const croq_gemm_operands* operands"),
            std::string::npos)
      << header;
  CroqRun m = run_croq(dir.path(), with({"measure", "--candidate", (out / "lib" / "libcroq.so").string(), "--min-reps",
                                         "3", "--max-reps", "5", "--warmup", "1"},
                                        key),
                       {{"CROQ_LEASE_DIR", (dir.path() / "leases").string()}}, {}, std::chrono::milliseconds(300000));
  ASSERT_EQ(m.rc, 0) << m.out << m.err;
  EXPECT_EQ(m.doc["verdict"], "PASS") << m.out;
}

}  // namespace
