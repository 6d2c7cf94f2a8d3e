// scripts/install_choreo.sh (scripts/setup.sh --with-choreo) without building anything: where it
// installs (the folder croq searches), that an installed toolchain of the pinned commit is left
// alone, and that bad sources and arguments stop it before it changes anything.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "croq/build/choreo_toolchain.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/process.hpp"
#include "croq/util/text.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

using test::TempDir;

ProcessResult install(const std::vector<std::string>& args, const std::map<std::string, std::string>& env) {
  ProcessSpec spec;
  spec.argv = {"bash", std::string(CROQ_SOURCE_DIR) + "/scripts/install_choreo.sh"};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env_unset = {"CROQ_TOOLCHAINS", "XDG_DATA_HOME", "CHOREO_SRC", "CUTLASS_SRC"};
  spec.env_set = env;
  spec.timeout = std::chrono::seconds(60);
  SystemProcessRunner runner;
  return runner.run(spec);
}

ChoreoPin pin() {
  auto p = parse_choreo_pin(read_file_or_throw(std::string(CROQ_SOURCE_DIR) + "/scripts/choreo.pin"));
  EXPECT_TRUE(p);
  return p.value_or(ChoreoPin{});
}

TEST(SetupScripts, InstallChoreoInstallsWhereCroqLooks) {
  const ChoreoPin p = pin();
  auto xdg = install({"--print-dest"}, {{"XDG_DATA_HOME", "/data"}});
  ASSERT_EQ(xdg.exit_code, 0) << xdg.err;
  EXPECT_EQ(trim(xdg.out), "/data/croq/toolchains/" + p.folder_name());
  auto home = install({"--print-dest"}, {{"HOME", "/home/u"}});
  EXPECT_EQ(trim(home.out), "/home/u/.local/share/croq/toolchains/" + p.folder_name());
  // The same folders croq searches (choreo_toolchain.hpp).
  auto dirs = choreo_toolchain_candidates(p, [](const std::string& k) -> std::optional<std::string> {
    if (k == "HOME") return "/home/u";
    return std::nullopt;
  });
  EXPECT_EQ(dirs.back().string(), trim(home.out));
  auto own = install({"--print-dest"}, {{"CROQ_TOOLCHAINS", "/opt/tc"}});
  EXPECT_EQ(trim(own.out), "/opt/tc/" + p.folder_name());
}

TEST(SetupScripts, AnInstalledToolchainOfThePinnedCommitIsLeftAlone) {
  const ChoreoPin p = pin();
  TempDir root;
  fs::path dir = root / p.folder_name();
  ensure_dir(dir / "build");
  ensure_dir(dir / "runtime");
  ensure_dir(dir / "extern/cutlass/include/cute");
  atomic_write(dir / "build/choreo", "#!/bin/sh\necho 'Usage: choreo [options] file...'\n", false);
  ::chmod((dir / "build/choreo").c_str(), 0755);
  atomic_write(dir / "runtime/choreo.h", "", false);
  atomic_write(dir / "extern/cutlass/include/cute/tensor.hpp", "", false);
  atomic_write(dir / "toolchain.json", "{\n  \"choreo_commit\": \"" + p.commit + "\"\n}\n", false);
  // No source is reachable: it must not need one.
  auto r = install({}, {{"CROQ_TOOLCHAINS", root.path().string()}, {"CHOREO_SRC", "/nonexistent"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("already installed"), std::string::npos) << r.err;
  EXPECT_EQ(trim(r.out), dir.string());
  // A toolchain of another commit in that place is rebuilt (here: refused, the source is missing).
  atomic_write(dir / "toolchain.json", "{\n  \"choreo_commit\": \"0000000\"\n}\n", false);
  auto other = install({}, {{"CROQ_TOOLCHAINS", root.path().string()}, {"CHOREO_SRC", "/nonexistent"}});
  EXPECT_EQ(other.exit_code, 3) << other.err;
  // (where flex or bison is missing, it says so before it looks for the source)
  EXPECT_TRUE(other.err.find("CHOREO_SRC") != std::string::npos || other.err.find("--with-choreo") != std::string::npos)
      << other.err;
  EXPECT_TRUE(fs::exists(dir / "build/choreo"));  // nothing removed when the build cannot start
}

TEST(SetupScripts, BadArgumentsAndSourcesChangeNothing) {
  TempDir root;
  auto bad = install({"--frobnicate"}, {});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("unknown argument"), std::string::npos);
  fs::path dest = root / "tc";
  auto missing = install({"--dest", dest.string()}, {{"CHOREO_SRC", (root / "no-such-clone").string()}});
  EXPECT_EQ(missing.exit_code, 3) << missing.err;
  EXPECT_FALSE(fs::exists(dest));
  EXPECT_TRUE(missing.err.find("cannot clone") != std::string::npos || missing.err.find("--with-choreo") != std::string::npos)
      << missing.err;
  ProcessSpec setup;
  setup.argv = {"bash", std::string(CROQ_SOURCE_DIR) + "/scripts/setup.sh", "--with-choreo-please"};
  setup.timeout = std::chrono::seconds(30);
  SystemProcessRunner runner;
  auto s = runner.run(setup);
  EXPECT_EQ(s.exit_code, 2);
  EXPECT_NE(s.err.find("--with-choreo"), std::string::npos) << s.err;
}

}  // namespace
}  // namespace croq
