// 2:4 sparse GEMM (gemm_sp) end to end on the cpp dsl, without a GPU: the harness's own sparse
// inputs (poison outside the pattern, every pattern, a fresh pattern per seed) tell correct
// candidates from broken ones (metadata ignored, A read densely, a wrong pattern, a pattern guessed
// from the values, a compression made once and never again); the reference kernel passes on 16-bit
// and fp8 inputs; the baseline is OpenBLAS on the pruned inputs; and `croq tune` runs the whole loop
// (baseline, verify, measure, profile, decide, store) on the cpp_sparse family.
#include <gtest/gtest.h>

#include <filesystem>

#include "croq/gpu/device_key.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

namespace fs = std::filesystem;
using test::run_croq;

const char* k_key = "gemm_sp_f32_48x40x64";

class SparseCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!find_executable("g++")) GTEST_SKIP() << "no g++ to build the test candidates";
    ASSERT_TRUE(fs::exists(fs::path(CROQ_BINARY_DIR) / "bin" / "croq-cpu-runner")) << "build croq-cpu-runner first";
    m_env = {{"CROQ_LEASE_DIR", (m_dir / "leases").string()}};
    fs::create_directories(m_dir / "leases");
    fs::create_directories(m_dir.path() / "tuning");
  }

  fs::path bin_dir(const std::string& key) {
    return m_dir.path() / "tuning" / cpu_device_key() / "cpp" / "bin" / key / "m1";
  }

  void compile(const std::vector<std::string>& flags, const std::string& source, const fs::path& out) {
    fs::create_directories(out.parent_path());
    ProcessSpec spec;
    spec.argv = {"g++", "-O1", "-shared", "-fPIC", "-I" + std::string(CROQ_SOURCE_DIR) + "/include"};
    spec.argv.insert(spec.argv.end(), flags.begin(), flags.end());
    spec.argv.insert(spec.argv.end(), {source, "-o", out.string()});
    spec.timeout = std::chrono::seconds(120);
    SystemProcessRunner r;
    ProcessResult res = r.run(spec);
    ASSERT_TRUE(res.ok()) << res.err;
  }

  // tests/data/measure/sparse_candidate.cpp in `mode`, as bin/<key>/m1/<kernel>.so.
  void build(const std::string& mode, const std::string& kernel, const std::string& key = k_key) {
    compile({"-DCROQ_TEST_MODE=" + mode}, std::string(CROQ_TEST_DATA_DIR) + "/measure/sparse_candidate.cpp",
            bin_dir(key) / (kernel + ".so"));
  }

  test::CroqRun measure(const std::string& kernel, const std::string& mode, const std::string& key = k_key,
                        std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"measure", "--dsl", "cpp", "--shape-key", key, "--model", "m1", "--iter", kernel,
                                     "--seed", "7", "--mode", mode, "--warmup", "1", "--min-reps", "3", "--max-reps",
                                     "10", "--time-budget-ms", "50", "--processes", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_croq(m_dir.path(), args, m_env);
  }

  test::TempDir m_dir;
  std::map<std::string, std::string> m_env;
};

TEST_F(SparseCli, CorrectSparseCandidatesPassAndTheRecordNamesTheOperator) {
  for (const char* mode : {"ok", "prepared"}) {
    SCOPED_TRACE(mode);
    const std::string kernel = std::string("iter001_") + mode;
    build(mode, kernel);
    auto r = measure(kernel, "measure");
    ASSERT_EQ(r.rc, 0) << r.err << r.out;
    const json& d = r.doc;
    EXPECT_EQ(d["verdict"], "PASS") << d.dump();
    EXPECT_EQ(d["problem"]["op"], "gemm_sp");
    EXPECT_EQ(d["problem"]["sparsity"], "2:4");
    EXPECT_EQ(d["candidate"]["abi_version"], 2);
    EXPECT_TRUE(d["verification"]["second_seed_passed"].get<bool>());
    EXPECT_TRUE(d["verification"]["rechecked_after_timing"].get<bool>());
    EXPECT_GT(d["tflops"].get<double>(), 0.0);
    // Its peak is the dense-equivalent one: twice the dense peak.
    EXPECT_NE(d["device"]["peak_source"].get<std::string>().find("x2 for 2:4 sparsity"), std::string::npos);
  }
}

