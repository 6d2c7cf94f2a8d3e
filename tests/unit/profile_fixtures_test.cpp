// Every real Nsight Compute capture under tests/data/ncu/h200/ is classified as expected.tsv says,
// with the rules that must have fired (the evidence an engineer would point at).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "croq/profile/classify_csv.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"

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
