// croq build, env validate, discover and prepare through the real binary: real g++ (and real
// nvcc when the toolkit is installed), a fake compiler script that records its command line, the
// scripts croq writes, and the cpp candidate actually loaded and run.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <croq/kernel_abi.h>

#include "croq/measure/rules.hpp"
#include "croq/measure/runner_options.hpp"
#include "support/runner_options_sample.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

using test::run_croq;
using test::TempDir;

const std::vector<std::string> k_cpp_task = {"--gpu", "cpu_x86_64", "--dsl", "cpp", "--shape-key",
                                             "matmul_f32_96x80x72", "--model", "m1"};

std::vector<std::string> args(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

// Loads a cpp candidate and checks it against a double-precision triple loop.
double max_error_of(const fs::path& so, int64_t m, int64_t n, int64_t k) {
  void* h = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return INFINITY;
  auto fn = reinterpret_cast<croq_matmul_fn>(::dlsym(h, CROQ_MATMUL_SYMBOL));
  if (!fn) return INFINITY;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> a(size_t(m * k)), b(size_t(k * n)), c(size_t(m * n), NAN);
  for (auto& x : a) x = dist(rng);
  for (auto& x : b) x = dist(rng);
  croq_matmul_problem p{CROQ_ABI_VERSION, m, n, k, CROQ_F32, CROQ_F32, CROQ_F32, CROQ_F32, CROQ_ROW_MAJOR, k, n, n};
  if (fn(&p, a.data(), b.data(), c.data(), nullptr, 0, nullptr) != CROQ_OK) return INFINITY;
  double worst = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t q = 0; q < k; ++q) want += double(a[size_t(i * k + q)]) * b[size_t(q * n + j)];
      double err = std::fabs(want - c[size_t(i * n + j)]);
      worst = std::isnan(err) ? INFINITY : std::max(worst, err);
    }
  }
  ::dlclose(h);
  return worst;
}

TEST(BuildCli, CppKernelPreparedBuiltWithRealGxxRunsCorrectlyAndCaches) {
  if (!find_executable("g++")) GTEST_SKIP() << "no g++";
  TempDir root;
  auto prep = run_croq(root.path(), args({"prepare"}, args(k_cpp_task, {"--pick", "1"})));
  ASSERT_EQ(prep.rc, 0) << prep.err;
  EXPECT_EQ(prep.doc["kernel"], "iter001_blocked");
  EXPECT_EQ(prep.doc["from"]["tier"], "A");
  auto b1 = run_croq(root.path(), args({"build"}, args(k_cpp_task, {"--iter", "1"})));
  ASSERT_EQ(b1.rc, 0) << b1.out << b1.err;
  EXPECT_EQ(b1.doc["verdict"], "OK");
  EXPECT_EQ(b1.doc["cached"], false);
  fs::path so = root.path() / b1.doc["outputs"][0].get<std::string>();
  ASSERT_TRUE(fs::exists(so));
  EXPECT_LT(max_error_of(so, 96, 80, 72), 1e-3);
  auto b2 = run_croq(root.path(), args({"build"}, args(k_cpp_task, {"--iter", "iter001"})));
  ASSERT_EQ(b2.rc, 0);
  EXPECT_EQ(b2.doc["cached"], true);
  EXPECT_EQ(b2.doc["cache_key"], b1.doc["cache_key"]);
  // The build script rebuilds the same object by hand.
  fs::path script = root.path() / b1.doc["scripts"]["build"].get<std::string>();
  fs::remove(so);
  ProcessSpec spec;
  spec.argv = {"bash", script.string()};
  spec.timeout = std::chrono::minutes(5);
  ProcessResult r = SystemProcessRunner().run(spec);
  ASSERT_TRUE(r.ok()) << r.err << r.out;
  EXPECT_LT(max_error_of(so, 96, 80, 72), 1e-3);
}

