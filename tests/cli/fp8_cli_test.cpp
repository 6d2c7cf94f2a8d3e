// FP8 with scales end to end on the cpp dsl, without a GPU: dense e4m3 matmul carries per-tensor
// scales and the block-scaled operator (blockscaled_e4m3bf16_...) scales per 1x128 block of A and
// 128x128 block of B. The harness's inputs span e4m3's range and its scales several orders of
// magnitude, so candidates that ignore the scales, apply only one, apply them per tensor instead
// of per block, read the block scales in the wrong layout or cache them get VERIFY_FAIL; the
// reference kernel and the cpp_fp8 family pass; the baseline (OpenBLAS) applies the scales in f32;
// and `croq tune` runs the whole loop for both operators on the cpp_fp8 family.
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

// K spans three scale blocks (the last one partial) and N two, so a per-tensor or transposed
// reading of the block scales differs from the right one.
const char* k_block_key = "blockscaled_e4m3bf16_24x160x320";
const char* k_dense_key = "matmul_e4m3bf16_24x40x96";

class Fp8Cli : public ::testing::Test {
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

  void build(const std::string& mode, const std::string& kernel, const std::string& key) {
    compile({"-DCROQ_TEST_MODE=" + mode}, std::string(CROQ_TEST_DATA_DIR) + "/measure/fp8_candidate.cpp",
            bin_dir(key) / (kernel + ".so"));
  }

