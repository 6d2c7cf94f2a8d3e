// A reader of ELF64 little-endian files (shared objects, relocatable objects, executables) from
// their bytes, without a tool and without loading them: the section table, the symbols of both
// symbol tables and the DT_NEEDED entries. Every offset read from the file is checked against its
// size: a candidate file is untrusted input. Used by the purity scan of candidates
// (measure/elf_scan), the symbol check of `croq build` (build/symbols) and `croq export`.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace croq {

struct ElfSection {
  std::string name;
  uint32_t type = 0;   // SHT_*
  uint64_t flags = 0;  // SHF_*
  uint64_t offset = 0;
  uint64_t size = 0;   // bytes present in the file (0 for SHT_NOBITS)
  uint64_t addr = 0;   // sh_addr: where the section is loaded
  uint64_t raw_size = 0;  // sh_size as written (larger than `size` when the file is truncated)
};

struct ElfSymbol {
  std::string name;
  unsigned bind = 0;        // STB_LOCAL, STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE
  unsigned type = 0;        // STT_*
  unsigned visibility = 0;  // STV_DEFAULT, STV_HIDDEN, ...
  bool defined = false;     // st_shndx != SHN_UNDEF
  bool dynamic = false;     // from .dynsym (else .symtab)
  uint64_t value = 0;       // st_value
  size_t table = 0;         // index of the symbol table's section
};

struct ElfFile {
  bool ok = false;
  std::string error;  // why the bytes are not a readable ELF64 file
  uint16_t file_type = 0;  // ET_REL, ET_DYN, ET_EXEC
  uint16_t machine = 0;    // EM_X86_64, EM_AARCH64, ...
  std::vector<ElfSection> sections;
  std::vector<ElfSymbol> symbols;   // every symbol table, in section order; unnamed entries left out
  std::vector<std::string> needed;  // DT_NEEDED entries
  size_t dynamic_section = static_cast<size_t>(-1);  // the section holding them

  // The bytes of a section present in the file (empty for SHT_NOBITS or out of range).
  std::string_view section_bytes(std::string_view data, const ElfSection& s) const;
};

// `data` must outlive nothing: the result holds copies.
ElfFile read_elf(std::string_view data);

// "GLOBAL", "WEAK", "UNIQUE", "LOCAL" (readelf's words).
const char* elf_bind_name(unsigned bind);

}  // namespace croq