TEST(BuildCli, PrepareRefusesASecondIter001UnlessForced) {
  TempDir root;
  ASSERT_EQ(run_croq(root.path(), args({"prepare"}, k_cpp_task)).rc, 0);
  // The bundled kernels best ranked first: blocked, the cpp_tiled template, naive.
  auto again = run_croq(root.path(), args({"prepare"}, args(k_cpp_task, {"--pick", "3"})));
  EXPECT_EQ(again.rc, 9) << again.err;
  auto forced = run_croq(root.path(), args({"prepare"}, args(k_cpp_task, {"--pick", "3", "--force"})));
  EXPECT_EQ(forced.rc, 0) << forced.err;
  EXPECT_EQ(forced.doc["kernel"], "iter001_naive");
  EXPECT_FALSE(fs::exists(root.path() / "tuning/cpu_x86_64/cpp/srcs/matmul_f32_96x80x72/m1/iter001_blocked.cpp"));
  // The reservation made by prepare means the next iteration is 2.
  auto next = run_croq(root.path(), args({"next-iter"}, args(k_cpp_task, {"--tag", "x1", "--peek"})));
  EXPECT_EQ(next.doc["iter"], "iter002");
}

TEST(BuildCli, CompileFailureIsVerdictEightWithErrors) {
  if (!find_executable("g++")) GTEST_SKIP() << "no g++";
  TempDir root;
  fs::path src = root.path() / "broken.cpp";
  atomic_write(src, "#include <croq/kernel_abi.h>\nint f() { return undeclared_thing; }\n", false);
  ASSERT_EQ(run_croq(root.path(), args({"prepare"}, args(k_cpp_task, {"--from", src.string()}))).rc, 0);
  auto b = run_croq(root.path(), args({"build"}, args(k_cpp_task, {"--iter", "1"})));
  EXPECT_EQ(b.rc, 8);
  EXPECT_EQ(b.doc["verdict"], "COMPILE_FAIL");
  ASSERT_FALSE(b.doc["errors"].empty());
  EXPECT_NE(b.doc["errors"][0].get<std::string>().find("undeclared_thing"), std::string::npos);
}

// A fake nvcc: records each command line, writes the -o file and a ptxas report.
fs::path write_fake_nvcc(const fs::path& dir) {
  fs::path p = dir / "fake-nvcc";
  atomic_write(p,
               "#!/usr/bin/env bash\n"
               "if [ \"$1\" = --version ]; then echo 'Cuda compilation tools, release 13.0, V13.0.88'; exit 0; fi\n"
               "echo \"$*\" >> \"$(dirname \"$0\")/calls.txt\"\n"
               "while [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then echo fake > \"$2\"; fi; shift; done\n"
               "echo \"ptxas info    : Compiling entry function '_Z6kernelPf' for 'sm_90a'\" >&2\n"
               "echo \"ptxas info    : Function properties for _Z6kernelPf\" >&2\n"
               "echo \"    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\" >&2\n"
               "echo \"ptxas info    : Used 32 registers, used 1 barriers, 4096 bytes smem\" >&2\n",
               false);
  fs::permissions(p, fs::perms::owner_all);
  return p;
}

TEST(BuildCli, SeveralIterationsBuildInParallelWithTheFakeCompiler) {
  TempDir root;
  fs::path nvcc = write_fake_nvcc(root.path());
  std::vector<std::string> task = {"--gpu", "sm90_NVIDIA_H200", "--dsl", "cuda", "--shape-key",
                                   "matmul_f16f32_256x256x256", "--model", "m1"};
  fs::path srcs = root.path() / "tuning/sm90_NVIDIA_H200/cuda/srcs/matmul_f16f32_256x256x256/m1";
  ensure_dir(srcs);
  for (const char* name : {"iter001_a.cu", "iter002_b.cu", "iter003_c.cu"}) {
    atomic_write(srcs / name, std::string("// ") + name + "\n#include <croq/kernel_abi.h>\n", false);
  }
  auto r = run_croq(root.path(), args({"build"}, args(task, {"--iter", "1", "--iter", "2", "--iter", "3", "-j", "3"})),
                    {{"CROQ_NVCC", nvcc.string()}});
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  ASSERT_EQ(r.doc["builds"].size(), 3u);
  EXPECT_EQ(r.doc["verdict"], "OK");
  for (const auto& b : r.doc["builds"]) {
    EXPECT_EQ(b["verdict"], "OK");
    EXPECT_EQ(b["resources"][0]["registers"], 32);
    EXPECT_EQ(b["resources"][0]["shared_bytes"], 4096);
  }
  auto calls = split_lines(read_file_or_throw(root.path() / "calls.txt"));
  ASSERT_EQ(calls.size(), 3u);
  for (const auto& c : calls) {
    EXPECT_NE(c.find("-O3 -std=c++17 --shared -Xcompiler -fPIC -Xptxas -v -I"), std::string::npos) << c;
    EXPECT_NE(c.find("-gencode=arch=compute_90a,code=sm_90a"), std::string::npos) << c;
  }
  EXPECT_TRUE(fs::exists(root.path() / "tuning/sm90_NVIDIA_H200/cuda/bin/matmul_f16f32_256x256x256/m1/iter002_b.so"));
  // All cached the second time, in one go.
  auto again = run_croq(root.path(), args({"build"}, args(task, {"--iter", "1", "--iter", "2", "--iter", "3", "-j", "2"})),
                        {{"CROQ_NVCC", nvcc.string()}});
  for (const auto& b : again.doc["builds"]) EXPECT_EQ(b["cached"], true);
  EXPECT_EQ(split_lines(read_file_or_throw(root.path() / "calls.txt")).size(), 3u);
}

