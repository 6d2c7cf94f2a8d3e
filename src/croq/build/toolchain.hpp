// The compilers and tools a build uses, found the same way every time:
//   nvcc     CROQ_NVCC, else $CUDA_HOME/bin/nvcc, else nvcc on PATH, else /usr/local/cuda/bin/nvcc
//   g++      CROQ_CXX, else g++ on PATH
//   python   CROQ_PYTHON, else python3 on PATH
//   choreo   CROQ_CHOREO, else $CHOREO_HOME/build/choreo, else the installed toolchain of the
//            pinned commit (choreo_toolchain.hpp: scripts/setup.sh --with-choreo puts it where croq
//            looks), whose folder then stands for CHOREO_HOME
//   CuTe     CUTE_HOME, else $CHOREO_HOME/extern/cutlass
// and each compiler's identity for the cache key: its path and its `--version` text, asked
// through the process runner once per process and remembered on disk by (path, size, mtime) so
// that a cache hit does not have to start the compiler at all.
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace croq {

// Looks up an environment variable (tests substitute their own).
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup system_env();

struct Toolchain {
  std::string nvcc;
  std::string cxx;
  std::string python;
  std::string choreo;                  // empty when no compiler is set or installed
  std::string choreo_home;             // CHOREO_HOME, or the installed toolchain's folder
  std::string choreo_source;           // "CROQ_CHOREO", "CHOREO_HOME", "installed" or "" (none)
  std::string cute_home;               // empty when neither CUTE_HOME nor CHOREO_HOME is set
  std::string cuda_home;               // CUDA_HOME, else the folder above nvcc's bin/

  static Toolchain from_env(const EnvLookup& env = system_env());
};

// Remembers `--version` answers. `store_file` (may be empty: memory only) keeps them between
// processes, keyed by the executable's path, size and modification time.
class CompilerVersions {
 public:
  explicit CompilerVersions(std::filesystem::path store_file = {});
  // The first line(s) of `<compiler> --version`; throws Error(not_found) when it cannot be started
  // or fails, with a hint naming the variable that selects it.
  std::string version(const std::string& compiler, const std::string& selector_hint);

 private:
  std::filesystem::path m_store;
  std::mutex m_mutex;
  std::map<std::string, std::string> m_memory;
};

// "sm90_NVIDIA_H200" -> "sm_90a"; "sm80_NVIDIA_A100" -> "sm_80"; nullopt for other keys.
std::optional<std::string> arch_from_device_key(const std::string& key);
// Normalises --arch: "sm_90a", "sm90a", "90a", "compute_90a" -> "sm_90a". Throws usage otherwise.
std::string normalize_arch(const std::string& text);
// "sm_90a" -> "-gencode=arch=compute_90a,code=sm_90a"
std::string gencode_flag(const std::string& arch);

}  // namespace croq
