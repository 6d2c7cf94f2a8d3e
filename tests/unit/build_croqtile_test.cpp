// The croqtile two-phase pipeline with a fake choreo and a fake nvcc: which phases run, the
// commands, the .cu written next to the .co, the flags taken from the script's CFLAGS line, the
// ABI wrapper, and failures (choreo's exit code decides; its message is passed through intact).
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

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

const char* k_co =
    "// a matmul .co\n"
    "__co__ void matmul(global f16 [M, K] lhs, global f16 [N, K] rhs, global f32 [M, N] output) {\n"
    "  parallel {block_m, block_n} by [cdiv(M, 64), cdiv(N, 64)] : block { }\n"
    "}\n";

// The shape of what `choreo -gs -t cute` writes (lib/Target/GPU/cute_codegen.cpp).
std::string fake_script(const std::string& kernel_body) {
  return "#!/bin/bash\n"
         "if [ -z \"${CUTE_HOME}\" ]; then\n  export CUTE_HOME=/built/in\nfi\n"
         "rm -fr /tmp/choreo_x1\nmkdir -p /tmp/choreo_x1\n\n"
         "cat <<'EOF' > /tmp/choreo_x1/choreo.h\n// choreo runtime header\n#pragma once\n\nEOF\n\n"
         "cat <<'EOF' > /tmp/choreo_x1/choreo_cute.h\n#include \"choreo.h\"\n\nEOF\n\n"
         "cat <<'EOF' > /tmp/choreo_x1/__choreo_cute_k.cu\n" +
         kernel_body +
         "\nEOF\n\n"
         "nv_arch=sm_90a\n"
         "export CFLAGS=\"-gencode arch=compute_90a,code=sm_90a -std=c++17 -DCUTLASS_ENABLE_TENSOR_CORE_MMA=1 "
         "-D__CHOREO_TARGET_CUTE__ -Xcompiler -static-libstdc++ -lcuda -O3 -D__USE_CUDA_TYPE__ --expt-relaxed-constexpr "
         "${EXTRA_TARGET_CFLAGS} -I/src/dir -I${CUTE_HOME}/include -L${CUDA_HOME}/lib64 -lcuda\"\n"
         "export LD_LIBRARY_PATH=${CUDA_LIB}:${LD_LIBRARY_PATH}\n\n"
         "if [ \"$1\" == \"--execute\" ] || [ \"$#\" -eq 0 ]; then\n  ${NVCC} ${CFLAGS} /tmp/choreo_x1/__choreo_cute_k.cu -o a.out\nfi\n";
}

const char* k_kernel = "#include \"choreo.h\"\n__global__ void __choreo_device_matmul() {}\nvoid matmul() {}\nint main() {}\n";

struct ChoreoFixture {
  TempDir dir;
  Workspace ws{dir.path() / "ws"};
  FakeRunner runner;
  ScopedRunner scoped{&runner};
  CompilerVersions versions;
  BuildOptions options;
  TaskRef task = make_task("sm90_NVIDIA_H200", "croqtile", "matmul_f16f32_512x512x512", "m1");
  std::map<std::string, std::string> env;
  std::string script = fake_script(k_kernel);

  ChoreoFixture() {
    fs::path home = dir / "croqtile";
    ensure_dir(home / "build");
    atomic_write(home / "build" / "choreo", "#!/bin/sh\n", false);
    ensure_dir(dir / "cutlass" / "include" / "cute");
    env = {{"CHOREO_HOME", home.string()}, {"CUTE_HOME", (dir / "cutlass").string()},
           {"CROQ_NVCC", "/opt/cuda/bin/fake-nvcc"}, {"CUDA_HOME", "/opt/cuda"}};
    FakeRule choreo;
    choreo.program = "build/choreo";
    choreo.write_output = false;
    choreo.action = [this](const std::vector<std::string>& argv) {
      for (size_t i = 0; i + 1 < argv.size(); ++i) {
        if (argv[i] == "-o") atomic_write(argv[i + 1], script, false);
      }
    };
    FakeRule nvcc;
    nvcc.program = "fake-nvcc";
    nvcc.err = "ptxas info    : Compiling entry function '_Z22__choreo_device_matmulv' for 'sm_90a'\n"
               "ptxas info    : Function properties for _Z22__choreo_device_matmulv\n"
               "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
               "ptxas info    : Used 168 registers, used 1 barriers, 49152 bytes smem\n";
    runner.rules = {choreo, nvcc};
    ensure_dir(srcs());
    atomic_write(srcs() / "iter001_wgmma.co", k_co, false);
  }
  fs::path srcs() { return ws.kind_dir(task, ArtifactKind::srcs); }
  fs::path cu() { return srcs() / "iter001_wgmma.cu"; }
  json build() {
    Toolchain tc = Toolchain::from_env([this](const std::string& n) -> std::optional<std::string> {
      auto it = env.find(n);
      if (it == env.end()) return std::nullopt;
      return it->second;
    });
    return build_target(ws, locate_build_target(ws, task, "1"), options, tc, versions);
  }
};

