// Every real Nsight Compute capture under tests/data/ncu/h200/ is classified as expected.tsv says,
// with the rules that must have fired (the evidence an engineer would point at).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "croq/profile/classify_csv.hpp"
#include "croq/profile/ncu_csv.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "support/test_support.hpp"

namespace {

const std::string k_dir = std::string(CROQ_TEST_DATA_DIR) + "/ncu/h200/";

struct Expectation {
  std::string csv, kernel, bottleneck;
  std::vector<std::string> rules;
};

std::vector<Expectation> expectations() {
  std::vector<Expectation> out;
  for (const std::string& line : croq::split_lines(croq::read_file_or_throw(k_dir + "expected.tsv"))) {
    if (croq::trim(line).empty() || line[0] == '#') continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, '\t')) cells.push_back(croq::trim(cell));
    if (cells.size() < 3) {
      ADD_FAILURE() << "bad line in expected.tsv: " << line;
      continue;
    }
    Expectation e{cells[0], cells[1] == "-" ? std::string() : cells[1], cells[2], {}};
    if (cells.size() > 3) {
      std::stringstream rs(cells[3]);
      while (std::getline(rs, cell, ',')) {
        if (!croq::trim(cell).empty()) e.rules.push_back(croq::trim(cell));
      }
    }
    out.push_back(e);
  }
  return out;
}

}  // namespace

TEST(ProfileFixtures, EveryH200CaptureMatchesItsExpectedClassAndEvidence) {
  auto all = expectations();
  ASSERT_FALSE(all.empty());
  for (const auto& e : all) {
    SCOPED_TRACE(e.csv + (e.kernel.empty() ? "" : " /" + e.kernel + "/"));
    croq::profile::ClassifyRequest req;
    req.csv = k_dir + e.csv;
    req.kernel_pattern = e.kernel;
    croq::json doc = croq::profile::classify_csv(req);
    EXPECT_EQ(doc["bottleneck"], e.bottleneck) << doc["reason"];
    for (const auto& rule : e.rules) {
      bool fired = false;
      for (const auto& r : doc["evidence"]["rules"]) {
        if (r["rule"] == rule) fired = r["fired"].get<bool>();
      }
      EXPECT_TRUE(fired) << "rule " << rule << " did not fire; reason: " << doc["reason"];
    }
  }
}

// `croq profile` of the naive ABI candidate through croq-gpu-runner on the H200: the one kernel in
// the capture is the candidate's own (not the input fill, the cuBLAS reference or a warm-up copy).
TEST(ProfileFixtures, CroqProfileCapturedTheCandidatesKernel) {
  croq::profile::ClassifyRequest req;
  req.csv = k_dir + "ncu_iter001_naive_round1.csv";
  croq::json doc = croq::profile::classify_csv(req);
  const std::string kernel = doc["kernel"].get<std::string>();
  EXPECT_EQ(kernel.rfind("naive(", 0), 0u) << kernel;
  EXPECT_EQ(kernel.find("nvjet"), std::string::npos);
  EXPECT_EQ(kernel.find("fill"), std::string::npos);
}

namespace {

std::string csv_cell(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += "\"\"";
    else out += c;
  }
  return out + "\"";
}

// The capture rewritten in Nsight Compute's summary form (`--print-summary per-kernel --csv`, the
// form the seeds' tools and their tests produce): no ID column, one row per kernel and metric,
// Minimum / Maximum / Average. Metrics of the raw page are requested metrics (section "Command line
// profiler metrics"); those of the long form keep their section.
std::string as_summary(const croq::profile::NcuCsv& csv) {
  std::string out = "==PROF== Disconnected from process 1234\n";
  out += "\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\","
         "\"Invocations\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Minimum\",\"Maximum\",\"Average\"\n";
  for (const auto& k : csv.kernels) {
    for (const auto& [key, v] : k.metrics) {
      std::string section = "Command line profiler metrics", name = key;
      if (csv.form == croq::profile::CsvForm::long_form) {
        const size_t slash = key.find('/');
        section = key.substr(0, slash);
        name = key.substr(slash + 1);
      }
      out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_cell("1234"), csv_cell("runner"),
                         csv_cell("127.0.0.1"), csv_cell(k.name), csv_cell(k.block_size), csv_cell(k.grid_size),
                         csv_cell("0"), csv_cell("9.0"), csv_cell("1"), csv_cell(section), csv_cell(name),
                         csv_cell(v.unit), csv_cell(v.text), csv_cell(v.text), csv_cell(v.text));
    }
  }
  return out;
}

}  // namespace

// Every H200 capture, rewritten in the summary form, is read as that form and classified exactly as
// the capture itself (same bottleneck, same rules fired).
TEST(ProfileFixtures, TheSummaryFormOfEveryCaptureClassifiesTheSame) {
  auto all = expectations();
  ASSERT_FALSE(all.empty());
  croq::test::TempDir dir;
  for (const auto& e : all) {
    SCOPED_TRACE(e.csv);
    const auto parsed = croq::profile::parse_ncu_csv(croq::read_file_or_throw(k_dir + e.csv));
    const auto summary_path = dir / ("summary_" + e.csv);
    croq::atomic_write(summary_path, as_summary(parsed), false);
    const auto reread = croq::profile::parse_ncu_csv(croq::read_file_or_throw(summary_path));
    EXPECT_EQ(reread.form, croq::profile::CsvForm::summary);
    ASSERT_EQ(reread.kernels.size(), parsed.kernels.size());
    croq::profile::ClassifyRequest original, summary;
    original.csv = k_dir + e.csv;
    summary.csv = summary_path;
    original.kernel_pattern = summary.kernel_pattern = e.kernel;
    const croq::json a = croq::profile::classify_csv(original);
    const croq::json b = croq::profile::classify_csv(summary);
    EXPECT_EQ(b["bottleneck"], e.bottleneck) << b["reason"];
    EXPECT_EQ(b["bottleneck"], a["bottleneck"]);
    EXPECT_EQ(b["kernel"], a["kernel"]);
    EXPECT_EQ(b["evidence"]["csv_form"], "summary");
    for (const auto& ra : a["evidence"]["rules"]) {
      for (const auto& rb : b["evidence"]["rules"]) {
        if (ra["rule"] == rb["rule"]) {
          EXPECT_EQ(ra["fired"], rb["fired"]) << ra["rule"];
        }
      }
    }
  }
}