TEST(BuildCli, RealNvccReportsResources) {
  auto nvcc = find_executable("nvcc");
  if (!nvcc && fs::exists("/usr/local/cuda/bin/nvcc")) nvcc = fs::path("/usr/local/cuda/bin/nvcc");
  if (!nvcc) GTEST_SKIP() << "no CUDA toolkit";
  TempDir root;
  std::vector<std::string> task = {"--gpu", "sm90_NVIDIA_H200", "--dsl", "cuda", "--shape-key",
                                   "matmul_f16f32_256x256x256", "--model", "m1"};
  fs::path srcs = root.path() / "tuning/sm90_NVIDIA_H200/cuda/srcs/matmul_f16f32_256x256x256/m1";
  ensure_dir(srcs);
  atomic_write(srcs / "iter001_tiny.cu",
               "#include <croq/kernel_abi.h>\n"
               "__global__ void fill(float* c, int64_t n) { __shared__ float s[256]; int i = threadIdx.x;\n"
               "  s[i] = float(i); __syncthreads(); if (i < n) c[i] = s[255 - i]; }\n"
               "CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void*, const void*, void* c,\n"
               "                                    void*, size_t, void* stream) {\n"
               "  fill<<<1, 256, 0, (cudaStream_t)stream>>>((float*)c, p->m * p->n);\n"
               "  return cudaGetLastError() == cudaSuccess ? CROQ_OK : CROQ_LAUNCH_FAILED;\n}\n",
               false);
  auto r = run_croq(root.path(), args({"build"}, args(task, {"--iter", "1"})), {{"CROQ_NVCC", nvcc->string()}});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  ASSERT_EQ(r.doc["resources"].size(), 1u);
  EXPECT_EQ(r.doc["resources"][0]["kernel"], "fill");
  EXPECT_EQ(r.doc["resources"][0]["arch"], "sm_90a");
  EXPECT_GT(r.doc["resources"][0]["registers"].get<int>(), 0);
  EXPECT_EQ(r.doc["resources"][0]["shared_bytes"], 1024);
  EXPECT_NE(r.doc["compiler"]["version"].get<std::string>().find("release"), std::string::npos);
  auto again = run_croq(root.path(), args({"build"}, args(task, {"--iter", "1"})), {{"CROQ_NVCC", nvcc->string()}});
  EXPECT_EQ(again.doc["cached"], true);
  EXPECT_EQ(again.doc["resources"], r.doc["resources"]);
}

