// croq classify / profile / sass through the real binary: the H200 fixtures, malformed CSVs, and a
// fake ncu (a shell script replaying recorded files) for the capture's files, kernel check and
// failure mapping.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <string>

#include "croq/util/fs.hpp"
#include "support/test_support.hpp"

using croq::test::run_croq;
using croq::test::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string k_data = std::string(CROQ_TEST_DATA_DIR);
const std::string k_raw = k_data + "/ncu/h200/cublas_nvjet_f16_4096_full_raw.csv";
const std::string k_sol = k_data + "/ncu/h200/cublas_nvjet_sol_section.csv";
const std::string k_key = "matmul_f16fp32_4096x4096x4096";

std::string raw_text() { return croq::read_file_or_throw(k_raw); }

fs::path write(const TempDir& dir, const std::string& name, const std::string& text) {
  fs::path p = dir / name;
  croq::atomic_write(p, text, false);
  return p;
}

// A stand-in for ncu: logs its arguments, writes the report where --export says, prints the CSV
// named by FAKE_NCU_CSV for --import, or fails the way FAKE_NCU_MODE says.
fs::path fake_ncu(const TempDir& dir) {
  fs::path p = dir / "fake-ncu";
  croq::atomic_write(p,
                     "#!/bin/sh\n"
                     "echo \"$*\" >> \"$FAKE_NCU_LOG\"\n"
                     "if [ \"$1\" = \"--import\" ]; then cat \"$FAKE_NCU_CSV\"; exit 0; fi\n"
                     "case \"$FAKE_NCU_MODE\" in\n"
                     "  perm) echo '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
                     "Performance Counters on the target device 0.' >&2; exit 1;;\n"
                     "  none) echo '==WARNING== No kernels were profiled.' >&2; exit 0;;\n"
                     "esac\n"
                     "prev=''\n"
                     "for a in \"$@\"; do\n"
                     "  if [ \"$prev\" = '--export' ]; then echo fake-report > \"$a\"; fi\n"
                     "  prev=\"$a\"\n"
                     "done\n"
                     "echo '==PROF== Disconnected from process 1' >&2\n"
                     "exit 0\n",
                     false);
  ::chmod(p.c_str(), 0755);
  return p;
}

std::string candidate_csv() {
  std::string text = raw_text();
  const std::string lib = "nvjet_sm90_hss_256x128_64x4_1x2_h_bz_coopA_NNT";
  text.replace(text.find("\"" + lib + "\"") + 1, lib.size(), "naive_matmul");
  return text;
}

struct ProfileSetup {
  TempDir dir;
  fs::path root = dir / "ws";
  fs::path perf = root / "tuning/sm90_NVIDIA_H200/cuda/perf" / k_key / "m1";
  fs::path log = dir / "ncu.log";
  fs::path ncu = fake_ncu(dir);
  ProfileSetup() {
    fs::path bin = root / "tuning/sm90_NVIDIA_H200/cuda/bin" / k_key / "m1";
    fs::create_directories(bin);
    croq::atomic_write(bin / "iter001_naive.so", "not really a shared object", false);
  }
  croq::test::CroqRun profile(const fs::path& csv, const std::string& mode = "") {
    return run_croq(root,
                    {"profile", "--gpu", "sm90_NVIDIA_H200", "--dsl", "cuda", "--shape-key", k_key, "--model", "m1",
                     "--iter", "iter001_naive", "--round", "3", "--ncu", ncu.string(), "--runner", "/bin/true"},
                    {{"FAKE_NCU_LOG", log.string()},
                     {"FAKE_NCU_CSV", csv.string()},
                     {"FAKE_NCU_MODE", mode},
                     {"CROQ_LEASE_DIR", (dir / "leases").string()}});
  }
};

}  // namespace

