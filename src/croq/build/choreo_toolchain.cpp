// Locating the installed CroqTile toolchain (choreo_toolchain.hpp).
#include "croq/build/choreo_toolchain.hpp"

#include <unistd.h>

#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/text.hpp"

namespace croq {

namespace fs = std::filesystem;

std::string ChoreoPin::folder_name() const { return "choreo-" + commit.substr(0, 12); }

std::optional<ChoreoPin> parse_choreo_pin(const std::string& text) {
  ChoreoPin pin;
  for (const std::string& raw : split_lines(text)) {
    std::string line = trim(raw);
    if (line.empty() || line[0] == '#') continue;
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (key == "CHOREO_COMMIT") pin.commit = value;
    else if (key == "CHOREO_REPO") pin.repo = value;
    else if (key == "CUTLASS_TAG") pin.cutlass_tag = value;
    else if (key == "CUTLASS_COMMIT") pin.cutlass_commit = value;
  }
  if (pin.commit.size() < 12) return std::nullopt;
  return pin;
}

std::optional<ChoreoPin> choreo_pin() {
  try {
    auto text = read_file(find_project_dir("scripts") / "choreo.pin");
    if (!text) return std::nullopt;
    return parse_choreo_pin(*text);
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::vector<fs::path> choreo_toolchain_candidates(const ChoreoPin& pin, const EnvLookup& env) {
  std::vector<fs::path> out;
  const std::string name = pin.folder_name();
  out.push_back(self_exe_dir().parent_path() / "toolchains" / name);
  try {
    out.push_back(find_project_dir("scripts").parent_path() / ".toolchains" / name);
  } catch (const Error&) {
    // An installed croq without its source tree: that place is simply not searched.
  }
  if (auto t = env("CROQ_TOOLCHAINS"); t && !t->empty()) out.push_back(fs::path(*t) / name);
  if (auto x = env("XDG_DATA_HOME"); x && !x->empty()) {
    out.push_back(fs::path(*x) / "croq" / "toolchains" / name);
  } else if (auto h = env("HOME"); h && !h->empty()) {
    out.push_back(fs::path(*h) / ".local" / "share" / "croq" / "toolchains" / name);
  }
  return out;
}

std::optional<fs::path> find_choreo_toolchain(const EnvLookup& env) {
  auto pin = choreo_pin();
  if (!pin) return std::nullopt;
  std::error_code ec;
  for (const fs::path& dir : choreo_toolchain_candidates(*pin, env)) {
    fs::path bin = dir / "build" / "choreo";
    if (fs::is_regular_file(bin, ec) && ::access(bin.c_str(), X_OK) == 0) return dir;
  }
  return std::nullopt;
}

}  // namespace croq
