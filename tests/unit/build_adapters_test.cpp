// The build pipeline of every dsl with a fake compiler (tests/unit/build_fake_runner.hpp): the
// command lines each adapter constructs, cache hits and misses, failures as verdicts, purity
// before compiling, and the files every build leaves (scripts, log, JSON).
#include <gtest/gtest.h>

#include <algorithm>

#include "build_fake_runner.hpp"
#include "croq/build/builder.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

using test::FakeRule;
using test::FakeRunner;
using test::ScopedRunner;
using test::TempDir;

std::string data(const std::string& name) { return read_file_or_throw(std::string(CROQ_TEST_DATA_DIR) + "/" + name); }

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// Index of `s` in v, or -1.
int pos(const std::vector<std::string>& v, const std::string& s) {
  auto it = std::find(v.begin(), v.end(), s);
  return it == v.end() ? -1 : int(it - v.begin());
}

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

struct Fixture {
  TempDir dir;
  Workspace ws{dir.path()};
  FakeRunner runner;
  ScopedRunner scoped{&runner};
  CompilerVersions versions;  // memory only
  BuildOptions options;

  TaskRef task(const std::string& dsl, const std::string& gpu = "sm90_NVIDIA_H200") {
    return make_task(gpu, dsl, "matmul_f16f32_256x256x256", "m1");
  }
  fs::path write_source(const TaskRef& t, const std::string& name, const std::string& text) {
    fs::path p = ws.kind_dir(t, ArtifactKind::srcs) / name;
    ensure_dir(p.parent_path());
    atomic_write(p, text, false);
    return p;
  }
  json build(const TaskRef& t, const std::string& iter, const Toolchain& tc) {
    return build_target(ws, locate_build_target(ws, t, iter), options, tc, versions);
  }
};

const char* k_pure_cu = "#include <croq/kernel_abi.h>\n__global__ void k(float* c) { c[0] = 1.f; }\n";

FakeRule nvcc_rule(int exit_code = 0, std::string err = {}) {
  FakeRule r;
  r.program = "fake-nvcc";
  r.exit_code = exit_code;
  r.err = err.empty() ? data("build/nvcc_wmma_tc_minblocks2_spills_sm90a.txt") : err;
  r.out = "";
  return r;
}

TEST(BuildCuda, CommandHasTheContractFlagsAndTheOutputGoesToBin) {
  Fixture f;
  f.runner.rules = {nvcc_rule()};
  TaskRef t = f.task("cuda");
  f.write_source(t, "iter001_naive.cu", k_pure_cu);
  Toolchain tc = Toolchain::from_env(env_of({{"CROQ_NVCC", "/opt/fake/fake-nvcc"}}));
  json doc = f.build(t, "1", tc);
  EXPECT_EQ(doc["verdict"], "OK");
  EXPECT_EQ(doc["cached"], false);
  auto compiles = f.runner.calls_of("fake-nvcc");
  ASSERT_EQ(compiles.size(), 1u);
  const auto& a = compiles[0];
  EXPECT_EQ(a[0], "/opt/fake/fake-nvcc");
  for (const char* flag : {"-O3", "-std=c++17", "--shared", "-gencode=arch=compute_90a,code=sm_90a"}) {
    EXPECT_TRUE(has(a, flag)) << flag;
  }
  EXPECT_EQ(a[pos(a, "-Xcompiler") + 1], "-fPIC");
  EXPECT_EQ(a[pos(a, "-Xptxas") + 1], "-v");
  bool include_flag = false;
  for (const auto& w : a) include_flag = include_flag || (w.rfind("-I", 0) == 0 && ends_with(w, "/include") && fs::exists(w.substr(2) + "/croq/kernel_abi.h"));
  EXPECT_TRUE(include_flag);
  fs::path so = f.ws.kind_dir(t, ArtifactKind::bin) / "iter001_naive.so";
  EXPECT_TRUE(fs::exists(so));
  EXPECT_EQ(doc["outputs"][0], f.ws.display(so));
  // The reported command writes straight to bin/, as a person would type it.
  EXPECT_NE(doc["command"].get<std::string>().find(so.string()), std::string::npos);
  EXPECT_EQ(doc["resources"].size(), 12u);
  EXPECT_EQ(doc["resources"][0]["registers"].is_number(), true);
  // Files every build leaves.
  fs::path cmd = f.ws.kind_dir(t, ArtifactKind::cmd), perf = f.ws.kind_dir(t, ArtifactKind::perf);
  EXPECT_TRUE(fs::exists(cmd / "build_iter001.sh"));
  EXPECT_TRUE(fs::exists(cmd / "run_iter001.sh"));
  EXPECT_TRUE(fs::exists(perf / "build_iter001.txt"));
  EXPECT_TRUE(fs::exists(perf / "build_iter001_naive.json"));
  std::string script = read_file_or_throw(cmd / "build_iter001.sh");
  EXPECT_NE(script.find("-gencode=arch=compute_90a,code=sm_90a"), std::string::npos);
  EXPECT_NE(script.find("iter001_naive.so"), std::string::npos);
  std::string run = read_file_or_throw(cmd / "run_iter001.sh");
  EXPECT_NE(run.find(" measure "), std::string::npos);
  // The iteration by its name (croq measure finds bin/<kernel>.so): never --iter and --candidate
  // together, which measure refuses (issue 23; tests/cli/suggestions_cli_test.cpp runs the script).
  EXPECT_NE(run.find("--iter iter001_naive"), std::string::npos);
  EXPECT_EQ(run.find("--candidate"), std::string::npos);
  EXPECT_NE(read_file_or_throw(perf / "build_iter001.txt").find("Used 128 registers"), std::string::npos);
  auto saved = try_parse_json(read_file_or_throw(perf / "build_iter001_naive.json"));
  ASSERT_TRUE(saved);
  EXPECT_EQ((*saved)["verdict"], "OK");
}

