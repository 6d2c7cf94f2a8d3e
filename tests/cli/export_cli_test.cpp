// croq export end to end on the cpp dsl (no GPU): tasks whose records are made by the real verbs
// (task init, build, store-round), exported into one library that a C program (shared and static,
// the latter through the CMake package), a Python script (ctypes) and croq's own harness (croq
// measure of the library as a candidate) call at the tuned shapes and at shapes no kernel was tuned
// for. Two of the kernels are two configurations of one source whose template caches its
// configuration in a function-local static: both give correct results only because each kernel's
// symbols are its own.
#include <gtest/gtest.h>

#include <cmath>

#include "croq/util/elf.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/process.hpp"
#include "croq/util/text.hpp"
#include "support/test_support.hpp"

using croq::json;
using croq::test::CroqRun;
using croq::test::run_croq;
using croq::test::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string k_gpu = "cpu_test";
const std::string k_model = "byhand";

struct Kernel {
  std::string key, kernel, source, defines;
  double tflops;
  int round;
};

// tiled: the bundled cpp_tiled family source; cached: tests/data/export/cached_step.cpp.
std::string source_text(const Kernel& k) {
  const std::string file = k.source == "tiled" ? std::string(CROQ_SOURCE_DIR) + "/kernels/cpp/matmul/tiled/tiled_gemm.cpp"
                                                : std::string(CROQ_TEST_DATA_DIR) + "/export/cached_step.cpp";
  return k.defines + croq::read_file_or_throw(file);
}

std::vector<std::string> task(const std::string& key) {
  return {"--gpu", k_gpu, "--dsl", "cpp", "--shape-key", key, "--model", k_model};
}

std::vector<std::string> with(std::vector<std::string> args, const std::string& key) {
  auto t = task(key);
  args.insert(args.end(), t.begin(), t.end());
  return args;
}

croq::ProcessResult run(const std::vector<std::string>& argv, const fs::path& cwd = {}) {
  croq::ProcessSpec spec;
  spec.argv = argv;
  if (!cwd.empty()) spec.cwd = cwd;
  spec.timeout = std::chrono::milliseconds(300000);
  croq::SystemProcessRunner runner;
  return runner.run(spec);
}

// The kernels of the four tasks; the 256x256x128 task has a better KEEP in round 1 and a DISCARD
// after it: the export takes the best KEEP.
const std::vector<Kernel>& kernels() {
  static const std::vector<Kernel> k = {
      {"matmul_f32_64x48x40", "iter001_tiled_small", "tiled",
       "#define CROQ_BM 16\n#define CROQ_BN 64\n#define CROQ_BK 32\n#define CROQ_MR 2\n#define CROQ_NR 16\n", 1.5, 0},
      {"matmul_f32_256x256x128", "iter001_tiled_a", "tiled",
       "#define CROQ_BM 32\n#define CROQ_BN 64\n#define CROQ_BK 64\n#define CROQ_MR 1\n#define CROQ_NR 16\n", 2.0, 0},
      {"matmul_f32_256x256x128", "iter002_tiled_b", "tiled",
       "#define CROQ_BM 64\n#define CROQ_BN 128\n#define CROQ_BK 64\n#define CROQ_MR 4\n#define CROQ_NR 16\n"
       "#define CROQ_THREADS 2\n",
       3.0, 1},
      {"matmul_f32_256x256x128", "iter003_naive", "cached", "#define STEP 2\n", 2.5, 2},
      {"matmul_f32_100x100x100", "iter001_step3", "cached", "#define STEP 3\n", 1.0, 0},
      {"matmul_f32_33x17x9", "iter001_step8", "cached", "#define STEP 8\n", 0.5, 0},
  };
  return k;
}

// The workspace and one export of it, made once for every test of this file.
struct Fixture {
  TempDir dir;
  CroqRun exported;
  fs::path out;
  std::string setup_error;