TEST(ClassifyCli, CublasFixtureIsComputeBoundWithTensorEvidenceAndTflops) {
  TempDir dir;
  auto r = run_croq(dir.path(), {"classify", "--csv", k_raw, "--shape-key", k_key, "--iter", "iter000_cublas"});
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_EQ(r.doc["bottleneck"], "compute_bound");
  EXPECT_EQ(r.doc["confidence"], "high");
  EXPECT_EQ(r.doc["iter"], "iter000_cublas");
  EXPECT_EQ(r.doc["kernel"], "nvjet_sm90_hss_256x128_64x4_1x2_h_bz_coopA_NNT");
  EXPECT_EQ(r.doc["evidence"]["key_metrics"]["tensor_pipe_pct"], 86.92);
  EXPECT_EQ(r.doc["evidence"]["csv_form"], "raw_page");
  EXPECT_EQ(r.doc["evidence"]["kernel_selection"]["reason"], "the only kernel in the CSV");
  EXPECT_NEAR(r.doc["metrics"]["achieved_tflops"].get<double>(), 724.5, 0.1);
  EXPECT_NEAR(r.doc["metrics"]["pct_of_peak"].get<double>(), 86.9, 0.1);
  EXPECT_EQ(r.doc["hints"][0]["menu"], "cuda IDEA menu: Compute-bound");
  EXPECT_FALSE(r.doc.contains("hint"));
  bool tensor_rule = false;
  for (const auto& rule : r.doc["evidence"]["rules"]) {
    if (rule["rule"] == "tensor_pipe_busy") {
      tensor_rule = rule["fired"].get<bool>();
      EXPECT_EQ(rule["threshold"], 50.0);
    }
  }
  EXPECT_TRUE(tensor_rule);
}

