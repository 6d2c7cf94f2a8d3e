// Symbol check of a built candidate (symbols.hpp).
#include "croq/build/symbols.hpp"

#include <elf.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "croq/util/elf.hpp"
#include "croq/util/fs.hpp"

namespace croq {

namespace {

// Symbols the static linker itself defines in every shared object.
bool is_linker_symbol(const std::string& name) {
  static const std::set<std::string> names = {"_init", "_fini", "_edata", "_end", "__bss_start"};
  return names.count(name) > 0;
}

std::string list_some(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 3; ++i) {
    if (i) out += ", ";
    out += names[i].size() > 100 ? fmt::format("{}...", std::string_view(names[i]).substr(0, 100)) : names[i];
  }
  if (names.size() > 3) out += fmt::format(" and {} more", names.size() - 3);
  return out;
}

// A symbol of namespace std (functions, vtables, typeinfo, guard variables): _ZNSt, _ZNKSt, _ZSt, ...
bool is_std_symbol(const std::string& name) {
  for (const char* prefix : {"_ZNSt", "_ZNKSt", "_ZNVKSt", "_ZSt", "_ZTVNSt", "_ZTINSt", "_ZTSNSt", "_ZTVSt", "_ZTISt",
                             "_ZTSSt", "_ZGVNSt", "_ZGVZNSt", "_ZGVZNKSt"}) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

}  // namespace

const std::vector<std::string>& composable_nvcc_flags() {
  static const std::vector<std::string> f = {"-Xcompiler", "-fvisibility=hidden", "-Xcompiler", "-fno-gnu-unique"};
  return f;
}

std::vector<std::string> composable_cxx_flags(const std::string& compiler_identity) {
  if (compiler_identity.find("clang") != std::string::npos) return {"-fvisibility=hidden"};
  return {"-fvisibility=hidden", "-fno-gnu-unique"};
}

const std::vector<std::string>& abi_entry_points() {
  static const std::vector<std::string> names = {
      "croq_matmul", "croq_matmul_workspace_bytes", "croq_kernel_info", "croq_gemm",
      "croq_gemm_workspace_bytes", "croq_gemm_prepared_bytes", "croq_gemm_prepare"};
  return names;
}

bool is_abi_entry_point(const std::string& name) {
  const auto& n = abi_entry_points();
  return std::find(n.begin(), n.end(), name) != n.end();
}

std::vector<std::string> SymbolReport::warnings() const {
  std::vector<std::string> out;
  if (!is_elf) return out;
  if (!unique.empty()) {
    out.push_back(fmt::format(
        "{} STB_GNU_UNIQUE symbol(s) ({}): every kernel loaded into one process shares them; build with "
        "-fno-gnu-unique or give the function-local statics of templates internal linkage (an unnamed namespace)",
        unique.size(), list_some(unique)));
  }
  if (!exported_extra.empty()) {
    out.push_back(fmt::format(
        "{} exported symbol(s) beyond the kernel ABI ({}): another kernel in the same process may bind to them; "
        "build with -fvisibility=hidden or put the helpers in an unnamed namespace",
        exported_extra.size(), list_some(exported_extra)));
  }
  return out;
}

json SymbolReport::to_json() const {
  json j{{"clean", clean()},
         {"entry_points", entry_points},
         {"exported_extra", exported_extra},
         {"exported_std", exported_std},
         {"unique", unique}};
  if (!is_elf) j["error"] = error;
  return j;
}

SymbolReport scan_symbols_bytes(std::string_view data) {
  SymbolReport r;
  const ElfFile elf = read_elf(data);
  if (!elf.ok) {
    r.error = elf.error;
    return r;
  }
  r.is_elf = true;
  std::set<std::string> extra, unique, entries, std_weak;
  for (const ElfSymbol& s : elf.symbols) {
    if (!s.defined) continue;
    if (s.bind == STB_GNU_UNIQUE) unique.insert(s.name);
    if (!s.dynamic || s.bind == STB_LOCAL) continue;
    if (s.visibility == STV_HIDDEN || s.visibility == STV_INTERNAL) continue;
    if (is_abi_entry_point(s.name)) entries.insert(s.name);
    else if (s.bind == STB_WEAK && is_std_symbol(s.name)) std_weak.insert(s.name);
    else if (!is_linker_symbol(s.name)) extra.insert(s.name);
  }
  r.exported_extra.assign(extra.begin(), extra.end());
  r.unique.assign(unique.begin(), unique.end());
  r.entry_points.assign(entries.begin(), entries.end());
  r.exported_std.assign(std_weak.begin(), std_weak.end());
  return r;
}

SymbolReport scan_symbols(const std::filesystem::path& shared_object) {
  auto content = read_file(shared_object);
  if (!content) {
    SymbolReport r;
    r.error = "file not found: " + shared_object.string();
    return r;
  }
  return scan_symbols_bytes(*content);
}

}  // namespace croq