TEST(BuildCroqtile, BothPhasesFromAFreshCo) {
  ChoreoFixture f;
  json doc = f.build();
  ASSERT_EQ(doc["verdict"], "OK") << doc.dump(2);
  // Phase 1: choreo's command, the .cu next to the .co, the script kept in cmd/.
  auto choreo = f.runner.calls_of("build/choreo");
  ASSERT_EQ(choreo.size(), 1u);
  EXPECT_EQ(std::vector<std::string>(choreo[0].begin() + 1, choreo[0].begin() + 5),
            (std::vector<std::string>{"-gs", "-t", "cute", "-arch=sm_90a"}));
  EXPECT_TRUE(ends_with(choreo[0][5], "iter001_wgmma.co"));
  EXPECT_EQ(read_file_or_throw(f.cu()), std::string(k_kernel) + "\n");
  fs::path result = f.ws.kind_dir(f.task, ArtifactKind::cmd) / "iter001_wgmma.cute.result";
  EXPECT_EQ(read_file_or_throw(result), f.script);
  json p1 = doc["phase1"];
  EXPECT_EQ(p1["ran"], true);
  EXPECT_EQ(p1["cu"], f.ws.display(f.cu()));
  fs::path headers = p1["headers_dir"].get<std::string>();
  EXPECT_TRUE(fs::exists(headers / "choreo.h"));
  EXPECT_TRUE(fs::exists(headers / "choreo_cute.h"));
  std::vector<std::string> flags = p1["nvcc_flags"];
  EXPECT_TRUE(has(flags, "-I" + f.env["CUTE_HOME"] + "/include"));  // ${CUTE_HOME} expanded
  EXPECT_TRUE(has(flags, "-L/opt/cuda/lib64"));
  EXPECT_TRUE(has(flags, "--expt-relaxed-constexpr"));
  EXPECT_TRUE(has(flags, "arch=compute_90a,code=sm_90a"));

  // Phase 2: the program with choreo's harness and the ABI-bound shared object.
  auto nvcc = f.runner.calls_of("fake-nvcc");
  ASSERT_EQ(nvcc.size(), 2u);
  std::vector<std::string> exe, abi;
  for (const auto& c : nvcc) (has(c, "--shared") ? abi : exe) = c;
  ASSERT_FALSE(exe.empty());
  ASSERT_FALSE(abi.empty());
  EXPECT_TRUE(has(exe, "-I" + headers.string()));
  EXPECT_TRUE(has(exe, "-static-libstdc++"));
  EXPECT_EQ(exe[exe.size() - 3], f.cu().string());
  EXPECT_FALSE(has(abi, "-static-libstdc++"));
  EXPECT_TRUE(ends_with(abi[abi.size() - 3], "iter001_wgmma.abi.cu"));
  fs::path bin = f.ws.kind_dir(f.task, ArtifactKind::bin);
  EXPECT_TRUE(fs::exists(bin / "iter001_wgmma"));
  EXPECT_TRUE(fs::exists(bin / "iter001_wgmma.so"));
  EXPECT_EQ(doc["abi"]["built"], true);
  EXPECT_EQ(doc["abi"]["function"], "matmul");
  EXPECT_EQ(doc["abi"]["b_layout"], "col");
  std::string wrapper = read_file_or_throw(f.ws.kind_dir(f.task, ArtifactKind::cmd) / "iter001_wgmma.abi.cu");
  EXPECT_NE(wrapper.find("#include \"" + fs::absolute(f.cu()).string() + "\""), std::string::npos);
  EXPECT_NE(wrapper.find("matmul(lhs, rhs, out);"), std::string::npos);
  EXPECT_NE(wrapper.find("p->c_type != CROQ_F32"), std::string::npos);
  EXPECT_EQ(doc["resources"][0]["registers"], 168);
  // The run script measures the ABI object and falls back to the legacy program.
  std::string run = read_file_or_throw(f.ws.kind_dir(f.task, ArtifactKind::cmd) / "run_iter001.sh");
  EXPECT_NE(run.find("--legacy"), std::string::npos);
  EXPECT_NE(run.find("iter001_wgmma.so"), std::string::npos);
}