  Fixture() {
    for (const Kernel& k : kernels()) {
      if (k.round == 0) {
        CroqRun init = run_croq(dir.path(), with({"task", "init"}, k.key));
        if (init.rc != 0) setup_error += "task init: " + init.err;
      }
      const fs::path src = dir.path() / "tuning" / k_gpu / "cpp" / "srcs" / k.key / k_model / (k.kernel + ".cpp");
      fs::create_directories(src.parent_path());
      croq::atomic_write(src, source_text(k), false);
      CroqRun build = run_croq(dir.path(), with({"build", "--iter", k.kernel}, k.key));
      if (build.rc != 0) setup_error += "build " + k.kernel + ": " + build.out + build.err;
      const std::string decision = k.kernel == "iter003_naive" ? "DISCARD" : "KEEP";
      CroqRun store = run_croq(
          dir.path(), with({"store-round", "--iter", k.kernel.substr(0, 7), "--kernel", k.kernel, "--decision", decision,
                            "--tflops", std::to_string(k.tflops), "--round", std::to_string(k.round), "--bottleneck",
                            k.round == 0 ? "n/a" : "compute_bound", "--idea", "config " + k.kernel},
                           k.key));
      if (store.rc != 0) setup_error += "store " + k.kernel + ": " + store.err;
    }
    out = dir.path() / "exported";
    exported = run_croq(dir.path(), {"export", "--all", "--out", out.string(), "--name", "mm"}, {}, {},
                        std::chrono::milliseconds(600000));
  }
};

// The C program: for each shape on its command line, C = A * B through mm_matmul against a plain
// loop; prints "<m>x<n>x<k> <kernel chosen> <max abs error>" and exits 1 if an error is too large.
const char* const k_c_program = R"(#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "mm.h"

int main(int argc, char** argv) {
  int bad = 0;
  for (int s = 1; s < argc; ++s) {
    long long m, n, k;
    if (sscanf(argv[s], "%lldx%lldx%lld", &m, &n, &k) != 3) return 2;
    float* a = malloc(sizeof(float) * m * k);
    float* b = malloc(sizeof(float) * k * n);
    float* c = malloc(sizeof(float) * m * n);
    for (long long i = 0; i < m * k; ++i) a[i] = (float)((i * 37 % 101) - 50) / 50.0f;
    for (long long i = 0; i < k * n; ++i) b[i] = (float)((i * 53 % 97) - 48) / 48.0f;
    croq_matmul_problem p = mm_make_problem(m, n, k, CROQ_F32, CROQ_F32, CROQ_ROW_MAJOR);
    size_t ws_bytes = mm_matmul_workspace_bytes(&p);
    void* ws = ws_bytes ? malloc(ws_bytes) : NULL;
    croq_status st = mm_matmul(&p, a, b, c, ws, ws_bytes, NULL);
    double err = 0;
    for (long long i = 0; i < m && st == CROQ_OK; ++i) {
      for (long long j = 0; j < n; ++j) {
        double ref = 0;
        for (long long q = 0; q < k; ++q) ref += (double)a[i * k + q] * b[q * n + j];
        double e = fabs(ref - c[i * n + j]);
        if (e > err) err = e;
      }
    }
    const char* choice = mm_matmul_choice(&p);
    printf("%s %s %d %g\n", argv[s], choice ? choice : "none", (int)st, err);
    if (st != CROQ_OK || err > 1e-3 * k) bad = 1;
    free(a); free(b); free(c); free(ws);
  }
  return bad;
}
)";

const std::vector<std::string> k_exact = {"64x48x40", "256x256x128", "100x100x100", "33x17x9"};
const std::vector<std::string> k_unseen = {"70x50x30", "300x20x10", "1x1x1", "97x101x103", "40x16x9", "257x255x129"};

// The kernel the documented rule picks: the nearest tuned shape in log distance (f32 only here).
std::string expected_choice(const std::string& shape) {
  long long m, n, k;
  std::sscanf(shape.c_str(), "%lldx%lldx%lld", &m, &n, &k);
  const std::vector<std::pair<std::string, std::array<double, 3>>> tuned = {
      {"iter001_tiled_small", {64, 48, 40}}, {"iter002_tiled_b", {256, 256, 128}},
      {"iter001_step3", {100, 100, 100}}, {"iter001_step8", {33, 17, 9}}};
  std::string best;
  double best_d = 1e30, best_v = 0;
  for (const auto& [name, t] : tuned) {
    const double d = std::fabs(std::log2(m / t[0])) + std::fabs(std::log2(n / t[1])) + std::fabs(std::log2(k / t[2]));
    const double v = t[0] * t[1] * t[2];
    if (d < best_d - 1e-12 || (std::fabs(d - best_d) <= 1e-12 && v > best_v)) {
      best = name;
      best_d = d;
      best_v = v;
    }
  }
  return best;
}

