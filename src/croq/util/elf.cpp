// ELF64 reader (elf.hpp).
#include "croq/util/elf.hpp"

#include <elf.h>

#include <algorithm>
#include <cstring>

namespace croq {

namespace {

template <typename T>
bool read_at(std::string_view data, uint64_t off, T& out) {
  if (off > data.size() || data.size() - off < sizeof(T)) return false;
  std::memcpy(&out, data.data() + off, sizeof(T));
  return true;
}

std::string cstring_at(std::string_view data, uint64_t off, uint64_t limit_end) {
  if (off >= data.size()) return {};
  uint64_t end = std::min<uint64_t>(limit_end, data.size());
  std::string out;
  for (uint64_t i = off; i < end && data[i] != '\0'; ++i) out += data[i];
  return out;
}

}  // namespace

std::string_view ElfFile::section_bytes(std::string_view data, const ElfSection& s) const {
  if (s.offset > data.size()) return {};
  return data.substr(s.offset, std::min<uint64_t>(s.size, data.size() - s.offset));
}

const char* elf_bind_name(unsigned bind) {
  switch (bind) {
    case STB_LOCAL: return "LOCAL";
    case STB_GLOBAL: return "GLOBAL";
    case STB_WEAK: return "WEAK";
    case STB_GNU_UNIQUE: return "UNIQUE";
  }
  return "OTHER";
}

ElfFile read_elf(std::string_view data) {
  ElfFile f;
  Elf64_Ehdr eh;
  if (!read_at(data, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    f.error = "not an ELF file";
    return f;
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    f.error = "not a 64-bit little-endian ELF file";
    return f;
  }
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0) {
    f.error = "ELF file without section headers";
    return f;
  }
  f.file_type = eh.e_type;
  f.machine = eh.e_machine;
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  for (size_t i = 0; i < sh.size(); ++i) {
    if (!read_at(data, eh.e_shoff + i * sizeof(Elf64_Shdr), sh[i])) {
      f.error = "truncated ELF section table";
      return f;
    }
  }
  f.ok = true;
  auto range = [&](const Elf64_Shdr& s, uint64_t& begin, uint64_t& end) {
    begin = std::min<uint64_t>(s.sh_offset, data.size());
    end = s.sh_type == SHT_NOBITS ? begin : std::min<uint64_t>(s.sh_offset + s.sh_size, data.size());
    if (end < begin) end = begin;  // an overflowing size
  };
  uint64_t nb = 0, ne = 0;
  if (eh.e_shstrndx < sh.size()) range(sh[eh.e_shstrndx], nb, ne);
  for (const Elf64_Shdr& s : sh) {
    ElfSection out;
    out.name = ne > nb ? cstring_at(data, nb + s.sh_name, ne) : std::string();
    out.type = s.sh_type;
    out.flags = s.sh_flags;
    uint64_t b, e;
    range(s, b, e);
    out.offset = b;
    out.size = e - b;
    out.addr = s.sh_addr;
    out.raw_size = s.sh_type == SHT_NOBITS ? 0 : s.sh_size;
    f.sections.push_back(std::move(out));
  }
  // Symbol tables in section order, then DT_NEEDED.
  for (size_t t = 0; t < sh.size(); ++t) {
    const Elf64_Shdr& s = sh[t];
    if ((s.sh_type != SHT_DYNSYM && s.sh_type != SHT_SYMTAB) || s.sh_link >= sh.size() ||
        s.sh_entsize != sizeof(Elf64_Sym)) {
      continue;
    }
    uint64_t b, e, sb, se;
    range(s, b, e);
    range(sh[s.sh_link], sb, se);
    for (uint64_t off = b; off + sizeof(Elf64_Sym) <= e; off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      if (!read_at(data, off, sym) || sym.st_name == 0) continue;
      ElfSymbol out;
      out.name = cstring_at(data, sb + sym.st_name, se);
      if (out.name.empty()) continue;
      out.bind = ELF64_ST_BIND(sym.st_info);
      out.type = ELF64_ST_TYPE(sym.st_info);
      out.visibility = ELF64_ST_VISIBILITY(sym.st_other);
      out.defined = sym.st_shndx != SHN_UNDEF;
      out.dynamic = s.sh_type == SHT_DYNSYM;
      out.value = sym.st_value;
      out.table = t;
      f.symbols.push_back(std::move(out));
    }
  }
  for (size_t t = 0; t < sh.size(); ++t) {
    const Elf64_Shdr& s = sh[t];
    if (s.sh_type != SHT_DYNAMIC || s.sh_link >= sh.size()) continue;
    if (f.dynamic_section == static_cast<size_t>(-1)) f.dynamic_section = t;
    uint64_t b, e, sb, se;
    range(s, b, e);
    range(sh[s.sh_link], sb, se);
    for (uint64_t off = b; off + sizeof(Elf64_Dyn) <= e; off += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d;
      if (!read_at(data, off, d) || d.d_tag == DT_NULL) break;
      if (d.d_tag == DT_NEEDED) f.needed.push_back(cstring_at(data, sb + d.d_un.d_val, se));
    }
  }
  return f;
}

}  // namespace croq
