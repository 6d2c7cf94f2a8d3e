// The triton dsl through the real binary: croq profile captures the candidate's own kernel (the
// Python runner's profile mode, ncu kept to the NVTX range and to the module's @triton.jit
// kernels), croq sass dump disassembles the cubin Triton compiled for the candidate, and
// @triton.autotune is refused after iter000. ncu, the Python runner and cuobjdump are replaced at
// the process boundary by scripts replaying recorded output (tests/data/ncu, tests/data/sass).
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
const std::string k_key = "matmul_f16fp32_4096x4096x4096";
const std::vector<std::string> k_task = {"--gpu", "sm90_NVIDIA_H200", "--dsl", "triton", "--shape-key", k_key,
                                         "--model", "m1"};

fs::path script(const TempDir& dir, const std::string& name, const std::string& text) {
  fs::path p = dir / name;
  croq::atomic_write(p, text, false);
  ::chmod(p.c_str(), 0755);
  return p;
}

std::vector<std::string> with_task(std::vector<std::string> a, const std::vector<std::string>& more = {}) {
  a.insert(a.end(), k_task.begin(), k_task.end());
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// A Triton module with a helper and a kernel (the helper is inlined: it never runs as a kernel).
const char* k_module =
    "import triton\n"
    "import triton.language as tl\n\n"
    "@triton.jit\n"
    "def _croq_tile(x):\n"
    "    return x\n\n"
    "@triton.jit(do_not_specialize=['M'])\n"
    "def _croq_mm(a_ptr, M):\n"
    "    pass\n\n"
    "def croq_matmul(problem, a, b, c):\n"
    "    _croq_mm[(1,)](a, 1)\n";

struct Workspace {
  TempDir dir;
  fs::path root = dir / "ws";
  fs::path srcs = root / "tuning/sm90_NVIDIA_H200/triton/srcs" / k_key / "m1";
  fs::path perf = root / "tuning/sm90_NVIDIA_H200/triton/perf" / k_key / "m1";
  Workspace() {
    fs::create_directories(srcs);
    croq::atomic_write(srcs / "iter001_fam.py", k_module, false);
  }
};

// The real H200 capture of a GEMM kernel (tests/data/ncu), under the name of the candidate's kernel.
std::string recorded_csv(const std::string& kernel) {
  std::string text = croq::read_file_or_throw(k_data + "/ncu/h200/cublas_nvjet_f16_4096_full_raw.csv");
  const std::string lib = "nvjet_sm90_hss_256x128_64x4_1x2_h_bz_coopA_NNT";
  text.replace(text.find("\"" + lib + "\"") + 1, lib.size(), kernel);
  return text;
}

// ncu's stand-in. Like the Python runner it runs, it waits at croq's gate (--go-file F: F.ready
// written, then F awaited) and notes in $FAKE_NCU_LOG.lease whether the device's lease was held
// before the gate and after it.
fs::path fake_ncu(const TempDir& dir) {
  return script(dir, "fake-ncu",
                "#!/bin/sh\n"
                "printf '%s\\n' \"$@\" > \"$FAKE_NCU_LOG\"\n"
                "if [ \"$1\" = \"--import\" ]; then cat \"$FAKE_NCU_CSV\"; exit 0; fi\n"
                "lease() { for f in \"$CROQ_LEASE_DIR\"/croq-gpu-*.lock; do\n"
                "  if [ -e \"$f\" ] && ! flock -n \"$f\" true; then echo \"$1 held\"; return; fi; done; echo \"$1 free\"; }\n"
                "prev=''; go=''\n"
                "for a in \"$@\"; do\n"
                "  if [ \"$prev\" = '--export' ]; then echo fake-report > \"$a\"; fi\n"
                "  if [ \"$prev\" = '--go-file' ]; then go=\"$a\"; fi\n"
                "  prev=\"$a\"\n"
                "done\n"
                "if [ -n \"$go\" ]; then\n"
                "  lease before >> \"$FAKE_NCU_LOG.lease\"; : > \"$go.ready\"; i=0\n"
                "  while [ ! -e \"$go\" ]; do sleep 0.01; i=$((i+1)); [ $i -gt 3000 ] && exit 3; done\n"
                "  lease after >> \"$FAKE_NCU_LOG.lease\"\n"
                "fi\n"
                "exit 0\n");
}

}  // namespace

