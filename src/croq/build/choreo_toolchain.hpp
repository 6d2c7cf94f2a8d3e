// Where croq finds the CroqTile (Choreo) toolchain without any environment variable: the folder
// scripts/install_choreo.sh (scripts/setup.sh --with-choreo) builds for the commit pinned in
// scripts/choreo.pin,
//   choreo-<commit12>/{build/choreo, runtime/, extern/cutlass/include/, toolchain.json}
// looked for, in order, in
//   1. <croq executable>/../toolchains/        (croq packed for another machine, bench/gpu/pack_device.sh)
//   2. <croq source tree>/.toolchains/
//   3. $CROQ_TOOLCHAINS/
//   4. ${XDG_DATA_HOME:-~/.local/share}/croq/toolchains/   (install_choreo.sh's default)
// CHOREO_HOME (a toolchain folder or a choreo checkout with build/choreo) and CROQ_CHOREO (the
// binary) still override it (Toolchain::from_env).
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "croq/build/toolchain.hpp"

namespace croq {

struct ChoreoPin {
  std::string commit;          // the full hash
  std::string cutlass_tag;     // "v4.2.1"
  std::string cutlass_commit;
  std::string repo;
  std::string folder_name() const;  // "choreo-<first 12 of commit>"
};

// Parses the KEY=VALUE lines of scripts/choreo.pin; nullopt when the commit is missing.
std::optional<ChoreoPin> parse_choreo_pin(const std::string& text);
// The project's pin (scripts/choreo.pin found with find_project_dir); nullopt when unreadable.
std::optional<ChoreoPin> choreo_pin();

// The folders searched for the pinned toolchain, in order (whether they exist or not).
std::vector<std::filesystem::path> choreo_toolchain_candidates(const ChoreoPin& pin, const EnvLookup& env);
// The first candidate holding an executable build/choreo; nullopt when none does.
std::optional<std::filesystem::path> find_choreo_toolchain(const EnvLookup& env = system_env());

}  // namespace croq