TEST(BuildCroqtile, AKernelWithoutMainIsBuiltForTheAbiOnly) {
  ChoreoFixture f;
  f.script = fake_script("#include \"choreo.h\"\n__global__ void __choreo_device_matmul() {}\nvoid matmul() {}\n"
                         "// int main() in a comment is no main\n");
  json doc = f.build();
  ASSERT_EQ(doc["verdict"], "OK") << doc.dump(2);
  auto nvcc = f.runner.calls_of("fake-nvcc");
  ASSERT_EQ(nvcc.size(), 1u);  // the ABI object only: no program to link without a main
  EXPECT_TRUE(has(nvcc[0], "--shared"));
  fs::path bin = f.ws.kind_dir(f.task, ArtifactKind::bin);
  EXPECT_TRUE(fs::exists(bin / "iter001_wgmma.so"));
  EXPECT_FALSE(fs::exists(bin / "iter001_wgmma"));
  EXPECT_TRUE(doc["program"].is_null());
  EXPECT_NE(doc["program_reason"].get<std::string>().find("no main()"), std::string::npos);
  EXPECT_EQ(doc["abi"]["built"], true);
  // The ABI object is now the primary output: its resources and command are the build's.
  EXPECT_EQ(doc["resources"][0]["registers"], 168);
  EXPECT_NE(doc["command"].get<std::string>().find("--shared"), std::string::npos);
  // Its compile failure is the build's failure.
  ChoreoFixture g;
  g.script = f.script;
  g.runner.rules[1].exit_code = 1;
  g.runner.rules[1].err = "abi.cu(3): error: identifier \"x\" is undefined\n";
  FakeRule version;  // nvcc --version still answers (the build records the compiler's version)
  version.program = "fake-nvcc";
  version.version_only = true;
  version.out = "Cuda compilation tools, release 13.0";
  g.runner.rules.insert(g.runner.rules.begin(), version);
  json failed = g.build();
  EXPECT_EQ(failed["verdict"], "COMPILE_FAIL") << failed.dump(2);
}

TEST(BuildCroqtile, ChoreoMacrosReachNvccAndHandTuningIsReported) {
  ChoreoFixture f;
  f.options.choreo_flags = {"--stmatrix=false", "-DMATMUL_STAGES=3"};
  json doc = f.build();
  ASSERT_EQ(doc["verdict"], "OK") << doc.dump(2);
  auto choreo = f.runner.calls_of("build/choreo");
  ASSERT_EQ(choreo.size(), 1u);
  EXPECT_TRUE(has(choreo[0], "-DMATMUL_STAGES=3"));
  EXPECT_TRUE(has(choreo[0], "--stmatrix=false"));
  auto nvcc = f.runner.calls_of("fake-nvcc");
  ASSERT_EQ(nvcc.size(), 2u);
  for (const auto& c : nvcc) {
    EXPECT_TRUE(has(c, "-DMATMUL_STAGES=3"));  // the host code sees what the tileflow code saw
    EXPECT_FALSE(has(c, "--stmatrix=false"));  // choreo's own flags stay with choreo
  }
  EXPECT_EQ(doc["cu_finetuned"], false);
  // The .cu edited by hand and built as it is: reported as fine-tuned.
  atomic_write(f.cu(), read_file_or_throw(f.cu()) + "// __launch_bounds__ tried here\n", false);
  f.options.phase = "2";
  json tuned = f.build();
  ASSERT_EQ(tuned["verdict"], "OK") << tuned.dump(2);
  EXPECT_EQ(tuned["cu_finetuned"], true);
}

TEST(BuildCroqtile, UpToDateCuSkipsPhaseOneAndHitsTheCache) {
  ChoreoFixture f;
  ASSERT_EQ(f.build()["verdict"], "OK");
  json again = f.build();
  EXPECT_EQ(again["phase1"]["ran"], false);
  EXPECT_EQ(again["cached"], true);
  EXPECT_EQ(f.runner.calls_of("build/choreo").size(), 1u);
  EXPECT_EQ(f.runner.calls_of("fake-nvcc").size(), 2u);
}