  test::CroqRun measure(const std::string& kernel, const std::string& mode, const std::string& key,
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

TEST_F(Fp8Cli, CorrectCandidatesPassAndTheRecordNamesTheScales) {
  for (const char* key : {k_block_key, k_dense_key}) {
    SCOPED_TRACE(key);
    build("ok", "iter001_ok", key);
    auto r = measure("iter001_ok", "measure", key);
    ASSERT_EQ(r.rc, 0) << r.err << r.out;
    const json& d = r.doc;
    EXPECT_EQ(d["verdict"], "PASS") << d.dump();
    EXPECT_EQ(d["candidate"]["abi_version"], 2);
    EXPECT_TRUE(d["verification"]["second_seed_passed"].get<bool>());
    EXPECT_EQ(d["problem"]["b_layout"], "col");
    const bool block = std::string(key) == k_block_key;
    EXPECT_EQ(d["problem"]["op"], block ? "blockscaled" : "matmul");
    EXPECT_EQ(d["problem"]["scaling"].get<std::string>().substr(0, block ? 5 : 6), block ? "block" : "tensor");
    if (block) {  // the record names the scales' layouts (A's M-major)
      EXPECT_NE(d["problem"]["scaling"].get<std::string>().find("scales [K/128, M]"), std::string::npos) << d.dump();
    }
    EXPECT_NE(d["verification"]["tolerance"]["rule"].get<std::string>().find(block ? "128x128" : "per-tensor"),
              std::string::npos)
        << d.dump();
  }
}

TEST_F(Fp8Cli, CandidatesThatMisapplyTheScalesGetVerifyFail) {
  struct Case {
    const char* key;
    const char* mode;
    const char* verdict;
    const char* reason;
  };
  for (const Case& c : {Case{k_dense_key, "ignore_scales", "VERIFY_FAIL", "mismatch"},
                        Case{k_dense_key, "a_scale_only", "VERIFY_FAIL", "mismatch"},
                        Case{k_dense_key, "first_seed", "VERIFY_FAIL", "second_seed_mismatch"},
                        Case{k_dense_key, "v1_only", "UNSUPPORTED", "candidate_unsupported"},
                        Case{k_block_key, "ignore_scales", "VERIFY_FAIL", "mismatch"},
                        Case{k_block_key, "a_scale_only", "VERIFY_FAIL", "mismatch"},
                        Case{k_block_key, "per_tensor", "VERIFY_FAIL", "mismatch"},
                        Case{k_block_key, "row_blocks", "VERIFY_FAIL", "mismatch"},
                        Case{k_block_key, "a_row_major", "VERIFY_FAIL", "mismatch"}}) {
    SCOPED_TRACE(std::string(c.key) + " " + c.mode);
    const std::string kernel = std::string("iter002_") + c.mode;
    build(c.mode, kernel, c.key);
    auto r = measure(kernel, "verify", c.key);
    EXPECT_EQ(r.rc, 8) << r.err << r.out;
    EXPECT_EQ(r.doc["verdict"], c.verdict) << r.doc.dump();
    EXPECT_EQ(r.doc["reason"], c.reason) << r.doc.dump();
  }
  auto v1 = measure("iter002_v1_only", "verify", k_dense_key);
  EXPECT_NE(v1.doc["detail"].get<std::string>().find("per-tensor scales"), std::string::npos) << v1.doc.dump();
}

// croq_gemm_prepare runs off the clock, so croq offers it for the 2:4 sparse operator only (its A
// is a weight, compressed once). A block-scaled candidate that scales A in prepare and refuses
// without it is not prepared: UNSUPPORTED, and the record says why (before, its A work went
// untimed and it passed).
TEST_F(Fp8Cli, ACandidateCannotMoveWorkOnAnActivationOffTheClockThroughPrepare) {
  build("prepare_offclock", "iter003_prepare_offclock", k_block_key);
  auto r = measure("iter003_prepare_offclock", "verify", k_block_key);
  EXPECT_EQ(r.rc, 8) << r.err << r.out;
  EXPECT_EQ(r.doc["verdict"], "UNSUPPORTED") << r.doc.dump();
  EXPECT_EQ(r.doc["reason"], "candidate_unsupported") << r.doc.dump();
  bool said = false;
  for (const auto& w : r.doc.value("warnings", json::array()))
    said = said || w.get<std::string>().find("croq_gemm_prepare was not called") != std::string::npos;
  EXPECT_TRUE(said) << r.doc.dump();
}

// The block-scaled rule's magnitude term (tolerance.hpp): a kernel that sums each 128-deep block
// in the reduced precision of FP8 tensor cores (13 mantissa bits, truncated, as measured on the
// H200) passes.
TEST_F(Fp8Cli, ABlockScaledKernelThatAccumulatesAsFp8TensorCoresDoPasses) {
  const char* key = "blockscaled_e4m3bf16_64x256x1024";
  build("tc_accumulate", "iter001_tc_accumulate", key);
  auto r = measure("iter001_tc_accumulate", "verify", key);
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  const json& v = r.doc["verification"];
  EXPECT_EQ(r.doc["verdict"], "PASS") << v.dump();
  EXPECT_DOUBLE_EQ(v["tolerance"]["mag_tol"].get<double>(), 1.0 / 1024) << v.dump();
  EXPECT_NE(v["tolerance"]["rule"].get<std::string>().find("sum|a b|"), std::string::npos) << v.dump();
  // The record counts the elements only the magnitude term let pass. (With block scales that span
  // 10^4 per tensor some elements of this emulation needed it; with the span of 16 the check set now
  // has, sums cancel less and none does here. The H200's kernels err by up to 2.6e-4 of the
  // magnitude, which outgrows the fixed term 0.5 where K is in the tens of thousands.)
  EXPECT_GE(v["tolerance"]["magnitude_excused"].get<int64_t>(), 0) << v.dump();
  // The dense e4m3 rule has no magnitude term.
  build("ok", "iter001_ok", k_dense_key);
  auto dense = measure("iter001_ok", "verify", k_dense_key);
  EXPECT_FALSE(dense.doc["verification"]["tolerance"].contains("mag_tol")) << dense.doc.dump();
}

TEST_F(Fp8Cli, TheReferenceKernelPassesBothOperatorsAndOutputTypes) {
  const std::string ref = std::string(CROQ_SOURCE_DIR) + "/kernels/cpp/blockscaled/reference.cpp";
  for (const char* key : {k_block_key, k_dense_key, "matmul_e4m3f16_16x24x200", "blockscaled_e4m3bf16_8x128x128"}) {
    SCOPED_TRACE(key);
    compile({}, ref, bin_dir(key) / "iter001_reference.so");
    auto r = measure("iter001_reference", "verify", key);
    ASSERT_EQ(r.rc, 0) << r.err << r.out;
    EXPECT_EQ(r.doc["verdict"], "PASS") << r.doc.dump();
  }
  // Per tensor, B may also be row-major.
  auto r = measure("iter001_reference", "verify", k_dense_key, {"--b-layout", "row"});
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_EQ(r.doc["verdict"], "PASS") << r.doc.dump();
}

TEST_F(Fp8Cli, TheBaselineAppliesTheScalesInF32) {
  auto r = run_croq(m_dir.path(),
                    {"baseline", "--dsl", "cpp", "--shape-key", k_block_key, "--model", "m1", "--task-uid", "u-fp8",
                     "--warmup", "1", "--min-reps", "3", "--max-reps", "10", "--time-budget-ms", "50", "--processes",
                     "1"},
                    m_env);
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  const json& res = r.doc["result"];
  EXPECT_EQ(res["library"], "openblas");
  EXPECT_EQ(res["operator"], "blockscaled");
  auto m = try_parse_json(*read_file(m_dir.path() / res["measurement"].get<std::string>()));
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)["verdict"], "PASS");
  EXPECT_TRUE((*m)["library"]["algo"]["scales_applied_in_f32"].get<bool>());
}

