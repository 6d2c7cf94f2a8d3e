// One source of the measurement rules: the Python runner applies croq's own tables (passed as
// --rules, measure/rules.hpp) and the same verification formula as compare_host. The runner's
// rule functions are driven on identical arrays (its --selftest mode, pure Python: no torch) and
// must give the C++ verdicts and figures.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "croq/measure/invoke.hpp"
#include "croq/measure/numeric.hpp"
#include "croq/measure/peak.hpp"
#include "croq/measure/portable.hpp"
#include "croq/measure/problem.hpp"
#include "croq/measure/rules.hpp"
#include "croq/measure/runner_options.hpp"
#include "croq/measure/tolerance.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/process.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

const std::string k_runner = std::string(CROQ_SOURCE_DIR) + "/src/python/croq_runner.py";

ProcessResult run_python(const std::vector<std::string>& args) {
  ProcessSpec spec;
  spec.argv = {find_executable("python3")->string(), k_runner};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout = std::chrono::seconds(60);
  return SystemProcessRunner().run(spec);
}

TEST(MeasureRules, TheDocumentHoldsTheCppTables) {
  json r = measurement_rules();
  EXPECT_EQ(r["schema"], k_rules_schema);
  // Every spelling, with the C++ tolerance row of its pair.
  for (const char* token : {"f16f32", "fp16fp32", "bf16", "f16", "tf32", "f32", "e4m3f16", "e4m3bf16"}) {
    ASSERT_TRUE(r["dtypes"].contains(token)) << token;
    const auto d = *parse_dtype_pair(token);
    const ToleranceSpec t = tolerance_for(d);
    EXPECT_EQ(r["dtypes"][token]["canonical"], d.canonical);
    EXPECT_DOUBLE_EQ(r["dtypes"][token]["tolerance"]["normwise"].get<double>(), t.normwise) << token;
    EXPECT_DOUBLE_EQ(r["dtypes"][token]["tolerance"]["base_tol"].get<double>(), t.base_tol) << token;
  }
  EXPECT_DOUBLE_EQ(r["dtypes"]["f16f32"]["tolerance"]["normwise"].get<double>(), 1e-3);  // not the drifted 5e-3
  const RunnerOptions defaults;
  EXPECT_EQ(r["timing"]["min_reps"], defaults.min_reps);
  EXPECT_DOUBLE_EQ(r["timing"]["rest_ratio"].get<double>(), defaults.rest_ratio);
  EXPECT_EQ(r["peak"]["rows"].size(), peak_rows().size());
}