TEST(BuildCroqtile, HandTunedCuIsBuiltAsItIsAndNeverOverwrittenSilently) {
  ChoreoFixture f;
  ASSERT_EQ(f.build()["verdict"], "OK");
  atomic_write(f.cu(), std::string(k_kernel) + "// __launch_bounds__ tuned by hand\n", false);
  json tuned = f.build();
  EXPECT_EQ(tuned["phase1"]["ran"], false);
  EXPECT_EQ(tuned["cached"], false);
  EXPECT_NE(read_file_or_throw(f.cu()).find("tuned by hand"), std::string::npos);
  // The .co changes too: croq cannot know which one to keep.
  atomic_write(f.srcs() / "iter001_wgmma.co", std::string(k_co) + "// stages 4\n", false);
  try {
    f.build();
    FAIL() << "no conflict";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::conflict);
    EXPECT_NE(e.hint().find("--phase 1 --force"), std::string::npos);
  }
  f.options.phase = "1";
  EXPECT_THROW(f.build(), Error);
  f.options.force = true;
  json regenerated = f.build();
  EXPECT_EQ(regenerated["verdict"], "OK");
  EXPECT_EQ(read_file_or_throw(f.cu()), std::string(k_kernel) + "\n");
}

TEST(BuildCroqtile, UneditedCuIsRegeneratedWhenTheCoChanges) {
  ChoreoFixture f;
  ASSERT_EQ(f.build()["verdict"], "OK");
  atomic_write(f.srcs() / "iter001_wgmma.co", std::string(k_co) + "// tile 128\n", false);
  f.script = fake_script(std::string(k_kernel) + "// regenerated\n");
  json doc = f.build();
  EXPECT_EQ(doc["phase1"]["ran"], true);
  EXPECT_NE(read_file_or_throw(f.cu()).find("// regenerated"), std::string::npos);
}

TEST(BuildCroqtile, PhaseOneAloneReportsTheCo2CuFields) {
  ChoreoFixture f;
  f.options.phase = "1";
  json doc = f.build();
  EXPECT_EQ(doc["verdict"], "OK");
  EXPECT_TRUE(f.runner.calls_of("fake-nvcc").empty());
  for (const char* k : {"co", "cu", "result", "nvcc_flags", "headers_dir"}) EXPECT_TRUE(doc.contains(k)) << k;
  EXPECT_TRUE(fs::exists(f.cu()));
}

TEST(BuildCroqtile, ChoreoFailureIsDecidedByItsExitCodeAndItsMessageIsKept) {
  ChoreoFixture f;
  std::string message =
      "iter001_wgmma.co:3:5: error: WGMMA requires SM90A; use mma.op for sm_86\n"
      "  mma.row.row acc, a, b;\n"
      "  ^~~~~~~~~~~\n";
  f.runner.rules[0].exit_code = 1;
  f.runner.rules[0].err = message;  // the output file is still written (see the action)
  json doc = f.build();
  EXPECT_EQ(doc["verdict"], "COMPILE_FAIL");
  EXPECT_EQ(doc["choreo_message"], message);
  EXPECT_NE(doc["errors"][0].get<std::string>().find("WGMMA requires SM90A"), std::string::npos);
  EXPECT_FALSE(fs::exists(f.cu()));
  EXPECT_FALSE(fs::exists(f.ws.kind_dir(f.task, ArtifactKind::cmd) / "iter001_wgmma.cute.result"));
  EXPECT_TRUE(f.runner.calls_of("fake-nvcc").empty());
}

TEST(BuildCroqtile, MissingChoreoOrCuteHomeIsAClearError) {
  {
    ChoreoFixture f;
    f.env.erase("CHOREO_HOME");
    try {
      f.build();
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::not_found);
      EXPECT_NE(std::string(e.what()).find("CHOREO_HOME"), std::string::npos);
      EXPECT_NE(e.hint().find("croq env validate --dsl croqtile"), std::string::npos);
    }
  }
  {
    ChoreoFixture f;
    f.env["CUTE_HOME"] = (f.dir / "nowhere").string();
    try {
      f.build();
      FAIL();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("CUTE_HOME"), std::string::npos);
    }
  }
}

TEST(BuildCroqtile, ForbiddenCallInTheCoStopsBeforeChoreo) {
  ChoreoFixture f;
  atomic_write(f.srcs() / "iter001_wgmma.co", std::string(k_co) + "void host() { cublasSgemm(h); }\n", false);
  json doc = f.build();
  EXPECT_EQ(doc["verdict"], "LIBRARY_CALL_FORBIDDEN");
  EXPECT_TRUE(f.runner.calls.empty());
}

}  // namespace
}  // namespace croq
