// Compiler discovery and version identity (toolchain.hpp).
#include "croq/build/toolchain.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <regex>

#include <fmt/format.h>

#include "croq/build/choreo_toolchain.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/json.hpp"
#include "croq/util/process.hpp"
#include "croq/util/text.hpp"

namespace croq {

EnvLookup system_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  };
}

Toolchain Toolchain::from_env(const EnvLookup& env) {
  Toolchain t;
  std::error_code ec;
  if (auto v = env("CROQ_NVCC")) {
    t.nvcc = *v;
  } else if (auto home = env("CUDA_HOME"); home && fs::exists(fs::path(*home) / "bin" / "nvcc", ec)) {
    t.nvcc = (fs::path(*home) / "bin" / "nvcc").string();
  } else if (auto found = find_executable("nvcc")) {
    t.nvcc = found->string();
  } else {
    t.nvcc = "/usr/local/cuda/bin/nvcc";
  }
  if (auto home = env("CUDA_HOME")) {
    t.cuda_home = *home;
  } else {
    fs::path nv(t.nvcc);
    t.cuda_home = nv.has_parent_path() ? fs::path(nv).parent_path().parent_path().string() : "/usr/local/cuda";
  }
  if (auto v = env("CROQ_CXX")) t.cxx = *v;
  else t.cxx = find_executable("g++").value_or(fs::path("g++")).string();
  if (auto v = env("CROQ_PYTHON")) t.python = *v;
  else t.python = find_executable("python3").value_or(fs::path("python3")).string();
  if (auto home = env("CHOREO_HOME")) t.choreo_home = *home;
  if (auto v = env("CROQ_CHOREO")) {
    t.choreo = *v;
    t.choreo_source = "CROQ_CHOREO";
  } else if (!t.choreo_home.empty()) {
    t.choreo = (fs::path(t.choreo_home) / "build" / "choreo").string();
    t.choreo_source = "CHOREO_HOME";
  } else if (auto installed = find_choreo_toolchain(env)) {
    t.choreo_home = installed->string();
    t.choreo = (*installed / "build" / "choreo").string();
    t.choreo_source = "installed";
  }
  if (auto v = env("CUTE_HOME")) t.cute_home = *v;
  else if (!t.choreo_home.empty()) t.cute_home = (fs::path(t.choreo_home) / "extern" / "cutlass").string();
  return t;
}

CompilerVersions::CompilerVersions(fs::path store_file) : m_store(std::move(store_file)) {}

namespace {

// "<path>|<size>|<mtime ns>" for an existing executable; empty if it cannot be stat'ed.
std::string file_identity(const std::string& compiler) {
  auto exe = find_executable(compiler);
  if (!exe) return {};
  struct stat st {};
  std::error_code ec;
  fs::path real = fs::canonical(*exe, ec);
  if (ec || ::stat(real.c_str(), &st) != 0) return {};
  return fmt::format("{}|{}|{}", real.string(), static_cast<long long>(st.st_size),
                     static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec);
}

}  // namespace

std::string CompilerVersions::version(const std::string& compiler, const std::string& selector_hint) {
  std::lock_guard<std::mutex> lock(m_mutex);
  if (auto it = m_memory.find(compiler); it != m_memory.end()) return it->second;
  std::string identity = file_identity(compiler);
  json stored = json::object();
  if (!m_store.empty() && !identity.empty()) {
    if (auto text = read_file(m_store)) {
      if (auto j = try_parse_json(*text); j && j->is_object()) stored = *j;
    }
    if (auto v = get_string(stored, identity.c_str())) {
      m_memory[compiler] = *v;
      return *v;
    }
  }
  ProcessSpec spec;
  spec.argv = {compiler, "--version"};
  spec.timeout = std::chrono::milliseconds(60000);
  ProcessResult r = process_runner().run(spec);
  if (!r.ok()) {
    throw Error(ExitCode::not_found,
                fmt::format("cannot run {} --version ({}){}", compiler, r.describe(),
                            r.err.empty() ? "" : ": " + preview(trim(r.err), 200)),
                selector_hint);
  }
  std::string text = trim(r.out.empty() ? r.err : r.out);
  m_memory[compiler] = text;
  if (!m_store.empty() && !identity.empty()) {
    stored[identity] = text;
    try {
      ensure_dir(m_store.parent_path());
      atomic_write(m_store, dump_pretty(stored), /*durable=*/false);
    } catch (const Error&) {
      // The on-disk memo is an optimisation; the version is known for this process either way.
    }
  }
  return text;
}

std::optional<std::string> arch_from_device_key(const std::string& key) {
  static const std::regex re(R"(^sm(\d+)[a-z]?_)");
  std::smatch m;
  if (!std::regex_search(key, m, re)) return std::nullopt;
  int cc = std::stoi(m[1].str());
  // Hopper and later: the architecture-specific "a" target unlocks wgmma, TMA multicast, setmaxnreg.
  return fmt::format("sm_{}{}", cc, cc >= 90 ? "a" : "");
}

std::string normalize_arch(const std::string& text) {
  static const std::regex re(R"(^(sm_?|compute_?)?(\d{2,3})([a-z]?)$)");
  std::smatch m;
  std::string lower = to_lower(trim(text));
  if (!std::regex_match(lower, m, re)) {
    throw_usage(fmt::format("--arch {} is not a CUDA architecture", text), "use e.g. --arch sm_90a or --arch sm_80");
  }
  return fmt::format("sm_{}{}", m[2].str(), m[3].str());
}

std::string gencode_flag(const std::string& arch) {
  std::string digits = arch.substr(3);  // "90a"
  return fmt::format("-gencode=arch=compute_{},code=sm_{}", digits, digits);
}

}  // namespace croq