TEST(BuildCuda, UnchangedSourceIsACacheHitAndAHeaderEditIsAMiss) {
  Fixture f;
  f.runner.rules = {nvcc_rule()};
  TaskRef t = f.task("cuda");
  fs::path src = f.write_source(t, "iter002_tiled.cu", std::string("#include \"params.h\"\n") + k_pure_cu);
  f.write_source(t, "params.h", "#define BM 64\n");
  Toolchain tc = Toolchain::from_env(env_of({{"CROQ_NVCC", "/opt/fake/fake-nvcc"}}));
  json first = f.build(t, "iter002", tc);
  ASSERT_EQ(first["verdict"], "OK");
  fs::path so = f.ws.kind_dir(t, ArtifactKind::bin) / "iter002_tiled.so";
  fs::remove(so);
  json second = f.build(t, "iter002_tiled", tc);
  EXPECT_EQ(second["cached"], true);
  EXPECT_EQ(second["cache_key"], first["cache_key"]);
  EXPECT_EQ(f.runner.calls_of("fake-nvcc").size(), 1u);  // no second compile
  EXPECT_TRUE(fs::exists(so));                            // restored from the cache
  EXPECT_EQ(second["resources"].size(), 12u);             // from the cached log
  f.write_source(t, "params.h", "#define BM 128\n");
  json third = f.build(t, "2", tc);
  EXPECT_EQ(third["cached"], false);
  EXPECT_NE(third["cache_key"], first["cache_key"]);
  EXPECT_EQ(f.runner.calls_of("fake-nvcc").size(), 2u);
  f.options.flags = {"-DEXTRA=1"};
  json fourth = f.build(t, "2", tc);
  EXPECT_EQ(fourth["cached"], false);
  EXPECT_TRUE(has(f.runner.calls_of("fake-nvcc").back(), "-DEXTRA=1"));
  f.options.flags.clear();
  f.options.use_cache = false;
  f.build(t, "2", tc);
  EXPECT_EQ(f.runner.calls_of("fake-nvcc").size(), 4u);
}

TEST(BuildCuda, ArchComesFromTheDeviceKeyOrTheFlag) {
  Fixture f;
  f.runner.rules = {nvcc_rule()};
  Toolchain tc = Toolchain::from_env(env_of({{"CROQ_NVCC", "/opt/fake/fake-nvcc"}}));
  TaskRef a100 = f.task("cuda", "sm80_NVIDIA_A100-SXM4-80GB");
  f.write_source(a100, "iter001_x.cu", k_pure_cu);
  f.build(a100, "1", tc);
  EXPECT_TRUE(has(f.runner.calls_of("fake-nvcc").back(), "-gencode=arch=compute_80,code=sm_80"));
  f.options.arch = "sm89";
  f.build(a100, "1", tc);
  EXPECT_TRUE(has(f.runner.calls_of("fake-nvcc").back(), "-gencode=arch=compute_89,code=sm_89"));
  TaskRef cpu = f.task("cuda", "cpu_x86_64");
  f.write_source(cpu, "iter001_x.cu", k_pure_cu);
  f.options.arch.clear();
  EXPECT_THROW(f.build(cpu, "1", tc), Error);
}