TEST(TritonCli, ProfileCapturesTheCandidatesKernelInsideTheNvtxRange) {
  Workspace w;
  fs::path csv = w.dir / "capture.csv";
  croq::atomic_write(csv, recorded_csv("_croq_mm"), false);
  fs::path log = w.dir / "ncu.log";
  auto r = run_croq(w.root, with_task({"profile"}, {"--iter", "iter001_fam", "--round", "2", "--ncu", fake_ncu(w.dir).string()}),
                    {{"FAKE_NCU_LOG", log.string()}, {"FAKE_NCU_CSV", csv.string()},
                     {"CROQ_LEASE_DIR", (w.dir / "leases").string()}});
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_EQ(r.doc["kernel"], "_croq_mm");
  EXPECT_EQ(r.doc["kernel_origin"], "candidate");
  EXPECT_EQ(r.doc["candidate"], "iter001_fam");
  EXPECT_EQ(r.doc["bottleneck"], "compute_bound");  // the classifier on the capture
  EXPECT_TRUE(fs::exists(w.perf / "ncu_iter001_fam_round2.csv"));
  // ncu ran croq's Python runner in its profile mode, with croq's rules, kept to the NVTX range
  // and to the module's kernels.
  std::string argv;
  for (const auto& a : r.doc["ncu_argv"]) argv += a.get<std::string>() + "\n";
  EXPECT_NE(argv.find("--nvtx-include\ncroq_candidate/\n"), std::string::npos) << argv;
  EXPECT_NE(argv.find("regex:^(_croq_tile|_croq_mm)$\n"), std::string::npos) << argv;
  EXPECT_NE(argv.find("/src/python/croq_runner.py\n--rules\n{\"schema\":\"croq-measurement-rules-v1\""),
            std::string::npos) << argv;
  EXPECT_NE(argv.find("--mode\nprofile\n"), std::string::npos) << argv;
  EXPECT_NE(argv.find("srcs/" + k_key + "/m1/iter001_fam.py\n"), std::string::npos) << argv;
  std::string evidence = croq::read_file_or_throw(w.root / "tuning/sm90_NVIDIA_H200/triton/logs" / k_key / "m1/evidence.jsonl");
  EXPECT_NE(evidence.find("\"captured_kernel\":\"_croq_mm\""), std::string::npos) << evidence;
  // The runner's start (torch and triton imports) runs before croq takes the device's lease: the
  // runner got a gate, and the lease was free before it and held after it.
  EXPECT_NE(argv.find("\n--go-file\n"), std::string::npos) << argv;
  EXPECT_EQ(r.doc["gated"], true) << r.out;
  EXPECT_EQ(croq::read_file_or_throw(fs::path(log.string() + ".lease")), "before free\nafter held\n");
}

