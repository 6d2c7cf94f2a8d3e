// croq env validate's checks, replayed on made-up machines (fake processes and files).
#include <gtest/gtest.h>

#include "build_fake_runner.hpp"
#include "croq/build/choreo_toolchain.hpp"
#include "croq/build/env_check.hpp"

namespace croq {
namespace {

using test::FakeRule;
using test::FakeRunner;
using test::ScopedRunner;

struct Machine {
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> files;
  bool root = false;
  EnvProbe probe() const {
    EnvProbe p;
    auto e = env;
    p.env = [e](const std::string& n) -> std::optional<std::string> {
      auto it = e.find(n);
      if (it == e.end()) return std::nullopt;
      return it->second;
    };
    auto f = files;
    p.read = [f](const fs::path& path) -> std::optional<std::string> {
      auto it = f.find(path.string());
      if (it == f.end()) return std::nullopt;
      return it->second;
    };
    p.exists = [f](const fs::path& path) { return f.count(path.string()) > 0; };
    p.is_root = root;
    return p;
  }
};

FakeRule rule(const std::string& program, int rc, const std::string& out) {
  FakeRule r;
  r.program = program;
  r.exit_code = rc;
  r.out = out;
  r.write_output = false;
  return r;
}

const char* k_smi = "0, NVIDIA H200, GPU-1234, 9.0, 580.65.06, 00000000:18:00.0, 143771, 0, 0, 30, 345, 1980\n";

std::set<std::string> checks_of(const json& list) {
  std::set<std::string> out;
  for (const auto& e : list) out.insert(e.value("check", ""));
  return out;
}

TEST(BuildEnv, HealthyGpuMachinePassesForCuda) {
  FakeRunner runner;
  ScopedRunner scoped(&runner);
  runner.rules = {rule("nvcc", 0, "Cuda compilation tools, release 13.0, V13.0.88\n"), rule("nvidia-smi", 0, k_smi),
                  rule("ncu", 0, "NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2025.3.0.0\n")};
  Machine m;
  m.env = {{"CROQ_NVCC", "/fake/nvcc"}, {"CROQ_NCU", "/fake/ncu"}};
  m.files = {{"/proc/sys/kernel/perf_event_paranoid", "2\n"},
             {"/proc/driver/nvidia/params", "ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 0\n"}};
  json doc = validate_environment("cuda", m.probe());
  EXPECT_EQ(doc["pass"], true) << doc.dump(2);
  EXPECT_EQ(doc["dsl"], "cuda");
  EXPECT_EQ(doc["checks"]["nvcc"]["version"], "13.0");
  EXPECT_EQ(doc["checks"]["gpus"][0]["key"], "sm90_NVIDIA_H200");
  EXPECT_EQ(doc["checks"]["counters"]["permitted"], true);
}

TEST(BuildEnv, EveryErrorCarriesItsFix) {
  FakeRunner runner;
  ScopedRunner scoped(&runner);
  FakeRule nvcc = rule("nvcc", 0, "");
  nvcc.not_found = true;
  runner.rules = {nvcc, rule("nvidia-smi", 9, ""), rule("ncu", 127, "")};
  Machine m;
  m.env = {{"CROQ_NVCC", "/fake/nvcc"}, {"CROQ_NCU", "/fake/ncu"}};
  m.files = {{"/proc/driver/nvidia/params", "RmProfilingAdminOnly: 1\n"}};
  json doc = validate_environment("cuda", m.probe());
  EXPECT_EQ(doc["pass"], false);
  EXPECT_EQ(checks_of(doc["errors"]), (std::set<std::string>{"nvcc", "gpu", "ncu", "gpu_counters"}));
  for (const auto& e : doc["errors"]) EXPECT_FALSE(e.value("fix", "").empty()) << e.dump();
  // As root the counters are readable anyway.
  m.root = true;
  json as_root = validate_environment("cuda", m.probe());
  EXPECT_EQ(checks_of(as_root["errors"]).count("gpu_counters"), 0u);
}

TEST(BuildEnv, CroqtileNeedsChoreoAndCuteHeaders) {
  FakeRunner runner;
  ScopedRunner scoped(&runner);
  runner.rules = {rule("nvcc", 0, "release 13.0"), rule("nvidia-smi", 0, k_smi), rule("ncu", 0, "Version 2025.3"),
                  rule("build/choreo", 0, "Usage: choreo [options] file...\n")};
  Machine m;
  m.env = {{"CROQ_NVCC", "/fake/nvcc"}, {"CROQ_NCU", "/fake/ncu"}};
  json missing = validate_environment("croqtile", m.probe());
  EXPECT_EQ(missing["pass"], false);
  EXPECT_EQ(checks_of(missing["errors"]), (std::set<std::string>{"CHOREO_HOME", "CUTE_HOME"}));

  m.env["CHOREO_HOME"] = "/opt/croqtile";
  m.files = {{"/opt/croqtile", ""},
             {"/opt/croqtile/runtime/choreo.h", ""},
             {"/opt/croqtile/extern/cutlass/include/cute/tensor.hpp", ""},
             {"/opt/croqtile/extern/cutlass/include/cutlass/cutlass.h", ""},
             {"/opt/croqtile/extern/cutlass/include/cutlass/version.h",
              "#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 2\n#define CUTLASS_PATCH 1\n"}};
  json ok = validate_environment("croqtile", m.probe());
  EXPECT_EQ(ok["pass"], true) << ok.dump(2);
  EXPECT_EQ(ok["checks"]["croqtile"]["cutlass_version"], "4.2.1");
  EXPECT_EQ(ok["checks"]["croqtile"]["choreo_help"], "Usage: choreo [options] file...");
  EXPECT_EQ(ok["checks"]["croqtile"]["found_by"], "CHOREO_HOME");
  // The missing compiler's fix names the installer.
  bool names_setup = false;
  for (const auto& e : missing["errors"]) names_setup = names_setup || e["fix"].get<std::string>().find("--with-choreo") != std::string::npos;
  EXPECT_TRUE(names_setup) << missing.dump(2);
}

TEST(BuildEnv, CroqtileWarnsWhenTheToolchainIsNotThePinnedCommit) {
  FakeRunner runner;
  ScopedRunner scoped(&runner);
  runner.rules = {rule("nvcc", 0, "release 13.0"), rule("nvidia-smi", 0, k_smi), rule("ncu", 0, "Version 2025.3"),
                  rule("build/choreo", 0, "Usage: choreo [options] file...\n")};
  Machine m;
  m.env = {{"CROQ_NVCC", "/fake/nvcc"}, {"CROQ_NCU", "/fake/ncu"}, {"CHOREO_HOME", "/tc"}};
  m.files = {{"/tc", ""},
             {"/tc/runtime/choreo.h", ""},
             {"/tc/toolchain.json", "{\"choreo_commit\": \"1111111111112222222222\", \"cutlass_tag\": \"v4.2.1\"}"},
             {"/tc/extern/cutlass/include/cute/tensor.hpp", ""},
             {"/tc/extern/cutlass/include/cutlass/cutlass.h", ""},
             {"/tc/extern/cutlass/include/cutlass/version.h",
              "#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 2\n#define CUTLASS_PATCH 1\n"}};
  json other = validate_environment("croqtile", m.probe());
  EXPECT_EQ(other["pass"], true) << other.dump(2);
  EXPECT_EQ(checks_of(other["warnings"]).count("choreo_commit"), 1u) << other.dump(2);
  EXPECT_EQ(other["checks"]["croqtile"]["toolchain_commit"], "1111111111112222222222");
  auto pin = choreo_pin();
  ASSERT_TRUE(pin);
  EXPECT_EQ(other["checks"]["croqtile"]["pinned_commit"], pin->commit);
  m.files["/tc/toolchain.json"] = "{\"choreo_commit\": \"" + pin->commit + "\"}";
  json same = validate_environment("croqtile", m.probe());
  EXPECT_EQ(checks_of(same["warnings"]).count("choreo_commit"), 0u) << same.dump(2);
}

TEST(BuildEnv, TritonReportsTheImportThatFailed) {
  FakeRunner runner;
  ScopedRunner scoped(&runner);
  runner.rules = {rule("nvcc", 0, "release 13.0"), rule("nvidia-smi", 0, k_smi), rule("ncu", 0, "Version 2025.3"),
                  rule("fake-python", 0, "{\"torch\": \"2.9.0\", \"cuda\": true, \"triton_error\": \"ModuleNotFoundError: No module named 'triton'\"}")};
  Machine m;
  m.env = {{"CROQ_NVCC", "/fake/nvcc"}, {"CROQ_NCU", "/fake/ncu"}, {"CROQ_PYTHON", "/fake/fake-python"}};
  json doc = validate_environment("triton", m.probe());
  EXPECT_EQ(doc["pass"], false);
  EXPECT_EQ(checks_of(doc["errors"]), (std::set<std::string>{"triton"}));
  EXPECT_EQ(doc["checks"]["triton"]["torch"], "2.9.0");
}

TEST(BuildEnv, CppNeedsNoGpuButOpenBlas) {
  FakeRunner runner;
  ScopedRunner scoped(&runner);
  FakeRule nvcc = rule("nvcc", 0, "");
  nvcc.not_found = true;
  runner.rules = {nvcc, rule("nvidia-smi", 9, ""), rule("fake-g++", 0, "g++ (Debian 12.2.0-14) 12.2.0\n")};
  Machine m;
  m.env = {{"CROQ_NVCC", "/fake/nvcc"}, {"CROQ_CXX", "/fake/fake-g++"}};
  json without = validate_environment("cpp", m.probe());
  EXPECT_EQ(without["pass"], false);
  EXPECT_EQ(checks_of(without["errors"]), (std::set<std::string>{"openblas"}));
  EXPECT_EQ(checks_of(without["warnings"]).count("gpu"), 0u);  // cpp needs no GPU: its absence is no warning
  m.files = {{"/usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h", ""},
             {"/usr/lib/x86_64-linux-gnu/libopenblas.so", ""}};
  json with = validate_environment("cpp", m.probe());
  EXPECT_EQ(with["pass"], true) << with.dump(2);
}

}  // namespace
}  // namespace croq