// The real Choreo compiler, both phases: runs where CROQ_TEST_CHOREO_HOME names a built croqtile
// checkout (its build/choreo and extern/cutlass with the CUTLASS 4.2.1 headers) and nvcc is
// installed; skipped elsewhere (CI does not build the compiler).
TEST(BuildCli, RealChoreoBuildsACoThroughBothPhases) {
  const char* home = std::getenv("CROQ_TEST_CHOREO_HOME");
  if (!home || !*home) GTEST_SKIP() << "set CROQ_TEST_CHOREO_HOME to a built croqtile checkout to run this";
  auto nvcc = find_executable("nvcc");
  if (!nvcc && fs::exists("/usr/local/cuda/bin/nvcc")) nvcc = fs::path("/usr/local/cuda/bin/nvcc");
  if (!nvcc) GTEST_SKIP() << "no CUDA toolkit";
  TempDir root;
  std::vector<std::string> task = {"--gpu", "sm90_NVIDIA_H200", "--dsl", "croqtile", "--shape-key",
                                   "matmul_f16fp32_2048x2048x2048", "--model", "m1"};
  std::map<std::string, std::string> env = {{"CHOREO_HOME", home},
                                            {"CUTE_HOME", (fs::path(home) / "extern/cutlass").string()},
                                            {"CROQ_NVCC", nvcc->string()}};
  auto prep = run_croq(root.path(),
                       args({"prepare"}, args(task, {"--from", std::string(CROQ_TEST_DATA_DIR) + "/choreo/matmul_f16f32_wgmma.co",
                                                     "--tag", "wgmma"})),
                       env);
  ASSERT_EQ(prep.rc, 0) << prep.out << prep.err;
  auto r = run_croq(root.path(), args({"build"}, args(task, {"--iter", "iter001_wgmma"})), env, {},
                    std::chrono::milliseconds(900000));
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(r.doc["verdict"], "OK");
  fs::path srcs = root.path() / "tuning/sm90_NVIDIA_H200/croqtile/srcs/matmul_f16fp32_2048x2048x2048/m1";
  EXPECT_TRUE(fs::exists(srcs / "iter001_wgmma.cu")) << "phase 1 did not write the extracted .cu beside the .co";
  bool has_so = false;
  for (const auto& o : r.doc["outputs"]) has_so = has_so || ends_with(o.get<std::string>(), ".so");
  EXPECT_TRUE(has_so) << r.out;
  auto again = run_croq(root.path(), args({"build"}, args(task, {"--iter", "iter001_wgmma"})), env);
  EXPECT_EQ(again.doc["cached"], true) << again.out;
}

TEST(BuildCli, TritonSourcesAreCheckedForLibraryCallsByRealPython) {
  if (!find_executable("python3")) GTEST_SKIP() << "no python3";
  TempDir root;
  std::vector<std::string> task = {"--gpu", "sm90_NVIDIA_H200", "--dsl", "triton", "--shape-key",
                                   "matmul_f16f32_256x256x256", "--model", "m1"};
  fs::path srcs = root.path() / "tuning/sm90_NVIDIA_H200/triton/srcs/matmul_f16f32_256x256x256/m1";
  ensure_dir(srcs);
  // `@` is invisible to a text scan; the runner's AST check finds it.
  atomic_write(srcs / "iter001_cheat.py", "def croq_matmul(problem, a, b, c):\n    c.copy_(a @ b)\n", false);
  auto r = run_croq(root.path(), args({"build"}, args(task, {"--iter", "1"})));
  EXPECT_EQ(r.rc, 8) << r.out << r.err;
  EXPECT_EQ(r.doc["verdict"], "LIBRARY_CALL_FORBIDDEN");
  EXPECT_NE(r.doc["errors"].dump().find("@"), std::string::npos);
  atomic_write(srcs / "iter002_bad.py", "def croq_matmul(problem, a, b, c)\n    pass\n", false);
  auto syntax = run_croq(root.path(), args({"build"}, args(task, {"--iter", "2"})));
  EXPECT_EQ(syntax.doc["verdict"], "COMPILE_FAIL");
  EXPECT_NE(syntax.doc["errors"].dump().find("SyntaxError"), std::string::npos);
}