TEST_F(SparseCli, BrokenSparseCandidatesGetVerifyFailOrUnsupported) {
  struct Case {
    const char* mode;
    const char* verdict;
    const char* reason;
  };
  for (const Case& c : {Case{"dense", "VERIFY_FAIL", "mismatch"}, Case{"fixed_pattern", "VERIFY_FAIL", "mismatch"},
                        Case{"swapped_nibbles", "VERIFY_FAIL", "mismatch"}, Case{"magnitude", "VERIFY_FAIL", "mismatch"},
                        Case{"prepare_once", "VERIFY_FAIL", "second_seed_mismatch"},
                        Case{"prepare_refuses", "UNSUPPORTED", "candidate_unsupported"},
                        Case{"v1_only", "UNSUPPORTED", "candidate_unsupported"}}) {
    SCOPED_TRACE(c.mode);
    const std::string kernel = std::string("iter002_") + c.mode;
    build(c.mode, kernel);
    auto r = measure(kernel, "verify", k_key, {"--b-layout", "row"});
    EXPECT_EQ(r.rc, 8) << r.err << r.out;
    EXPECT_EQ(r.doc["verdict"], c.verdict) << r.doc.dump();
    EXPECT_EQ(r.doc["reason"], c.reason) << r.doc.dump();
    EXPECT_EQ(r.doc["problem"]["op"], "gemm_sp");
  }
  auto v1 = measure("iter002_v1_only", "verify");
  EXPECT_NE(v1.doc["detail"].get<std::string>().find("export croq_gemm"), std::string::npos) << v1.doc.dump();
}

TEST_F(SparseCli, TheReferenceKernelPassesOnSixteenBitAndFp8InputsInBothLayouts) {
  const std::string ref = std::string(CROQ_SOURCE_DIR) + "/kernels/cpp/gemm_sp/reference.cpp";
  for (const char* key : {"gemm_sp_f16fp32_40x24x64", "gemm_sp_f16_40x24x64", "gemm_sp_bf16_40x24x64",
                          "gemm_sp_e4m3fp16_40x24x64", "f16_40x24x64_fs"}) {
    compile({}, ref, bin_dir(key) / "iter001_reference.so");
    for (const char* layout : {"row", "col"}) {
      SCOPED_TRACE(std::string(key) + " B " + layout);
      auto r = measure("iter001_reference", "verify", key, {"--b-layout", layout});
      ASSERT_EQ(r.rc, 0) << r.err << r.out;
      EXPECT_EQ(r.doc["verdict"], "PASS") << r.doc.dump();
      EXPECT_EQ(r.doc["problem"]["op"], "gemm_sp");
      EXPECT_EQ(r.doc["problem"]["b_layout"], layout);
    }
  }
}

TEST_F(SparseCli, TheBaselineIsOpenblasOnThePrunedInputs) {
  auto r = run_croq(m_dir.path(),
                    {"baseline", "--dsl", "cpp", "--shape-key", "gemm_sp_f16fp32_48x40x64", "--model", "m1",
                     "--task-uid", "u-sparse", "--warmup", "1", "--min-reps", "3", "--max-reps", "10",
                     "--time-budget-ms", "50", "--processes", "1"},
                    m_env);
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  const json& res = r.doc["result"];
  EXPECT_EQ(res["library"], "openblas");
  EXPECT_EQ(res["operator"], "gemm_sp");
  ASSERT_TRUE(res["libraries"].contains("openblas")) << res.dump();
  EXPECT_EQ(r.doc["record"]["kernel"], "iter000_openblas");
  auto m = try_parse_json(*read_file(m_dir.path() / res["measurement"].get<std::string>()));
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)["problem"]["op"], "gemm_sp");
  EXPECT_EQ((*m)["verdict"], "PASS");
  EXPECT_TRUE((*m)["library"]["algo"]["dense_on_pruned_a"].get<bool>());
}