void check_program_output(const croq::ProcessResult& r, const std::vector<std::string>& shapes) {
  ASSERT_TRUE(r.ok()) << r.describe() << "\n" << r.out << r.err;
  const auto lines = croq::split_lines(r.out);
  for (const auto& shape : shapes) {
    bool seen = false;
    for (const auto& line : lines) {
      if (line.rfind(shape + " ", 0) != 0) continue;
      seen = true;
      EXPECT_NE(line.find(" " + expected_choice(shape) + " 0 "), std::string::npos) << line;
    }
    EXPECT_TRUE(seen) << shape << " missing in\n" << r.out;
  }
}

void ManifestNamesTheBestKeepOfEveryTaskAndTheFilesAreThere(Fixture& fx) {
  const json& doc = fx.exported.doc;
  ASSERT_EQ(doc["kernels"].size(), 4u) << doc.dump(2);
  for (const auto& k : doc["kernels"]) {
    if (k["shape_key"] == "matmul_f32_256x256x128") {
      EXPECT_EQ(k["kernel"], "iter002_tiled_b") << "the best KEEP, not the last record or the first KEEP";
      EXPECT_EQ(k["round"], 1);
    }
    EXPECT_EQ(k["task"].get<std::string>().rfind(k_gpu + "/cpp/", 0), 0u);
    EXPECT_EQ(k["source_sha256"].get<std::string>().size(), 64u);
    EXPECT_NE(k["flags_origin"].get<std::string>().find("build_"), std::string::npos) << "the recorded build flags";
  }
  for (const char* file : {"lib/libmm.so", "lib/libmm.a", "include/mm.h", "include/croq/kernel_abi.h", "include/croq/host_scalar.h",
                           "lib/cmake/mm/mmConfig.cmake", "lib/cmake/mm/mmConfigVersion.cmake", "manifest.json",
                           "README.md", "src/build.sh", "src/mm_dispatch.cpp", "torch/setup.py", "torch/mm_torch.cpp",
                           "torch/test_mm_torch.py"}) {
    EXPECT_TRUE(fs::exists(fx.out / file)) << file;
  }
  auto manifest = json::parse(croq::read_file_or_throw(fx.out / "manifest.json"));
  EXPECT_EQ(manifest["schema"], "croq-export-v1");
  EXPECT_EQ(manifest["kernels"].size(), 4u);
}

void TheSharedLibraryExportsOnlyItsEntriesAndNoUniqueSymbol(Fixture& fx) {
  const std::string so = croq::read_file_or_throw(fx.out / "lib/libmm.so");
  const croq::ElfFile elf = croq::read_elf(so);
  ASSERT_TRUE(elf.ok) << elf.error;
  std::set<std::string> exported;
  for (const auto& s : elf.symbols) {
    EXPECT_NE(s.bind, 10u) << "STB_GNU_UNIQUE: " << s.name;
    if (s.dynamic && s.defined && s.bind != 0 && s.visibility == 0) exported.insert(s.name);
  }
  for (const auto& name : exported) {
    if (name == "_init" || name == "_fini") continue;
    EXPECT_EQ(name.rfind("mm_", 0), 0u) << name;
    EXPECT_FALSE(name.size() > 4 && name.rfind("mm_k", 0) == 0 && std::isdigit(static_cast<unsigned char>(name[4])))
        << "a kernel's own entry is exported: " << name;
  }
  for (const char* entry : {"mm_matmul", "mm_matmul_workspace_bytes", "mm_make_problem", "mm_matmul_choice",
                            "mm_kernel_info", "mm_kernel_count"}) {
    EXPECT_TRUE(exported.count(entry)) << entry;
  }
}

