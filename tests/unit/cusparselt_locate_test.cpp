// Where cuSPARSELt is looked for (croq/measure/cusparselt_locate.hpp): the flag, the environment,
// the loader's own search, then the Python package python3 names; a folder stands for the library
// in it or in its lib/.
#include <gtest/gtest.h>

#include <cstdlib>

#include "croq/measure/cusparselt_locate.hpp"
#include "croq/util/fs.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

namespace fs = std::filesystem;

class FakePython : public ProcessRunner {
 public:
  std::string prints;
  bool ok = true;
  std::vector<std::vector<std::string>> argvs;
  ProcessResult run(const ProcessSpec& spec) override {
    argvs.push_back(spec.argv);
    ProcessResult r;
    r.started = true;
    r.exit_code = ok ? 0 : 1;
    r.out = prints;
    r.err = ok ? "" : "ModuleNotFoundError: No module named 'nvidia.cusparselt'";
    return r;
  }
};

TEST(CusparseltLocate, TheFlagTheEnvironmentTheLoaderThenThePythonPackage) {
  test::TempDir dir;
  fs::create_directories(dir.path() / "pkg" / "lib");
  atomic_write(dir.path() / "pkg" / "lib" / k_cusparselt_soname, "not really a library");
  fs::create_directories(dir.path() / "flat");
  atomic_write(dir.path() / "flat" / k_cusparselt_soname, "x");
  ::setenv("CROQ_CUSPARSELT", (dir.path() / "flat").c_str(), 1);
  FakePython py;
  py.prints = (dir.path() / "pkg").string() + "\n";
  auto c = cusparselt_candidates("/opt/explicit/libcusparseLt.so.0", py);
  ::unsetenv("CROQ_CUSPARSELT");
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0].path, "/opt/explicit/libcusparseLt.so.0");
  EXPECT_EQ(c[0].origin, "--cusparselt");
  EXPECT_EQ(c[1].path, (dir.path() / "flat" / k_cusparselt_soname).string());
  EXPECT_EQ(c[1].origin, "CROQ_CUSPARSELT");
  EXPECT_EQ(c[2].path, k_cusparselt_soname);
  EXPECT_EQ(c[3].path, (dir.path() / "pkg" / "lib" / k_cusparselt_soname).string());
  EXPECT_EQ(c[3].origin, "python package nvidia.cusparselt");
  ASSERT_EQ(py.argvs.size(), 1u);
  EXPECT_EQ(py.argvs[0][0], "python3");
  EXPECT_NE(py.argvs[0].back().find("import nvidia.cusparselt"), std::string::npos);
}

TEST(CusparseltLocate, WithoutThePackageOnlyTheLoaderIsTriedAndTheHintSaysWhatToDo) {
  FakePython py;
  py.ok = false;
  ::unsetenv("CROQ_CUSPARSELT");
  auto c = cusparselt_candidates("", py);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].origin, "loader search path");
  const std::string hint = cusparselt_missing_hint();
  EXPECT_NE(hint.find("pip install nvidia-cusparselt"), std::string::npos);
  EXPECT_NE(hint.find("--cusparselt"), std::string::npos);
  EXPECT_NE(hint.find("CROQ_CUSPARSELT"), std::string::npos);
}

}  // namespace
}  // namespace croq