TEST(MeasureRules, ThePythonRunnerRefusesToMeasureWithoutTheRules) {
  if (!find_executable("python3")) GTEST_SKIP() << "no python3";
  ProcessResult r = run_python({"--candidate", "/nonexistent/k.py", "--m", "8", "--n", "8", "--k", "8", "--dtype", "f16f32"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--rules"), std::string::npos) << r.err;
  // With the rules, a flag left out takes croq's default.
  ProcessResult p = run_python({"--rules", dump_compact(measurement_rules()), "--candidate", "/x/k.py", "--m", "8",
                                "--n", "8", "--k", "8", "--parse-only"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  json a = json::parse(p.out);
  const RunnerOptions defaults;
  EXPECT_EQ(a["min_reps"], defaults.min_reps);
  EXPECT_EQ(a["max_reps"], defaults.max_reps);
  EXPECT_DOUBLE_EQ(a["target_cv"].get<double>(), defaults.cv_target);
  EXPECT_DOUBLE_EQ(a["time_budget_ms"].get<double>(), defaults.time_budget_ms);
  EXPECT_DOUBLE_EQ(a["rest_window_ms"].get<double>(), defaults.rest_window_ms);
  // --b-layout auto: the layout the C++ runners try first (layout_order): "col" (B stored N x K) for
  // e4m3 inputs, "row" otherwise.
  for (const auto& [dtype, want] : {std::pair{"e4m3bf16", "col"}, std::pair{"e4m3f16", "col"}, std::pair{"f16f32", "row"}}) {
    ProcessResult q = run_python({"--rules", dump_compact(measurement_rules()), "--candidate", "/x/k.py", "--m", "8",
                                  "--n", "8", "--k", "16", "--dtype", dtype, "--b-layout", "auto", "--parse-only"});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    EXPECT_EQ(json::parse(q.out)["b_layout"], want) << dtype;
    EXPECT_EQ(want, layout_order("auto", *parse_dtype_pair(dtype), "matmul").front()) << dtype;
  }
}

// The Python runner reports a Triton module's first call (JIT compile, @triton.autotune's benchmark,
// both outside the timed region) under `process`; croq keeps it beside its own facts of the child.
TEST(MeasureRules, TheRunnersFirstCallReportSurvivesIntoTheMeasurement) {
  Measurement doc;
  doc.verdict = Verdict::PASS;
  doc.reason = "ok";
  doc.tflops = 600;
  Timing t;
  t.median_ms = 0.2;
  doc.timing = t;
  json text = doc.to_json();
  text["process"] = {{"first_call_ms", 5120.5},
                     {"autotune", json::array({json{{"kernel", "mm"}, {"configs", 10}, {"tuning_ms", 4800.0}}})},
                     {"exit_code", 99}};
  ProcessResult r;
  r.started = true;
  r.exit_code = 0;
  Measurement m = interpret_runner(r, text.dump(), Measurement{});
  EXPECT_EQ(m.verdict, Verdict::PASS);
  EXPECT_DOUBLE_EQ(m.process["first_call_ms"].get<double>(), 5120.5);
  EXPECT_EQ(m.process["autotune"][0]["configs"], 10);
  EXPECT_EQ(m.process["exit_code"], 0);  // croq's own account of the child wins
  EXPECT_EQ(m.to_json()["process"]["autotune"][0]["kernel"], "mm");
}

struct Case {
  std::string dtype;
  std::string what;
  bool expect_pass;
};

// The output of one case: the reference perturbed, rounded to the output type.
std::vector<unsigned char> make_output(const Case& c, const std::vector<float>& want, const ToleranceSpec& tol,
                                       ScalarType out_type, std::mt19937& rng) {
  std::vector<unsigned char> got(want.size() * static_cast<size_t>(scalar_type_bytes(out_type)));
  std::uniform_real_distribution<double> sign(-1.0, 1.0);
  for (size_t i = 0; i < want.size(); ++i) {
    double v = want[i];
    if (c.what == "correct") v *= 1 + 1e-6 * sign(rng);
    else if (c.what == "inside") v *= 1 + 0.7 * tol.normwise;    // normwise at 0.7 x the limit
    else if (c.what == "outside") v *= 1 + 1.3 * tol.normwise;   // normwise at 1.3 x the limit
    store_from_f32(got.data(), out_type, i, static_cast<float>(v));
  }
  if (c.what == "element") {  // one element beyond base_tol + rel_tol * |want|
    const size_t i = want.size() / 3;
    store_from_f32(got.data(), out_type, i, static_cast<float>(want[i] + tol.base_tol + tol.rel_tol * std::fabs(want[i]) + 0.5));
  }
  if (c.what == "nan") store_from_f32(got.data(), out_type, want.size() / 2, std::nanf(""));
  return got;
}

TEST(MeasureRules, BothRunnersGiveTheSameVerdictsOnTheSameOutputs) {
  if (!find_executable("python3")) GTEST_SKIP() << "no python3";
  test::TempDir dir;
  const int64_t m = 24, n = 40;
  std::mt19937 rng(7);
  std::normal_distribution<float> value(0.0f, 6.0f);  // a K of a few hundred: results of a few units
  std::vector<float> want(static_cast<size_t>(m * n));
  for (float& w : want) w = value(rng);
  atomic_write(dir / "want.bin", std::string(reinterpret_cast<const char*>(want.data()), want.size() * 4), false);

  std::vector<Case> cases;
  for (const char* d : {"f16f32", "bf16f32", "f16", "bf16", "f32", "tf32", "e4m3f16"}) {
    cases.push_back({d, "correct", true});
    cases.push_back({d, "inside", true});
    cases.push_back({d, "outside", false});
    cases.push_back({d, "element", false});
    cases.push_back({d, "nan", false});
  }
  json request = {{"verify", json::array()}, {"peak", json::array()}};
  std::vector<Verification> cpp;
  for (size_t i = 0; i < cases.size(); ++i) {
    const DtypePair d = *parse_dtype_pair(cases[i].dtype);
    const ToleranceSpec tol = tolerance_for(d);
    auto got = make_output(cases[i], want, tol, d.output, rng);
    const fs::path path = dir / fmt::format("got{}.bin", i);
    atomic_write(path, std::string(reinterpret_cast<const char*>(got.data()), got.size()), false);
    Verification v;
    compare_host(got.data(), d.output, want.data(), m, n, tol, v);
    cpp.push_back(v);
    request["verify"].push_back(json{{"got", path.string()}, {"want", (dir / "want.bin").string()}, {"m", m}, {"n", n},
                                 {"dtype", cases[i].dtype}});
  }
  struct Dev {
    const char* name;
    int major, minor, sms, clock;
  };
  const std::vector<Dev> devices = {{"NVIDIA H200", 9, 0, 132, 1980},          {"NVIDIA H100 PCIe", 9, 0, 114, 1755},
                                    {"NVIDIA H100 NVL", 9, 0, 132, 1785},      {"NVIDIA A100-SXM4-80GB", 8, 0, 108, 1410},
                                    {"NVIDIA L40S", 8, 9, 142, 2520},          {"NVIDIA GeForce RTX 4090", 8, 9, 128, 2520},
                                    {"NVIDIA B200", 10, 0, 148, 1965},         {"Unknown Accelerator", 12, 0, 84, 0}};
  const std::vector<std::string> peak_dtypes = {"f16f32", "bf16", "e4m3f16", "tf32", "f32"};
  std::vector<double> cpp_peaks;
  for (const Dev& dev : devices) {
    for (const auto& dt : peak_dtypes) {
      cpp_peaks.push_back(gpu_peak_tflops(dev.name, dev.major, dev.minor, dev.sms, dev.clock, *parse_dtype_pair(dt)).tflops);
      request["peak"].push_back(json{{"name", dev.name}, {"cc_major", dev.major}, {"cc_minor", dev.minor},
                                 {"sm_count", dev.sms}, {"max_clock_mhz", dev.clock}, {"dtype", dt}});
    }
  }
  atomic_write(dir / "request.json", request.dump(), false);
  ProcessResult r = run_python({"--rules", dump_compact(measurement_rules()), "--selftest", (dir / "request.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json py = json::parse(r.out);
  ASSERT_EQ(py["verify"].size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const json& p = py["verify"][i];
    const Verification& c = cpp[i];
    const std::string label = cases[i].dtype + " " + cases[i].what;
    EXPECT_EQ(c.passed.value_or(false), cases[i].expect_pass) << "C++ " << label << " normwise " << c.normwise_rel_err;
    EXPECT_EQ(p["passed"].get<bool>(), c.passed.value_or(false)) << "Python " << label << ": " << p.dump();
    EXPECT_EQ(p["mismatches"].get<int64_t>(), c.mismatches) << label;
    EXPECT_EQ(p["nan_count"].get<int64_t>(), c.nan_count) << label;
    EXPECT_NEAR(p["normwise_rel_err"].get<double>(), c.normwise_rel_err, 1e-12 + 1e-9 * c.normwise_rel_err) << label;
    EXPECT_NEAR(p["max_abs_err"].get<double>(), c.max_abs_err, 1e-12 + 1e-9 * c.max_abs_err) << label;
    EXPECT_NEAR(p["max_rel_err"].get<double>(), c.max_rel_err, 1e-12 + 1e-9 * c.max_rel_err) << label;
    EXPECT_DOUBLE_EQ(p["tolerance"]["normwise"].get<double>(), c.tolerance.normwise) << label;
    ASSERT_FALSE(p["worst"].empty()) << label;
    ASSERT_FALSE(c.worst.empty()) << label;
    EXPECT_EQ(p["worst"][0]["i"].get<int64_t>(), c.worst[0].i) << label;
    EXPECT_EQ(p["worst"][0]["j"].get<int64_t>(), c.worst[0].j) << label;
  }
  ASSERT_EQ(py["peak"].size(), cpp_peaks.size());
  for (size_t i = 0; i < cpp_peaks.size(); ++i) {
    EXPECT_NEAR(py["peak"][i].get<double>(), cpp_peaks[i], 1e-9 * cpp_peaks[i]) << request["peak"][i].dump();
  }
}

// e4m3 inputs of scaled problems: the Python runner draws x from torch's generator, not croq's
// stream, but maps it to an input and to the per-tensor scales by the C++ runners' formulas
// (portable.hpp, their polynomials included): the same values for the same x, up to f32 rounding.
// A runner that kept inputs in [-1, 1) or scales near 1 fails here.
TEST(MeasureRules, BothRunnersDrawFp8InputsAndScalesAlike) {
  if (!find_executable("python3")) GTEST_SKIP() << "no python3";
  test::TempDir dir;
  std::vector<float> xs;
  for (int i = 0; i < 64; ++i) xs.push_back(random_uniform(20261202, 1, static_cast<uint64_t>(i)));
  xs.insert(xs.end(), {-1.0f, -0.5f, 0.0f, 0.05f, 0.999f});
  std::vector<std::array<float, 3>> tu;
  for (int i = 0; i < 16; ++i)
    tu.push_back({random_uniform(7, 6, 3 * i), random_uniform(7, 6, 3 * i + 1), random_uniform(7, 6, 3 * i + 2)});
  tu.push_back({-1.0f, -1.0f, -1.0f});
  tu.push_back({0.999f, 0.999f, 0.999f});
  json request = {{"fp8", {{"x", xs}, {"scales", json::array()}}}};
  for (const auto& v : tu) request["fp8"]["scales"].push_back({v[0], v[1], v[2]});
  atomic_write(dir / "request.json", request.dump(), false);
  ProcessResult r = run_python({"--rules", dump_compact(measurement_rules()), "--selftest", (dir / "request.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json py = json::parse(r.out);
  ASSERT_EQ(py["fp8"]["values"].size(), xs.size());
  double lo = 1e9, hi = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = fp8_scaled_from_uniform(xs[i]);
    const double got = py["fp8"]["values"][i].get<double>();
    EXPECT_NEAR(got, want, 1e-5 * std::fabs(want)) << "x = " << xs[i];
    lo = std::min(lo, std::fabs(want));
    hi = std::max(hi, std::fabs(want));
  }
  EXPECT_LT(lo, 1.0);  // the format's range, not [-1, 1)
  EXPECT_GT(hi, 400.0);
  ASSERT_EQ(py["fp8"]["scales"].size(), tu.size());
  double smallest = 1e9, largest = 0;
  for (size_t i = 0; i < tu.size(); ++i) {
    for (int which = 0; which < 2; ++which) {
      const double want = fp8_tensor_scale_from(tu[i][0], tu[i][1 + which], which);
      const double got = py["fp8"]["scales"][i][which].get<double>();
      EXPECT_NEAR(got, want, 1e-5 * want) << "t = " << tu[i][0] << ", scale " << which;
      smallest = std::min(smallest, want);
      largest = std::max(largest, want);
    }
  }
  EXPECT_GT(largest / smallest, 1e5);  // orders of magnitude a kernel cannot ignore
}

}  // namespace
}  // namespace croq