TEST(BuildCli, DiscoverOffersTheTensorCoreKernelFirst) {
  TempDir root;
  auto r = run_croq(root.path(), {"discover", "--dsl", "cuda", "--operator", "matmul", "--dtype", "fp16fp32", "--gpu",
                                  "sm90_NVIDIA_H200"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.doc["tier"], "A");
  EXPECT_EQ(r.doc["candidates"][0]["meta"]["tensor_cores"], true);
  bool wmma = false;
  for (const auto& c : r.doc["candidates"]) wmma = wmma || c["name"] == "wmma_tc";
  EXPECT_TRUE(wmma);
  EXPECT_EQ(r.doc["recommendation"]["pick"], 1);
  EXPECT_FALSE(r.doc["scratch"]["references"].empty());
}

TEST(BuildCli, EnvValidateGivesOneDocumentAndExitsOneOnErrors) {
  TempDir root;
  auto r = run_croq(root.path(), {"env", "validate", "--dsl", "cuda"}, {{"CROQ_NCU", "/nonexistent/ncu"}});
  ASSERT_TRUE(r.doc.is_object()) << r.out;
  EXPECT_EQ(r.doc["dsl"], "cuda");
  EXPECT_EQ(r.doc["pass"], false);  // ncu does not run
  EXPECT_EQ(r.rc, 1);
  for (const auto& e : r.doc["errors"]) EXPECT_FALSE(e.value("fix", "").empty());
  auto cpp = run_croq(root.path(), {"env", "validate", "--dsl", "cpp"});
  ASSERT_TRUE(cpp.doc.is_object());
  EXPECT_EQ(cpp.rc, cpp.doc.value("pass", false) ? 0 : 1);
  for (const auto& w : cpp.doc["warnings"]) EXPECT_NE(w.value("check", ""), "gpu") << "cpp needs no GPU: " << w.dump();
  auto bad = run_croq(root.path(), {"env", "validate", "--dsl", "rust"});
  EXPECT_EQ(bad.rc, 2);
}

}  // namespace
}  // namespace croq