void ACProgramLinkedToTheSharedLibraryIsCorrectOnTunedAndUnseenShapes(Fixture& fx) {
  TempDir work;
  croq::atomic_write(work / "main.c", k_c_program, false);
  auto cc = run({"cc", "-O1", "-I" + (fx.out / "include").string(), "main.c", "-o", "app", "-L" + (fx.out / "lib").string(),
                 "-lmm", "-Wl,-rpath," + (fx.out / "lib").string(), "-lm"},
                work.path());
  ASSERT_TRUE(cc.ok()) << cc.err;
  std::vector<std::string> argv = {(work / "app").string()};
  for (const auto& s : k_exact) argv.push_back(s);
  for (const auto& s : k_unseen) argv.push_back(s);
  check_program_output(run(argv), [] {
    auto all = k_exact;
    all.insert(all.end(), k_unseen.begin(), k_unseen.end());
    return all;
  }());
}

// The static library through the CMake package: find_package(mm) and mm::mm_static, from C.
void TheCMakePackageLinksTheStaticLibraryIntoACProgram(Fixture& fx) {
  TempDir work;
  croq::atomic_write(work / "main.c", k_c_program, false);
  croq::atomic_write(work / "CMakeLists.txt",
                     "cmake_minimum_required(VERSION 3.20)\nproject(use_mm C)\n"
                     "find_package(mm REQUIRED PATHS \"" + fx.out.string() + "\" NO_DEFAULT_PATH)\n"
                     "add_executable(app main.c)\ntarget_link_libraries(app PRIVATE mm::mm_static m)\n",
                     false);
  auto configure = run({"cmake", "-S", work.path().string(), "-B", (work / "build").string()});
  ASSERT_TRUE(configure.ok()) << configure.out << configure.err;
  auto build = run({"cmake", "--build", (work / "build").string()});
  ASSERT_TRUE(build.ok()) << build.out << build.err;
  const auto app = work / "build" / "app";
  const croq::ElfFile elf = croq::read_elf(croq::read_file_or_throw(app));
  for (const auto& needed : elf.needed) EXPECT_EQ(needed.find("libmm"), std::string::npos) << "linked statically";
  check_program_output(run({app.string(), "64x48x40", "33x17x9", "100x100x100", "70x50x30", "300x20x10"}),
                       {"64x48x40", "33x17x9", "100x100x100", "70x50x30", "300x20x10"});
}

void APythonScriptCallsTheLibraryThroughCtypes(Fixture& fx) {
  if (!croq::find_executable("python3")) return;  // no python3
  TempDir work;
  const std::string script = R"PY(import ctypes, random, sys
lib = ctypes.CDLL(sys.argv[1])
class Problem(ctypes.Structure):
    _fields_ = [("abi_version", ctypes.c_uint32), ("m", ctypes.c_int64), ("n", ctypes.c_int64), ("k", ctypes.c_int64),
                ("a_type", ctypes.c_int), ("b_type", ctypes.c_int), ("c_type", ctypes.c_int),
                ("compute_type", ctypes.c_int), ("b_layout", ctypes.c_int),
                ("lda", ctypes.c_int64), ("ldb", ctypes.c_int64), ("ldc", ctypes.c_int64)]
lib.mm_make_problem.restype = Problem
lib.mm_make_problem.argtypes = [ctypes.c_longlong] * 3 + [ctypes.c_int] * 3
lib.mm_matmul_choice.restype = ctypes.c_char_p
lib.mm_matmul_workspace_bytes.restype = ctypes.c_size_t
lib.mm_matmul.restype = ctypes.c_int
lib.mm_matmul.argtypes = [ctypes.POINTER(Problem)] + [ctypes.c_void_p] * 4 + [ctypes.c_size_t, ctypes.c_void_p]
F32, ROW = 3, 0
bad = 0
for shape in sys.argv[2:]:
    m, n, k = (int(v) for v in shape.split("x"))
    rng = random.Random(m * 131 + n * 7 + k)
    a = (ctypes.c_float * (m * k))(*[rng.uniform(-1, 1) for _ in range(m * k)])
    b = (ctypes.c_float * (k * n))(*[rng.uniform(-1, 1) for _ in range(k * n)])
    c = (ctypes.c_float * (m * n))()
    p = lib.mm_make_problem(m, n, k, F32, F32, ROW)
    ws = lib.mm_matmul_workspace_bytes(ctypes.byref(p))
    buf = ctypes.create_string_buffer(ws) if ws else None
    st = lib.mm_matmul(ctypes.byref(p), a, b, c, buf, ws, None)
    err = 0.0
    for _ in range(64):  # a sample of C's elements against their dot products
        i, j = rng.randrange(m), rng.randrange(n)
        ref = sum(a[i * k + q] * b[q * n + j] for q in range(k))
        err = max(err, abs(ref - c[i * n + j]))
    print(shape, lib.mm_matmul_choice(ctypes.byref(p)).decode(), st, err)
    bad |= st != 0 or err > 1e-3 * k
sys.exit(1 if bad else 0)
)PY";
  croq::atomic_write(work / "use_mm.py", script, false);
  std::vector<std::string> argv = {"python3", (work / "use_mm.py").string(), (fx.out / "lib/libmm.so").string()};
  std::vector<std::string> shapes = {"64x48x40", "256x256x128", "33x17x9", "70x50x30", "200x300x20"};
  argv.insert(argv.end(), shapes.begin(), shapes.end());
  check_program_output(run(argv), shapes);
}

