// `store-round --measurement`: TFLOPS and the decision come from the file; a failed measurement
// is never stored as KEEP or DISCARD, not even through --extra.
#include <gtest/gtest.h>

#include "croq/measure/store_measurement.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

MeasurementFile file_with(Verdict v, const std::string& reason = "ok") {
  Measurement m;
  m.verdict = v;
  m.reason = reason;
  m.problem.m = 4096;
  m.problem.n = 4096;
  m.problem.k = 4096;
  m.candidate_path = "bin/k/m/iter004_tiles.so";
  m.candidate_sha256 = "cafe";
  m.seed = 9;
  if (v == Verdict::PASS) {
    m.tflops = 612.5;
    Timing t;
    t.median_ms = 0.2244;
    t.cv = 0.003;
    t.reps = 40;
    m.timing = t;
  }
  return {"perf/k/m/measure_iter004_tiles.json", "f00d", m};
}

StoreRequest request(const std::string& decision) {
  StoreRequest r;
  r.iter = "iter004";
  r.kernel = "iter004_tiles";
  r.decision = decision;
  r.bottleneck = "compute_bound";
  r.idea = "bigger tiles";
  return r;
}

const ShapeKey shape = parse_shape_key("matmul_f16fp32_4096x4096x4096");

std::string usage_message(StoreRequest r, const MeasurementFile& f) {
  try {
    apply_measurement(r, f, "perf/x.json", shape);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    return e.what();
  }
  return "";
}

TEST(MeasureStore, APassingMeasurementGivesTheTflopsAndProvenance) {
  StoreRequest r = request("KEEP");
  apply_measurement(r, file_with(Verdict::PASS), "perf/k/m/measure_iter004_tiles.json", shape);
  EXPECT_DOUBLE_EQ(*r.tflops, 612.5);
  EXPECT_EQ(r.decision, "KEEP");
  EXPECT_EQ(r.source, "measured");
  const json& p = r.extra["measurement"];
  EXPECT_EQ(p["file"], "perf/k/m/measure_iter004_tiles.json");
  EXPECT_EQ(p["sha256"], "f00d");
  EXPECT_EQ(p["candidate_sha256"], "cafe");
  EXPECT_DOUBLE_EQ(p["median_ms"].get<double>(), 0.2244);
  EXPECT_DOUBLE_EQ(p["cv"].get<double>(), 0.003);
  EXPECT_EQ(p["seed"], 9);
  RoundRecord rec = make_round_record(r);
  EXPECT_EQ(rec.source(), "measured");
  EXPECT_DOUBLE_EQ(*rec.tflops, 612.5);
}

TEST(MeasureStore, AFailedMeasurementIsStoredAsItsFailureDecision) {
  StoreRequest r = request("");
  apply_measurement(r, file_with(Verdict::SEGFAULT, "crashed"), "perf/x.json", shape);
  EXPECT_EQ(r.decision, "SEGFAULT");
  RoundRecord rec = make_round_record(r);
  EXPECT_EQ(rec.decision, Decision::SEGFAULT);
  StoreRequest i = request("");
  apply_measurement(i, file_with(Verdict::IMPOSSIBLE, "above_peak"), "perf/x.json", shape);
  EXPECT_EQ(i.decision, "VERIFY_FAIL");
  StoreRequest h = request("HANG");
  apply_measurement(h, file_with(Verdict::HANG, "timed_out"), "perf/x.json", shape);
  EXPECT_EQ(h.decision, "HANG");
}

TEST(MeasureStore, KeepOrDiscardWithAFailedMeasurementIsRefused) {
  EXPECT_NE(usage_message(request("KEEP"), file_with(Verdict::VERIFY_FAIL, "mismatch")).find("refused"), std::string::npos);
  EXPECT_NE(usage_message(request("DISCARD"), file_with(Verdict::HANG, "timed_out")).find("refused"), std::string::npos);
  EXPECT_NE(usage_message(request("SEGFAULT"), file_with(Verdict::HANG, "timed_out")).find("contradicts"), std::string::npos);
  EXPECT_NE(usage_message(request("VERIFY_FAIL"), file_with(Verdict::PASS)).find("contradicts"), std::string::npos);
  EXPECT_NE(usage_message(request(""), file_with(Verdict::PASS)).find("KEEP or DISCARD"), std::string::npos);
  StoreRequest typed = request("KEEP");
  typed.tflops = 900;
  EXPECT_NE(usage_message(typed, file_with(Verdict::PASS)).find("--tflops"), std::string::npos);
}

TEST(MeasureStore, AMeasurementOfAnotherProblemIsRefused) {
  MeasurementFile f = file_with(Verdict::PASS);
  f.measurement.problem.k = 512;
  EXPECT_NE(usage_message(request("KEEP"), f).find("4096x4096x512"), std::string::npos);
}

TEST(MeasureStore, TheLedgerRefusesAKeepWhoseMeasurementFailedEvenThroughExtra) {
  StoreRequest r = request("KEEP");
  r.tflops = 500;
  r.extra["measurement"] = {{"verdict", "VERIFY_FAIL"}};
  EXPECT_THROW(make_round_record(r), Error);
}

TEST(MeasureStore, ReadingAFileChecksItIsAMeasurement) {
  test::TempDir dir;
  atomic_write(dir / "m.json", file_with(Verdict::PASS).measurement.to_json().dump(), false);
  MeasurementFile f = read_measurement_file(dir / "m.json");
  EXPECT_EQ(f.measurement.verdict, Verdict::PASS);
  EXPECT_EQ(f.sha256.size(), 64u);
  atomic_write(dir / "other.json", "{\"tflops\": 900}", false);
  EXPECT_THROW(read_measurement_file(dir / "other.json"), Error);
  try {
    read_measurement_file(dir / "absent.json");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::not_found);
  }
}

}  // namespace
}  // namespace croq