namespace croq {
namespace {

using test::python_with_torch;

// Runs croq's Python runner on the CPU (its hidden --device cpu mode) and returns the document.
json run_runner(const std::string& py, const fs::path& candidate, const std::string& dtype, int timeout_s = 60) {
  ProcessSpec spec;
  spec.argv = {py, std::string(CROQ_SOURCE_DIR) + "/src/python/croq_runner.py", "--rules",
               dump_compact(measurement_rules()), "--device", "cpu", "--candidate",
               candidate.string(), "--m", "37", "--n", "29", "--k", "41", "--dtype", dtype, "--warmup", "1",
               "--max-reps", "5", "--timeout-s", std::to_string(timeout_s)};
  spec.timeout = std::chrono::seconds(timeout_s + 60);
  ProcessResult r = SystemProcessRunner().run(spec);
  return try_parse_json(r.out).value_or(json());
}

// croq measure runs the Python runner with the same flags as croq-gpu-runner (runner_arguments):
// each of them must be understood, with the same meaning.
TEST(PythonRunner, UnderstandsEveryFlagCroqPassesToRunners) {
  if (!find_executable("python3")) GTEST_SKIP() << "no python3";
  RunnerOptions o = test::every_runner_option_set();
  o.candidate = "/x/k.py";
  o.b_layout = "auto";
  ProcessSpec spec;
  spec.argv = {"python3", std::string(CROQ_SOURCE_DIR) + "/src/python/croq_runner.py"};
  for (const auto& a : runner_arguments(o)) spec.argv.push_back(a);
  spec.argv.push_back("--parse-only");
  spec.timeout = std::chrono::seconds(60);
  ProcessResult r = SystemProcessRunner().run(spec);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json a = json::parse(r.out);
  EXPECT_EQ(a["mode"], "verify");
  EXPECT_EQ(a["seed"], 77);
  EXPECT_EQ(a["warmup"], 3);
  EXPECT_DOUBLE_EQ(a["warmup_ms"].get<double>(), 350);
  EXPECT_EQ(a["min_reps"], 7);
  EXPECT_EQ(a["max_reps"], 9);
  EXPECT_DOUBLE_EQ(a["target_cv"].get<double>(), 0.02);
  EXPECT_DOUBLE_EQ(a["min_time_ms"].get<double>(), 75);
  EXPECT_DOUBLE_EQ(a["time_budget_ms"].get<double>(), 150);
  EXPECT_DOUBLE_EQ(a["rest_ratio"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(a["rest_window_ms"].get<double>(), 25);
  EXPECT_EQ(a["no_l2_flush"], true);
  EXPECT_EQ(a["b_layout"], "row");
  EXPECT_EQ(a["device"], "cuda");
  EXPECT_EQ(a["out"], "/tmp/m.json");
  EXPECT_EQ(a["cusparselt"], "/opt/cusparselt/lib");
  // The sparse operator is understood (and answered UNSUPPORTED by the Python runner: docs/dsl.md).
  o.op = "gemm_sp";
  spec.argv = {"python3", std::string(CROQ_SOURCE_DIR) + "/src/python/croq_runner.py"};
  for (const auto& x : runner_arguments(o)) spec.argv.push_back(x);
  spec.argv.push_back("--parse-only");
  r = SystemProcessRunner().run(spec);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["op"], "gemm_sp");
}

TEST(PythonRunner, VerdictsOfGoodWrongForbiddenAndCrashingCandidates) {
  std::string py = python_with_torch();
  if (py.empty()) GTEST_SKIP() << "no python3 with torch";
  TempDir dir;
  atomic_write(dir / "good.py",
               "def croq_matmul(problem, a, b, c):\n"
               "    bt = b.t() if problem['b_layout'] == 'col' else b\n"
               "    c.copy_((a.float()[:, :, None] * bt.float()[None, :, :]).sum(1))\n", false);
  atomic_write(dir / "wrong.py", "def croq_matmul(problem, a, b, c):\n    c.fill_(1.0)\n", false);
  // Hidden from the AST check; the run-time guard records the call even though it is caught.
  atomic_write(dir / "sneaky.py",
               "import torch\n_f = getattr(torch, 'mat' + 'mul')\n"
               "def croq_matmul(problem, a, b, c):\n"
               "    try:\n        c.copy_(_f(a.float(), b.float()))\n"
               "    except Exception:\n        c.copy_((a.float()[:, :, None] * b.float()[None, :, :]).sum(1))\n", false);
  atomic_write(dir / "crash.py", "import ctypes\ndef croq_matmul(problem, a, b, c):\n    ctypes.string_at(0)\n", false);
  json good = run_runner(py, dir / "good.py", "f16f32");
  EXPECT_EQ(good["schema"], "croq-measurement-v1");
  EXPECT_EQ(good["verdict"], "PASS") << good.dump();
  EXPECT_EQ(good["verification"]["second_seed_passed"], true);
  EXPECT_EQ(good["verification"]["rechecked_after_timing"], true);
  EXPECT_EQ(good["verification"]["tolerance"]["base_tol"], 1.0);
  EXPECT_GT(good["timing"]["reps"].get<int>(), 0);
  EXPECT_EQ(good["problem"]["c_type"], "f32");
  EXPECT_EQ(good["candidate"]["sha256"].get<std::string>().size(), 64u);
  json wrong = run_runner(py, dir / "wrong.py", "bf16f32");
  EXPECT_EQ(wrong["verdict"], "VERIFY_FAIL");
  EXPECT_GT(wrong["verification"]["mismatches"].get<int>(), 0);
  EXPECT_FALSE(wrong["verification"]["worst"].empty());
  json sneaky = run_runner(py, dir / "sneaky.py", "f16f32");
  EXPECT_EQ(sneaky["verdict"], "LIBRARY_CALL_FORBIDDEN");
  EXPECT_NE(sneaky["reason"].get<std::string>().find("torch.matmul"), std::string::npos);
  json crash = run_runner(py, dir / "crash.py", "f16f32");
  EXPECT_EQ(crash["verdict"], "SEGFAULT");
}

TEST(PythonRunner, MeasuresAnAbiSharedObjectBuiltByCroq) {
  std::string py = python_with_torch();
  if (py.empty() || !find_executable("g++")) GTEST_SKIP() << "no python3 with torch, or no g++";
  TempDir root;
  ASSERT_EQ(run_croq(root.path(), args({"prepare"}, args(k_cpp_task, {"--pick", "1"}))).rc, 0);
  auto b = run_croq(root.path(), args({"build"}, args(k_cpp_task, {"--iter", "1"})));
  ASSERT_EQ(b.rc, 0) << b.err;
  json m = run_runner(py, root.path() / b.doc["outputs"][0].get<std::string>(), "f32");
  EXPECT_EQ(m["verdict"], "PASS") << m.dump();
  EXPECT_EQ(m["candidate"]["info"]["name"], "blocked");
}

}  // namespace
}  // namespace croq
