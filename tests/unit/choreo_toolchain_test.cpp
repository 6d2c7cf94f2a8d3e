// Finding the CroqTile toolchain scripts/install_choreo.sh installs, without environment variables:
// the pin file, the folders searched and their order, and the choice of the first that holds an
// executable compiler.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "croq/build/choreo_toolchain.hpp"
#include "croq/util/fs.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

using test::TempDir;

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

void fake_choreo(const fs::path& dir) {
  fs::create_directories(dir / "build");
  atomic_write(dir / "build" / "choreo", "#!/bin/sh\necho 'Usage: choreo [options] file...'\n");
  ::chmod((dir / "build" / "choreo").c_str(), 0755);
}

TEST(ChoreoToolchain, ThePinNamesTheCommitAndCutlass) {
  auto pin = parse_choreo_pin("# comment\nCHOREO_REPO=https://x/croqtile.git\nCHOREO_COMMIT=0123456789abcdef0123\n"
                              "CUTLASS_TAG = v4.2.1\nCUTLASS_COMMIT=f3fd\n");
  ASSERT_TRUE(pin);
  EXPECT_EQ(pin->commit, "0123456789abcdef0123");
  EXPECT_EQ(pin->cutlass_tag, "v4.2.1");
  EXPECT_EQ(pin->folder_name(), "choreo-0123456789ab");
  EXPECT_FALSE(parse_choreo_pin("CUTLASS_TAG=v4.2.1\n"));
  // The project's own pin: the commit the bundled kernels are tested with, CUTLASS 4.2.1.
  auto own = choreo_pin();
  ASSERT_TRUE(own) << "scripts/choreo.pin must be readable";
  EXPECT_EQ(own->commit.size(), 40u);
  EXPECT_EQ(own->cutlass_tag, "v4.2.1");
}

TEST(ChoreoToolchain, SearchesBesideCroqThenTheTreeThenTheUserFolders) {
  ChoreoPin pin{"0123456789abcdef", "v4.2.1", "", ""};
  auto dirs = choreo_toolchain_candidates(pin, env_of({{"HOME", "/home/u"}, {"CROQ_TOOLCHAINS", "/opt/tc"}}));
  ASSERT_GE(dirs.size(), 3u);
  EXPECT_EQ(dirs.front().filename(), "choreo-0123456789ab");
  EXPECT_EQ(dirs.front().parent_path().filename(), "toolchains");  // <croq>/../toolchains
  EXPECT_EQ(dirs[dirs.size() - 2], fs::path("/opt/tc/choreo-0123456789ab"));
  EXPECT_EQ(dirs.back(), fs::path("/home/u/.local/share/croq/toolchains/choreo-0123456789ab"));
  auto xdg = choreo_toolchain_candidates(pin, env_of({{"HOME", "/home/u"}, {"XDG_DATA_HOME", "/data"}}));
  EXPECT_EQ(xdg.back(), fs::path("/data/croq/toolchains/choreo-0123456789ab"));
}

TEST(ChoreoToolchain, FindsTheInstalledPinnedCompiler) {
  auto pin = choreo_pin();
  ASSERT_TRUE(pin);
  TempDir home;
  // Nothing installed in this home (a toolchain beside croq or in the tree would still be found).
  auto none = find_choreo_toolchain(env_of({{"HOME", home.path().string()}}));
  if (none) {
    EXPECT_NE(none->string().find(home.path().string()), 0u);
  }
  // Installed for another commit: not taken.
  fake_choreo(home / ".local/share/croq/toolchains/choreo-000000000000");
  auto other = find_choreo_toolchain(env_of({{"HOME", home.path().string()}}));
  EXPECT_EQ(other, none);
  // Installed where install_choreo.sh puts it: found.
  fs::path dir = home / (".local/share/croq/toolchains/" + pin->folder_name());
  fake_choreo(dir);
  auto found = find_choreo_toolchain(env_of({{"HOME", home.path().string()}}));
  ASSERT_TRUE(found);
  if (!none) {
    EXPECT_EQ(*found, dir);
  }
  // A compiler that is not executable is not a toolchain.
  TempDir other_home;
  fs::path bad = other_home / (".local/share/croq/toolchains/" + pin->folder_name());
  fake_choreo(bad);
  ::chmod((bad / "build" / "choreo").c_str(), 0644);
  auto not_exec = find_choreo_toolchain(env_of({{"HOME", other_home.path().string()}}));
  EXPECT_EQ(not_exec, none);
}

}  // namespace
}  // namespace croq