TEST(ClassifyCli, SectionCsvAndCroqtileMenu) {
  TempDir dir;
  auto r = run_croq(dir.path(), {"classify", "--csv", k_sol, "--dsl", "croqtile"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.doc["bottleneck"], "compute_bound");
  EXPECT_EQ(r.doc["confidence"], "medium");
  EXPECT_EQ(r.doc["evidence"]["csv_form"], "long_form");
  EXPECT_NE(r.doc["hint"].get<std::string>().find("confidence is medium"), std::string::npos);  // the seeds' hint field
  EXPECT_EQ(r.doc["hints"][0]["menu"], "croqtile IDEA menu: Compute-bound");
  EXPECT_EQ(r.doc["hints"][0]["idea"], "Switch MMA to mma.op with higher throughput shape; more register accumulators");
}

TEST(ClassifyCli, NcuRepBesideTheCsvIsNamedAsEvidence) {
  TempDir dir;
  fs::path csv = write(dir, "ncu_iter001_x_round1.csv", raw_text());
  write(dir, "ncu_iter001_x_round1.ncu-rep", "rep");
  auto r = run_croq(dir.path(), {"classify", "--csv", csv.string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.doc["evidence"]["ncu_rep"], (dir / "ncu_iter001_x_round1.ncu-rep").string());
}

TEST(ClassifyCli, MalformedCsvsGiveClearErrors) {
  TempDir dir;
  std::string text = raw_text();
  // Truncated inside the kernel row.
  auto r = run_croq(dir.path(), {"classify", "--csv", write(dir, "cut.csv", text.substr(0, text.size() * 2 / 3)).string()});
  EXPECT_EQ(r.rc, 10) << r.err;
  EXPECT_EQ(r.doc["error"]["code"], "corrupt");
  // Localized numbers.
  std::string loc = text;
  loc.replace(loc.find("\"86.920222\""), 11, "\"86,920222\"");
  r = run_croq(dir.path(), {"classify", "--csv", write(dir, "loc.csv", loc).string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.doc["error"]["message"].get<std::string>().find("decimal comma"), std::string::npos);
  // Empty profile: header and units only.
  size_t units_end = text.find('\n', text.find('\n') + 1) + 1;
  r = run_croq(dir.path(), {"classify", "--csv", write(dir, "empty.csv", text.substr(0, units_end)).string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.doc["error"]["message"].get<std::string>().find("empty"), std::string::npos);
  // Missing columns: a section CSV without the throughput figures.
  r = run_croq(dir.path(),
               {"classify", "--csv",
                write(dir, "nothroughput.csv",
                      "\"ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
                      "\"0\",\"k\",\"Launch Statistics\",\"Grid Size\",\"\",\"132\"\n")
                    .string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.doc["error"]["message"].get<std::string>().find("cannot be classified"), std::string::npos);
  // Not a CSV at all, and no file.
  r = run_croq(dir.path(), {"classify", "--csv", write(dir, "junk.csv", "hello world\n").string()});
  EXPECT_EQ(r.rc, 2);
  r = run_croq(dir.path(), {"classify", "--csv", (dir / "missing.csv").string()});
  EXPECT_EQ(r.rc, 4);
}

TEST(ProfileCli, CapturesTheCandidateAndWritesBothFilesUnderPerf) {
  ProfileSetup s;
  fs::path csv = write(s.dir, "cand.csv", candidate_csv());
  auto r = s.profile(csv);
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_EQ(r.doc["kernel"], "naive_matmul");
  EXPECT_EQ(r.doc["kernel_origin"], "candidate");
  EXPECT_TRUE(fs::exists(s.perf / "ncu_iter001_naive_round3.ncu-rep"));
  EXPECT_TRUE(fs::exists(s.perf / "ncu_iter001_naive_round3.csv"));
  EXPECT_EQ(r.doc["classification"]["bottleneck"], "compute_bound");
  EXPECT_EQ(r.doc["bottleneck"], "compute_bound");  // read by croq tune
  std::string log = croq::read_file_or_throw(s.log);
  EXPECT_NE(log.find("--nvtx-include croq_candidate/"), std::string::npos) << log;
  EXPECT_NE(log.find("--clock-control none --set full"), std::string::npos) << log;
  EXPECT_NE(log.find("--candidate " + (s.root / "tuning/sm90_NVIDIA_H200/cuda/bin" / k_key / "m1/iter001_naive.so").string()),
            std::string::npos) << log;
  EXPECT_NE(log.find("--m 4096 --n 4096 --k 4096 --dtype f16f32"), std::string::npos) << log;
  EXPECT_NE(log.find("--mode profile --warmup 3"), std::string::npos) << log;
  // Recorded as evidence for the protocol's profile-before-idea guard.
  std::string evidence = croq::read_file_or_throw(s.root / "tuning/sm90_NVIDIA_H200/cuda/logs" / k_key / "m1/evidence.jsonl");
  EXPECT_NE(evidence.find("\"kind\":\"profile\""), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("\"bottleneck\":\"compute_bound\""), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("ncu_iter001_naive_round3.csv"), std::string::npos) << evidence;
}

TEST(ProfileCli, RoundDefaultsToTheNextRoundAndBaselineFlagProfilesTheLibrary) {
  ProfileSetup s;
  auto r = run_croq(s.root, {"profile", "--gpu", "sm90_NVIDIA_H200", "--dsl", "cuda", "--shape-key", k_key, "--model",
                             "m1", "--baseline", "--ncu", s.ncu.string(), "--runner", "/bin/true"},
                    {{"FAKE_NCU_LOG", s.log.string()}, {"FAKE_NCU_CSV", k_raw}, {"CROQ_LEASE_DIR", (s.dir / "leases").string()}});
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_EQ(r.doc["kernel_origin"], "library");
  EXPECT_EQ(r.doc["round"], 1);
  EXPECT_TRUE(fs::exists(s.perf / "ncu_iter000_cublas_round1.csv"));
  EXPECT_NE(croq::read_file_or_throw(s.log).find("--library cublas"), std::string::npos);
  std::string evidence = croq::read_file_or_throw(s.root / "tuning/sm90_NVIDIA_H200/cuda/logs" / k_key / "m1/evidence.jsonl");
  EXPECT_NE(evidence.find("\"kind\":\"baseline_profile\""), std::string::npos) << evidence;
}

TEST(ProfileCli, LibraryKernelInsteadOfTheCandidateIsRefused) {
  ProfileSetup s;
  auto r = s.profile(k_raw);
  EXPECT_EQ(r.rc, 5) << r.err;
  EXPECT_NE(r.doc["error"]["message"].get<std::string>().find("nvjet"), std::string::npos);
  EXPECT_FALSE(fs::exists(s.perf / "ncu_iter001_naive_round3.csv"));
  EXPECT_FALSE(fs::exists(s.perf / "ncu_iter001_naive_round3.ncu-rep"));
}

TEST(ProfileCli, NcuFailuresMapToExitCodes) {
  ProfileSetup s;
  fs::path csv = write(s.dir, "cand.csv", candidate_csv());
  auto r = s.profile(csv, "perm");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.doc["error"]["hint"].get<std::string>().find("NVreg_RestrictProfilingToAdminUsers"), std::string::npos);
  r = s.profile(csv, "none");
  EXPECT_EQ(r.rc, 4);
  EXPECT_NE(r.doc["error"]["message"].get<std::string>().find("no kernel matched"), std::string::npos);
  r = run_croq(s.root, {"profile", "--gpu", "sm90_NVIDIA_H200", "--dsl", "cuda", "--shape-key", k_key, "--model", "m1",
                        "--iter", "iter001_naive", "--round", "3", "--ncu", (s.dir / "no-such-ncu").string(), "--runner",
                        "/bin/true"},
               {{"CROQ_LEASE_DIR", (s.dir / "leases").string()}});
  EXPECT_EQ(r.rc, 7);
  EXPECT_EQ(r.doc["error"]["code"], "no_device");
}

TEST(ProfileCli, MissingCandidateIsNotFound) {
  ProfileSetup s;
  auto r = run_croq(s.root, {"profile", "--gpu", "sm90_NVIDIA_H200", "--dsl", "cuda", "--shape-key", k_key, "--model",
                             "m1", "--iter", "iter002_other", "--round", "1", "--ncu", s.ncu.string(), "--runner", "/bin/true"});
  EXPECT_EQ(r.rc, 4);
}

TEST(SassCli, NaiveAgainstHgmmaBaselineTopDivergenceIsTensorCores) {
  TempDir dir;
  auto r = run_croq(dir.path(), {"sass", "compare", "--candidate-sass", k_data + "/sass/synthetic_naive_sm90a.sass",
                                 "--baseline-sass", k_data + "/sass/synthetic_hgmma_sm90a.sass"});
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_EQ(r.doc["top"]["category"], "tensor_core");
  EXPECT_EQ(r.doc["top"]["severity"], "high");
  EXPECT_EQ(r.doc["baseline"]["mix"]["tensor_family"], "HGMMA");
  EXPECT_TRUE(r.doc["candidate"]["mix"]["tensor_family"].is_null());
}

TEST(SassCli, DumpKeepsTheTextUnderPerfForATask) {
  TempDir dir;
  fs::path root = dir / "ws";
  fs::create_directories(root / "tuning");
  auto r = run_croq(root, {"sass", "dump", "--sass-file", k_data + "/sass/synthetic_hgmma_sm90a.sass", "--baseline",
                           "--gpu", "sm90_NVIDIA_H200", "--dsl", "cuda", "--shape-key", k_key, "--model", "m1"});
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  fs::path kept = root / "tuning/sm90_NVIDIA_H200/cuda/perf" / k_key / "m1/sass_baseline.sass";
  EXPECT_TRUE(fs::exists(kept));
  EXPECT_EQ(r.doc["mix"]["tensor_ops"]["HGMMA.64x128x16.F32"], 4);
  // compare --iter finds the kept baseline; the candidate's text is given directly.
  r = run_croq(root, {"sass", "compare", "--gpu", "sm90_NVIDIA_H200", "--dsl", "cuda", "--shape-key", k_key, "--model",
                      "m1", "--iter", "iter001_naive", "--candidate-sass", k_data + "/sass/synthetic_naive_sm90a.sass"});
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_EQ(r.doc["top"]["category"], "tensor_core");
  EXPECT_TRUE(fs::exists(root / "tuning/sm90_NVIDIA_H200/cuda/perf" / k_key / "m1/sass_compare_iter001_naive.json"));
  std::string evidence = croq::read_file_or_throw(root / "tuning/sm90_NVIDIA_H200/cuda/logs" / k_key / "m1/evidence.jsonl");
  EXPECT_NE(evidence.find("\"kind\":\"sass_compare\""), std::string::npos) << evidence;
}

TEST(SassCli, MissingCuobjdumpIsNoDevice) {
  TempDir dir;
  fs::path so = write(dir, "x.so", "binary");
  auto r = run_croq(dir.path(), {"sass", "dump", "--candidate", so.string(), "--cuobjdump", (dir / "nope").string()});
  EXPECT_EQ(r.rc, 7);
}