TEST(BuildCuda, CompileFailureIsDataWithTheFirstErrorLinesAndIsNotCached) {
  Fixture f;
  FakeRule version = nvcc_rule();
  version.version_only = true;
  f.runner.rules = {version, nvcc_rule(2, data("build/nvcc_compile_error.txt"))};
  f.runner.rules[1].write_output = false;
  TaskRef t = f.task("cuda");
  f.write_source(t, "iter003_broken.cu", k_pure_cu);
  Toolchain tc = Toolchain::from_env(env_of({{"CROQ_NVCC", "/opt/fake/fake-nvcc"}}));
  json doc = f.build(t, "3", tc);
  EXPECT_EQ(doc["verdict"], "COMPILE_FAIL");
  ASSERT_FALSE(doc["errors"].empty());
  EXPECT_NE(doc["errors"][0].get<std::string>().find("undefined_symbol"), std::string::npos);
  EXPECT_TRUE(doc["outputs"].empty());
  EXPECT_FALSE(fs::exists(f.ws.kind_dir(t, ArtifactKind::bin) / "iter003_broken.so"));
  EXPECT_NE(read_file_or_throw(f.ws.kind_dir(t, ArtifactKind::perf) / "build_iter003.txt").find("expected a \";\""),
            std::string::npos);
  f.build(t, "3", tc);
  EXPECT_EQ(f.runner.calls_of("fake-nvcc").size(), 2u);  // failures are compiled again
}

TEST(BuildCuda, ForbiddenLibraryIsRefusedBeforeTheCompilerStarts) {
  Fixture f;
  f.runner.rules = {nvcc_rule()};
  TaskRef t = f.task("cuda");
  f.write_source(t, "iter004_cheat.cu", "#include \"helper.h\"\n__global__ void k() {}\n");
  f.write_source(t, "helper.h", "#include <cublasLt.h>\n");
  Toolchain tc = Toolchain::from_env(env_of({{"CROQ_NVCC", "/opt/fake/fake-nvcc"}}));
  json doc = f.build(t, "4", tc);
  EXPECT_EQ(doc["verdict"], "LIBRARY_CALL_FORBIDDEN");
  ASSERT_EQ(doc["purity"].size(), 1u);
  EXPECT_NE(doc["purity"][0]["file"].get<std::string>().find("helper.h"), std::string::npos);
  EXPECT_TRUE(f.runner.calls.empty());  // not even the version query
}

TEST(BuildCuda, MissingCompilerIsAnErrorWithAFix) {
  Fixture f;
  FakeRule missing;
  missing.program = "fake-nvcc";
  missing.not_found = true;
  f.runner.rules = {missing};
  TaskRef t = f.task("cuda");
  f.write_source(t, "iter001_x.cu", k_pure_cu);
  Toolchain tc = Toolchain::from_env(env_of({{"CROQ_NVCC", "/opt/fake/fake-nvcc"}}));
  try {
    f.build(t, "1", tc);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::not_found);
    EXPECT_NE(e.hint().find("CUDA_HOME"), std::string::npos);
  }
}

TEST(BuildTarget, SourcesAreFoundByIdAndAmbiguityIsRefused) {
  Fixture f;
  TaskRef t = f.task("cuda");
  f.write_source(t, "iter005_aa.cu", k_pure_cu);
  EXPECT_EQ(locate_build_target(f.ws, t, "5").kernel, "iter005_aa");
  EXPECT_EQ(locate_build_target(f.ws, t, "iter005").id, "iter005");
  f.write_source(t, "iter005_bb.cu", k_pure_cu);
  EXPECT_THROW(locate_build_target(f.ws, t, "iter005"), Error);
  EXPECT_EQ(locate_build_target(f.ws, t, "iter005_bb").kernel, "iter005_bb");
  f.write_source(t, "attemptAAAB_retry.cu", k_pure_cu);
  BuildTarget a = locate_build_target(f.ws, t, "attemptAAAB");
  EXPECT_EQ(a.id, "attemptAAAB");
  EXPECT_EQ(a.kernel, "attemptAAAB_retry");
  try {
    locate_build_target(f.ws, t, "9");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::not_found);
  }
}