// With --name croq the library's entries are the ABI's own: croq's harness verifies it as a
// candidate at a tuned shape and an unseen one, through the dispatcher.
void TheLibraryIsACandidateCroqMeasureVerifies(Fixture& fx) {
  const fs::path out = fx.dir / "as_candidate";
  CroqRun ex = run_croq(fx.dir.path(), {"export", "--all", "--out", out.string(), "--library", "shared"}, {}, {},
                        std::chrono::milliseconds(600000));
  ASSERT_EQ(ex.rc, 0) << ex.err;
  for (const std::string key : {"matmul_f32_100x100x100", "matmul_f32_120x90x70"}) {
    SCOPED_TRACE(key);
    CroqRun init = run_croq(fx.dir.path(), with({"task", "init"}, key));
    CroqRun m = run_croq(fx.dir.path(), with({"measure", "--candidate", (out / "lib/libcroq.so").string()}, key), {},
                         {}, std::chrono::milliseconds(300000));
    ASSERT_EQ(m.rc, 0) << m.out << m.err;
    EXPECT_EQ(m.doc["verdict"], "PASS") << m.out;
  }
}

// The PyTorch extension is generated (building it needs torch): it calls entries the library
// exports, registers torch.ops.mm.matmul for the CPU, and its Python files are valid.
void TheTorchExtensionIsGeneratedAgainstTheLibrarysEntries(Fixture& fx) {
  const std::string cpp = croq::read_file_or_throw(fx.out / "torch/mm_torch.cpp");
  EXPECT_NE(cpp.find("TORCH_LIBRARY(mm, m)"), std::string::npos);
  EXPECT_NE(cpp.find("TORCH_LIBRARY_IMPL(mm, CPU, m)"), std::string::npos);
  EXPECT_EQ(cpp.find("TORCH_LIBRARY_IMPL(mm, CUDA, m)"), std::string::npos) << "no CUDA kernel was exported";
  EXPECT_NE(cpp.find("#include \"mm.h\""), std::string::npos);
  const croq::ElfFile elf = croq::read_elf(croq::read_file_or_throw(fx.out / "lib/libmm.so"));
  std::set<std::string> exported;
  for (const auto& s : elf.symbols) {
    if (s.dynamic && s.defined) exported.insert(s.name);
  }
  for (size_t at = cpp.find("mm_"); at != std::string::npos; at = cpp.find("mm_", at + 1)) {
    if (at > 0 && (std::isalnum(static_cast<unsigned char>(cpp[at - 1])) || cpp[at - 1] == '_')) continue;
    size_t e = at;
    while (e < cpp.size() && (std::isalnum(static_cast<unsigned char>(cpp[e])) || cpp[e] == '_')) ++e;
    const std::string word = cpp.substr(at, e - at);
    if (cpp.compare(e, 1, "(") != 0 || word == "mm_torch") continue;
    EXPECT_TRUE(exported.count(word)) << word << " is called by the extension but not exported";
  }
  const std::string setup = croq::read_file_or_throw(fx.out / "torch/setup.py");
  EXPECT_NE(setup.find("CppExtension"), std::string::npos);
  EXPECT_NE(setup.find("libmm.a"), std::string::npos);
  if (croq::find_executable("python3")) {
    for (const char* py : {"torch/setup.py", "torch/test_mm_torch.py"}) {
      auto r = run({"python3", "-c", "import ast,sys; ast.parse(open(sys.argv[1]).read())", (fx.out / py).string()});
      EXPECT_TRUE(r.ok()) << py << ": " << r.err;
    }
  }
}