TEST_F(SparseCli, ShapesTheOperatorCannotTakeAreRefusedSayingWhy) {
  auto r = run_croq(m_dir.path(), {"baseline", "--dsl", "cpp", "--shape-key", "gemm_sp_f32_48x40x60", "--model", "m1",
                                   "--task-uid", "u1"},
                    m_env);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE((r.out + r.err).find("multiple of 8"), std::string::npos) << r.out << r.err;
  r = run_croq(m_dir.path(), {"baseline", "--dsl", "cpp", "--shape-key", "conv_f32_48x40x64", "--model", "m1",
                              "--task-uid", "u2"},
               m_env);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE((r.out + r.err).find("gemm_sp_<dtype>_<M>x<N>x<K>"), std::string::npos) << r.out << r.err;
}

// The whole loop on the CPU: baseline, the cpp_sparse family's default as iter001, then rounds of
// profile, idea, build, verify, measure, decide and store.
TEST(SparseTuneCli, TunesASparseGemmEndToEndOnTheCpu) {
  if (!find_executable("g++")) GTEST_SKIP() << "no g++";
  test::TempDir dir;
  const std::string key = "gemm_sp_f16fp32_96x64x128";
  auto run = run_croq(dir.path(), {"tune", key, "--dsl", "cpp", "--rounds", "4", "--seed", "3"},
                      {{"CROQ_LEASE_DIR", (dir.path() / "leases").string()}}, {}, std::chrono::milliseconds(600000));
  ASSERT_EQ(run.rc, 0) << run.err.substr(run.err.size() > 4000 ? run.err.size() - 4000 : 0);
  const json& doc = run.doc;
  EXPECT_EQ(doc.value("family", ""), "cpp_sparse");
  EXPECT_EQ(doc.value("rounds", 0), 4);
  ASSERT_TRUE(doc["baseline"].is_object());
  EXPECT_EQ(doc["baseline"].value("kernel", ""), "iter000_openblas");
  ASSERT_TRUE(doc["best"].is_object());
  EXPECT_GT(doc["best"].value("tflops", 0.0), 0.0);
  // Every record of the rounds carries a gemm_sp measurement (or a build failure).
  const std::string task = doc.value("task", "");
  std::vector<std::string> parts(1);
  for (char c : task) {
    if (c == '/') parts.emplace_back();
    else parts.back() += c;
  }
  ASSERT_EQ(parts.size(), 4u) << task;
  const fs::path tuning = dir.path() / "tuning" / parts[0] / "cpp";
  const fs::path logs = tuning / "logs" / parts[2] / parts[3];
  auto text = read_file(logs / "idea-log.jsonl");
  ASSERT_TRUE(text);
  int rounds = 0, measured = 0;
  for (const auto& line : split_lines(*text)) {
    if (line.empty()) continue;
    json r = json::parse(line);
    ++rounds;
    if (r.contains("measurement") && r["measurement"].is_object()) {
      const fs::path mfile = dir.path() / r["measurement"].value("file", "");
      if (auto mt = read_file(mfile)) {
        auto m = try_parse_json(*mt);
        ASSERT_TRUE(m);
        EXPECT_EQ((*m)["problem"]["op"], "gemm_sp") << mfile;
        ++measured;
      }
    }
  }
  EXPECT_EQ(rounds, 6);  // iter000, iter001, 4 rounds
  EXPECT_GE(measured, 2);
  // The starting kernel is the family's default configuration.
  auto srcs = tuning / "srcs" / parts[2] / parts[3];
  bool found_default = false;
  for (const auto& e : fs::directory_iterator(srcs)) {
    if (e.path().filename().string().find("cpp_sparse_default") != std::string::npos) found_default = true;
  }
  EXPECT_TRUE(found_default);
}

}  // namespace
}  // namespace croq