TEST_F(Fp8Cli, KeysTheOperatorCannotTakeAreRefusedSayingWhy) {
  auto r = run_croq(m_dir.path(), {"baseline", "--dsl", "cpp", "--shape-key", "blockscaled_f16_128x128x128", "--model",
                                   "m1", "--task-uid", "u1"},
                    m_env);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE((r.out + r.err).find("e4m3bf16"), std::string::npos) << r.out << r.err;
  build("ok", "iter001_ok", k_block_key);
  auto row = measure("iter001_ok", "verify", k_block_key, {"--b-layout", "row"});
  EXPECT_EQ(row.rc, 2) << row.out;
  EXPECT_NE((row.out + row.err).find("b_layout col"), std::string::npos) << row.out << row.err;
}

// The whole loop on the CPU for both operators: baseline, the cpp_fp8 family's default as
// iter001, then rounds of profile, idea, build, verify, measure, decide and store.
TEST(Fp8TuneCli, TunesBothFp8OperatorsEndToEndOnTheCpu) {
  if (!find_executable("g++")) GTEST_SKIP() << "no g++";
  for (const char* key : {"blockscaled_e4m3bf16_64x128x256", "matmul_e4m3bf16_64x64x128"}) {
    SCOPED_TRACE(key);
    test::TempDir dir;
    auto run = run_croq(dir.path(), {"tune", key, "--dsl", "cpp", "--rounds", "2", "--seed", "3"},
                        {{"CROQ_LEASE_DIR", (dir.path() / "leases").string()}}, {}, std::chrono::milliseconds(600000));
    ASSERT_EQ(run.rc, 0) << run.err.substr(run.err.size() > 4000 ? run.err.size() - 4000 : 0);
    const json& doc = run.doc;
    EXPECT_EQ(doc.value("family", ""), "cpp_fp8");
    EXPECT_EQ(doc.value("rounds", 0), 2);
    ASSERT_TRUE(doc["baseline"].is_object());
    EXPECT_EQ(doc["baseline"].value("kernel", ""), "iter000_openblas");
    ASSERT_TRUE(doc["best"].is_object()) << doc.dump();
    EXPECT_GT(doc["best"].value("tflops", 0.0), 0.0);
  }
}

}  // namespace
}  // namespace croq