// build.sh repeats the build: the libraries it makes from src/ behave as the exported ones.
void BuildShRebuildsTheLibrariesFromTheSources(Fixture& fx) {
  TempDir copy;
  fs::copy(fx.out, copy / "e", fs::copy_options::recursive);
  fs::remove(copy / "e/lib/libmm.so");
  fs::remove(copy / "e/lib/libmm.a");
  auto r = run({"sh", (copy / "e/src/build.sh").string()});
  ASSERT_TRUE(r.ok()) << r.out << r.err;
  EXPECT_TRUE(fs::exists(copy / "e/lib/libmm.so"));
  EXPECT_TRUE(fs::exists(copy / "e/lib/libmm.a"));
}

// Refusals change nothing: a task without a KEEP, a folder that is not an export, a bad name.
void BadRequestsAreRefusedAndChangeNothing(Fixture& fx) {
  const std::string before = croq::read_file_or_throw(fx.out / "manifest.json");
  CroqRun bad_name = run_croq(fx.dir.path(), {"export", "--all", "--out", fx.out.string(), "--name", "Bad-Name"});
  EXPECT_EQ(bad_name.rc, 2) << bad_name.err;
  const fs::path other = fx.dir / "not_an_export";
  fs::create_directories(other);
  croq::atomic_write(other / "keep.txt", "mine", false);
  CroqRun occupied = run_croq(fx.dir.path(), {"export", "--all", "--out", other.string()});
  EXPECT_EQ(occupied.rc, 2) << occupied.err;
  EXPECT_EQ(croq::read_file_or_throw(other / "keep.txt"), "mine");
  CroqRun init = run_croq(fx.dir.path(), with({"task", "init"}, "matmul_f32_8x8x8"));
  CroqRun no_keep = run_croq(fx.dir.path(), {"export", k_gpu + "/cpp/matmul_f32_8x8x8/" + k_model, "--out",
                                              fx.out.string()});
  EXPECT_EQ(no_keep.rc, 4) << no_keep.err;
  EXPECT_EQ(croq::read_file_or_throw(fx.out / "manifest.json"), before);
}

}  // namespace

// One workspace and export for every check (each ctest process runs one test).
TEST(ExportCli, CppTasksExportedAndCalledFromCCMakePythonCroqAndTorch) {
  Fixture fx;
  ASSERT_TRUE(fx.setup_error.empty()) << fx.setup_error;
  ASSERT_EQ(fx.exported.rc, 0) << fx.exported.out << fx.exported.err;
  {
    SCOPED_TRACE("manifest and files");
    ManifestNamesTheBestKeepOfEveryTaskAndTheFilesAreThere(fx);
  }
  {
    SCOPED_TRACE("symbols");
    TheSharedLibraryExportsOnlyItsEntriesAndNoUniqueSymbol(fx);
  }
  {
    SCOPED_TRACE("C program, shared library");
    ACProgramLinkedToTheSharedLibraryIsCorrectOnTunedAndUnseenShapes(fx);
  }
  {
    SCOPED_TRACE("CMake package, static library");
    TheCMakePackageLinksTheStaticLibraryIntoACProgram(fx);
  }
  {
    SCOPED_TRACE("Python ctypes");
    APythonScriptCallsTheLibraryThroughCtypes(fx);
  }
  {
    SCOPED_TRACE("croq measure of the library");
    TheLibraryIsACandidateCroqMeasureVerifies(fx);
  }
  {
    SCOPED_TRACE("torch extension");
    TheTorchExtensionIsGeneratedAgainstTheLibrarysEntries(fx);
  }
  {
    SCOPED_TRACE("build.sh");
    BuildShRebuildsTheLibrariesFromTheSources(fx);
  }
  {
    SCOPED_TRACE("refusals");
    BadRequestsAreRefusedAndChangeNothing(fx);
  }
}