// A capture holding only another kernel (a library's, torch's) is never taken for the candidate's.
TEST(TritonCli, ProfileRefusesACaptureWithoutTheCandidatesKernel) {
  Workspace w;
  fs::path csv = w.dir / "capture.csv";
  croq::atomic_write(csv, recorded_csv("nvjet_sm90_hss_256x128_64x4_1x2_h_bz_coopA_NNT"), false);
  auto r = run_croq(w.root, with_task({"profile"}, {"--iter", "iter001_fam", "--ncu", fake_ncu(w.dir).string()}),
                    {{"FAKE_NCU_LOG", (w.dir / "ncu.log").string()}, {"FAKE_NCU_CSV", csv.string()},
                     {"CROQ_LEASE_DIR", (w.dir / "leases").string()}});
  EXPECT_EQ(r.rc, 4) << r.err << r.out;  // no kernel of the module in the capture
  EXPECT_NE(r.err.find("^(_croq_tile|_croq_mm)$"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(w.perf / "ncu_iter001_fam_round1.csv"));
}

TEST(TritonCli, SassDumpDisassemblesTheCubinTritonCompiledForTheCandidate) {
  Workspace w;
  fs::path log = w.dir / "python.log";
  // The runner's stand-in: Triton's cache for the run receives the compiled kernel's cubin.
  fs::path py = script(w.dir, "fake-python",
                       "#!/bin/sh\n"
                       "printf '%s\\n' \"$@\" > \"$FAKE_PY_LOG\"\n"
                       "prev=''\n"
                       "for a in \"$@\"; do\n"
                       "  if [ \"$prev\" = '--dump-cubins' ]; then mkdir -p \"$a/3f2a\"; echo cubin > \"$a/3f2a/_croq_mm.cubin\"; fi\n"
                       "  prev=\"$a\"\n"
                       "done\n"
                       "echo '{\"verdict\": \"PASS\"}'\n");
  fs::path cuobjdump = script(w.dir, "fake-cuobjdump",
                              "#!/bin/sh\n"
                              "case \"$1\" in -sass) cat \"" + k_data + "/sass/synthetic_hgmma_sm90a.sass\";;\n"
                              "  *) cat \"" + k_data + "/sass/synthetic_res_usage.txt\";; esac\n");
  auto r = run_croq(w.root, with_task({"sass", "dump"}, {"--iter", "iter001_fam", "--cuobjdump", cuobjdump.string()}),
                    {{"CROQ_PYTHON", py.string()}, {"FAKE_PY_LOG", log.string()}});
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  const std::string args = croq::read_file_or_throw(log);
  EXPECT_NE(args.find("--dump-cubins\n" + (w.perf / "cubin_iter001_fam").string() + "\n"), std::string::npos) << args;
  EXPECT_NE(args.find("--mode\nverify\n"), std::string::npos) << args;
  EXPECT_NE(args.find("--rules\n"), std::string::npos) << args;
  EXPECT_NE(r.doc.dump().find("_croq_mm.cubin"), std::string::npos) << r.doc.dump();
  EXPECT_EQ(r.doc["mix"]["tensor_family"], "HGMMA");
  EXPECT_TRUE(fs::exists(w.perf / "sass_iter001_fam.sass"));
  // A second dump reuses the cubin: the runner is not started again.
  fs::remove(log);
  r = run_croq(w.root, with_task({"sass", "dump"}, {"--iter", "iter001_fam", "--cuobjdump", cuobjdump.string()}),
               {{"CROQ_PYTHON", py.string()}, {"FAKE_PY_LOG", log.string()}});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(fs::exists(log));
}

TEST(TritonCli, AutotuneIsRefusedAfterIter000) {
  Workspace w;
  const std::string tuned =
      "import triton\nimport triton.language as tl\n\n"
      "@triton.autotune(configs=[triton.Config({'BLOCK': 64}, num_warps=4)],\n"
      "                 key=['M'])\n"
      "@triton.jit\n"
      "def _k(x, M, BLOCK: tl.constexpr):\n    pass\n\n"
      "def croq_matmul(problem, a, b, c):\n    _k[(1,)](a, 1)\n";
  croq::atomic_write(w.srcs / "iter002_tuned.py", tuned, false);
  auto r = run_croq(w.root, with_task({"build"}, {"--iter", "iter002_tuned"}));
  EXPECT_EQ(r.rc, 8) << r.err << r.out;
  EXPECT_EQ(r.doc["verdict"], "COMPILE_FAIL");
  EXPECT_EQ(r.doc["rule"], "autotune_only_in_iter000");
  EXPECT_NE(r.doc["errors"].dump().find("line 4"), std::string::npos) << r.doc.dump();
  // iter000 may autotune: the rule does not stop it (what follows is the module's own check).
  croq::atomic_write(w.srcs / "iter000_tuned.py", tuned, false);
  r = run_croq(w.root, with_task({"build"}, {"--iter", "iter000_tuned"}));
  EXPECT_FALSE(r.doc.contains("rule")) << r.doc.dump();
}
