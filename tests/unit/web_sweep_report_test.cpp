// `croq report --sweep` (web/sweep_report.hpp): from tuning/state.json and each shape's ledger, the
// shapes x dtypes table, sweep.csv (baseline, best, ratio, rounds, GPU hours, bottleneck mix),
// progress over time (progress.csv and .svg), the bottleneck mix (bottlenecks.svg) and index.html;
// a shape not started yet is listed without figures; no sweep is refused saying what to run.
#include <gtest/gtest.h>

#include "croq/sweep/state.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "croq/web/sweep_report.hpp"
#include "support/test_support.hpp"
#include "support/web_support.hpp"

namespace croq {
namespace {

json shape_entry(const std::string& status, int current, int target, double worker_seconds, int64_t n) {
  return {{"status", status},     {"mode", "from_scratch"}, {"operator", "matmul"},   {"dtype", "f32"},
          {"shape", {n, n, n}},   {"gpu", "cpu_x86_64"},    {"dsl", "cpp"},           {"model", "croq-search"},
          {"current_iter", current}, {"target_rounds", target}, {"worker_seconds", worker_seconds}};
}

TEST(SweepReport, TablesFiguresAndProgressComeFromTheStateAndEachShapesLedger) {
  test::TempDir dir;
  Workspace ws(dir.path());
  sweep::StateFile(dir.path()).write(json{{"shapes",
                                           {{"matmul_f32_64x64x64", shape_entry("done", 3, 3, 7200.0, 64)},
                                            {"matmul_f32_32x32x32", shape_entry("pending", 0, 3, 0.0, 32)}}}});
  // Baseline 100; rounds 110 (KEEP), 90 (DISCARD), 130 (KEEP): best 130, 1.3 x the baseline.
  test::store_rounds(ws, make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "croq-search"), {110, 90, 130});
  const fs::path out = dir / "report";
  web::SweepReportResult r = web::write_sweep_report(ws, out);
  for (const char* f : {"sweep.csv", "progress.csv", "progress.svg", "bottlenecks.svg", "index.html"}) {
    EXPECT_TRUE(fs::exists(out / f)) << f;
  }
  ASSERT_EQ(r.rows.size(), 2u);
  const json* done = nullptr;
  const json* pending = nullptr;
  for (const auto& row : r.rows) (row["key"] == "matmul_f32_64x64x64" ? done : pending) = &row;
  ASSERT_TRUE(done && pending);
  EXPECT_DOUBLE_EQ((*done)["baseline_tflops"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ((*done)["best_tflops"].get<double>(), 130.0);
  EXPECT_NEAR((*done)["ratio"].get<double>(), 1.3, 1e-9);
  EXPECT_EQ((*done)["rounds"], 3);
  EXPECT_EQ((*done)["target_rounds"], 3);
  EXPECT_DOUBLE_EQ((*done)["gpu_hours"].get<double>(), 2.0);
  EXPECT_EQ((*done)["shape"], "64x64x64");
  // store_rounds gives the rounds memory_bound, compute_bound and latency_bound in turn.
  EXPECT_EQ((*done)["bottlenecks"]["memory_bound"], 1);
  EXPECT_EQ((*done)["bottlenecks"]["compute_bound"], 1);
  EXPECT_EQ((*done)["bottlenecks"]["latency_bound"], 1);
  EXPECT_TRUE((*pending)["best_tflops"].is_null());
  EXPECT_TRUE((*pending)["ratio"].is_null());
  EXPECT_EQ((*pending)["rounds"], 0);
  // sweep.csv: a header and one line per shape, with the figures above.
  const auto csv = split_lines(*read_file(out / "sweep.csv"));
  ASSERT_GE(csv.size(), 3u);
  EXPECT_EQ(csv[0].rfind("key,operator,dtype,shape,status,mode,baseline_tflops,best_tflops,ratio,rounds", 0), 0u) << csv[0];
  bool found = false;
  for (const auto& line : csv) {
    if (line.rfind("matmul_f32_64x64x64,matmul,f32,64x64x64,done,from_scratch,", 0) == 0) {
      found = true;
      EXPECT_NE(line.find(",1.3000,3,3,2.000,"), std::string::npos) << line;
    }
  }
  EXPECT_TRUE(found) << *read_file(out / "sweep.csv");
  // progress.csv: one row per stored round, in time order; the shape is done at its third round.
  const auto progress = split_lines(*read_file(out / "progress.csv"));
  ASSERT_EQ(progress.size(), 4u) << *read_file(out / "progress.csv");
  EXPECT_EQ(progress[0], "at,hours,rounds_stored,shapes_done");
  EXPECT_NE(progress[3].find(",3,1"), std::string::npos) << progress[3];
  EXPECT_NE(progress[1].find(",1,0"), std::string::npos) << progress[1];
  // The figures and the page.
  EXPECT_EQ(read_file(out / "progress.svg")->rfind("<svg", 0), 0u);
  const std::string bars = *read_file(out / "bottlenecks.svg");
  EXPECT_NE(bars.find("memory_bound 1 of 3 rounds"), std::string::npos) << bars.substr(0, 400);
  EXPECT_NE(bars.find("no rounds yet"), std::string::npos);  // the pending shape
  const std::string html = *read_file(out / "index.html");
  EXPECT_NE(html.find("1.300"), std::string::npos);
  EXPECT_NE(html.find("matmul_f32_32x32x32"), std::string::npos);
  EXPECT_EQ(html.find("Ledgers that could not be read"), std::string::npos);
}

TEST(SweepReport, AWorkspaceWithoutASweepIsRefusedSayingWhatToRun) {
  test::TempDir dir;
  Workspace ws(dir.path());
  try {
    web::write_sweep_report(ws, dir / "report");
    FAIL() << "a report without a sweep";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::not_found);
    EXPECT_NE(std::string(e.what()).find("state.json"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "report"));
}

}  // namespace
}  // namespace croq