TEST(BuildCpp, CommandIsGxxWithNativeArchAndTheAbiInclude) {
  Fixture f;
  FakeRule gxx;
  gxx.program = "fake-g++";
  gxx.out = "g++ (Debian 12.2.0-14) 12.2.0";
  f.runner.rules = {gxx};
  TaskRef t = make_task("cpu_x86_64", "cpp", "matmul_f32_128x128x128", "m1");
  f.write_source(t, "iter001_blocked.cpp", "#include <croq/kernel_abi.h>\n");
  Toolchain tc = Toolchain::from_env(env_of({{"CROQ_CXX", "/opt/fake/fake-g++"}}));
  json doc = f.build(t, "1", tc);
  EXPECT_EQ(doc["verdict"], "OK");
  auto a = f.runner.calls_of("fake-g++").at(0);
  for (const char* flag : {"-O3", "-march=native", "-std=c++20", "-shared", "-fPIC"}) EXPECT_TRUE(has(a, flag)) << flag;
  EXPECT_EQ(a[a.size() - 2], "-o");
  EXPECT_TRUE(fs::exists(f.ws.kind_dir(t, ArtifactKind::bin) / "iter001_blocked.so"));
  EXPECT_TRUE(doc["resources"].empty());
}

TEST(BuildTriton, CheckRunsInPythonAndVerdictsFollowItsExitCode) {
  Fixture f;
  FakeRule py;
  py.program = "fake-python";
  py.write_output = false;
  py.out = "{\"ok\": true, \"stage\": \"done\", \"errors\": [], \"findings\": []}";
  f.runner.rules = {py};
  TaskRef t = f.task("triton");
  fs::path src = f.write_source(t, "iter001_tiled.py", "import triton\ndef croq_matmul(problem, a, b, c):\n    pass\n");
  Toolchain tc = Toolchain::from_env(env_of({{"CROQ_PYTHON", "/opt/fake/fake-python"}}));
  json ok = f.build(t, "1", tc);
  EXPECT_EQ(ok["verdict"], "OK");
  auto call = f.runner.calls_of("fake-python").at(0);
  EXPECT_TRUE(ends_with(call[1], "croq_runner.py"));
  EXPECT_EQ(call[2], "--check");
  EXPECT_EQ(call[3], src.string());
  EXPECT_EQ(ok["outputs"][0], f.ws.display(src));
  json again = f.build(t, "1", tc);
  EXPECT_EQ(again["cached"], true);
  EXPECT_EQ(f.runner.calls_of("fake-python").size(), 1u);

  f.runner.rules[0].exit_code = 3;
  f.runner.rules[0].out = "{\"ok\": false, \"stage\": \"purity\", \"errors\": [\"k.py:3: forbidden_call `@`\"], "
                          "\"findings\": [{\"line\": 3, \"what\": \"@\"}]}";
  f.write_source(t, "iter002_cheat.py", "def croq_matmul(problem, a, b, c):\n    c.copy_(a @ b)\n");
  json forbidden = f.build(t, "2", tc);
  EXPECT_EQ(forbidden["verdict"], "LIBRARY_CALL_FORBIDDEN");
  EXPECT_EQ(forbidden["errors"][0], "k.py:3: forbidden_call `@`");

  f.runner.rules[0].exit_code = 2;
  f.runner.rules[0].out = "{\"ok\": false, \"stage\": \"import\", \"errors\": [\"ModuleNotFoundError: No module named 'triton'\"]}";
  f.write_source(t, "iter003_x.py", "import triton\n");
  json failed = f.build(t, "3", tc);
  EXPECT_EQ(failed["verdict"], "COMPILE_FAIL");
  EXPECT_NE(failed["errors"][0].get<std::string>().find("triton"), std::string::npos);
}

TEST(BuildTriton, SourcePurityIsCheckedBeforePythonStarts) {
  Fixture f;
  TaskRef t = f.task("triton");
  f.write_source(t, "iter001_cheat.py", "import torch\ndef croq_matmul(problem, a, b, c):\n    c.copy_(torch.mm(a, b))\n");
  Toolchain tc = Toolchain::from_env(env_of({{"CROQ_PYTHON", "/opt/fake/fake-python"}}));
  json doc = f.build(t, "1", tc);
  EXPECT_EQ(doc["verdict"], "LIBRARY_CALL_FORBIDDEN");
  EXPECT_TRUE(f.runner.calls.empty());
}

}  // namespace
}  // namespace croq
