// Symbol check of a built candidate: a kernel must compose with other kernels in one process (two
// candidates loaded side by side, or linked into one library by `croq export`). So the only
// symbols it may export are the ABI's entry points (include/croq/kernel_abi.h), and no symbol may
// be STB_GNU_UNIQUE: the dynamic loader binds every unique symbol of a name to one copy in the
// whole process, whatever library defines it, so two kernels of one template share a
// function-local static (a launch cache, a tensor-map cache) even when loaded with RTLD_LOCAL.
// croq's own build flags prevent both (-fvisibility=hidden -fno-gnu-unique); `croq build` warns
// when a candidate still has such symbols (a source that marks its helpers visible, other flags).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "croq/util/json.hpp"

namespace croq {

// Flags that make a candidate compose with others in one process: only the ABI's entry points
// (CROQ_EXPORT) visible, no unique symbols. For nvcc (passed to the host compiler), and for a C++
// compiler identified by its path and version text (clang emits no unique symbols and does not
// know -fno-gnu-unique).
const std::vector<std::string>& composable_nvcc_flags();
std::vector<std::string> composable_cxx_flags(const std::string& compiler_identity);

// The ABI's entry points (versions 1 and 2), the only symbols a candidate should export.
const std::vector<std::string>& abi_entry_points();
bool is_abi_entry_point(const std::string& name);

struct SymbolReport {
  bool is_elf = false;
  std::string error;
  std::vector<std::string> exported_extra;  // defined, dynamic, default/protected visibility, not ABI
  std::vector<std::string> unique;          // STB_GNU_UNIQUE (either table)
  std::vector<std::string> entry_points;    // the ABI entry points it exports
  // Weak definitions of the C++ standard library's own inline members (std::ctype<char>::do_widen
  // from <iostream>): its headers give namespace std default visibility, so -fvisibility=hidden
  // leaves them exported. Every copy in a process is the same libstdc++ code, so sharing one
  // copy changes nothing; listed, not warned about. (A std template instantiated for a type of the
  // kernel's own is hidden with that type.)
  std::vector<std::string> exported_std;

  bool clean() const { return is_elf && exported_extra.empty() && unique.empty(); }
  // One warning per kind of finding, naming a few symbols ("" when clean).
  std::vector<std::string> warnings() const;
  json to_json() const;
};

SymbolReport scan_symbols_bytes(std::string_view data);
SymbolReport scan_symbols(const std::filesystem::path& shared_object);

}  // namespace croq
