// ELF64 reader for the purity check (elf_scan.hpp). Every offset read from the file is checked
// against its size: a candidate file is untrusted input.
#include "croq/measure/elf_scan.hpp"

#include <elf.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <iterator>
#include <map>
#include <set>

#include <fmt/format.h>

#include "croq/util/fs.hpp"

namespace croq {

namespace {

const char* const k_forbidden_libraries[] = {"cublas", "cudnn", "cusparselt", "cutlass", "libtorch"};
const char* const k_forbidden_prefixes[] = {"cublas", "cudnn", "cusparseLt"};
const char* const k_forbidden_symbol_parts[] = {"7cutlass4gemm6device", "cutlass::gemm::device"};
const char* const k_forbidden_strings[] = {"libcublas", "libcudnn", "libcusparseLt", "cublasGemmEx", "cublasSgemm",
                                           "cublasHgemm", "cublasGemmStridedBatched", "cublasLtMatmul",
                                           "cudnnConvolutionForward", "cutlass::gemm::device"};

const char* const k_synchronising_calls[] = {
    // runtime API: waits for the device or a stream, or copies device memory to the host and waits
    "cudaDeviceSynchronize", "cudaThreadSynchronize", "cudaStreamSynchronize", "cudaStreamSynchronize_ptsz",
    "cudaEventSynchronize", "cudaStreamQuery", "cudaStreamQuery_ptsz", "cudaEventQuery", "cudaMemcpy",
    "cudaMemcpy_ptds", "cudaMemcpy2D", "cudaMemcpy2D_ptds", "cudaMemcpy3D", "cudaMemcpy3D_ptds",
    "cudaMemcpyFromSymbol", "cudaMemcpyFromSymbol_ptds", "cudaMemcpyPeer", "cudaDeviceReset",
    // driver API
    "cuCtxSynchronize", "cuStreamSynchronize", "cuStreamSynchronize_ptsz", "cuEventSynchronize", "cuStreamQuery",
    "cuStreamQuery_ptsz", "cuEventQuery", "cuMemcpy", "cuMemcpy_ptds", "cuMemcpyDtoH", "cuMemcpyDtoH_v2",
    "cuMemcpyDtoH_v2_ptds", "cuMemcpy2D", "cuMemcpy2D_v2", "cuMemcpy2D_v2_ptds", "cuMemcpy3D", "cuMemcpy3D_v2",
    "cuMemcpy3D_v2_ptds", "cuMemcpyPeer", "cuMemcpyPeer_ptds"};

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

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string PurityReport::summary() const {
  if (!is_elf) return error;
  std::string out;
  size_t shown = 0;
  for (const auto& f : forbidden) {
    if (shown == 4) {
      out += fmt::format("; and {} more", forbidden.size() - shown);
      break;
    }
    if (!out.empty()) out += "; ";
    if (f.kind == "needed") out += "links " + f.what;
    else if (f.kind == "undefined_symbol") out += "calls " + f.what;
    else if (f.kind == "symbol") out += "contains " + f.what;
    else out += "names \"" + f.what + "\"";
    ++shown;
  }
  return out.empty() ? "clean" : out;
}

const std::vector<std::string>& synchronising_call_names() {
  static const std::vector<std::string> names(std::begin(k_synchronising_calls), std::end(k_synchronising_calls));
  return names;
}

std::string PurityReport::synchronising_summary() const {
  std::string out;
  for (const auto& f : synchronising) {
    if (out.find(f.what) != std::string::npos) continue;
    out += (out.empty() ? "calls " : ", ") + f.what;
  }
  return out;
}

namespace {

// Call sites in the executable sections aimed at one of `targets` (address -> name): x86-64 call
// and jmp rel32 and RIP-relative lea (a function pointer taken), AArch64 bl, b and adr. A byte
// pattern can match by chance inside other instructions or data; one exact 32-bit target among
// a few dozen addresses is a chance of about 1e-8 per byte, and the runtime's own code was seen
// to call none of these functions (only the candidate's code does).
void scan_call_sites(std::string_view data, const std::vector<Elf64_Shdr>& sh, uint16_t machine,
                     const std::map<uint64_t, std::string>& targets, std::vector<ElfFinding>& out) {
  std::set<std::string> found;
  for (const Elf64_Shdr& s : sh) {
    if (s.sh_type != SHT_PROGBITS || !(s.sh_flags & SHF_EXECINSTR)) continue;
    if (s.sh_offset > data.size() || data.size() - s.sh_offset < s.sh_size) continue;
    const unsigned char* p = reinterpret_cast<const unsigned char*>(data.data() + s.sh_offset);
    const uint64_t n = s.sh_size;
    auto hit = [&](uint64_t target, const char* how) {
      auto it = targets.find(target);
      if (it != targets.end() && found.insert(it->second).second) out.push_back({how, it->second});
    };
    if (machine == EM_X86_64) {
      for (uint64_t i = 0; i + 5 <= n; ++i) {
        if (p[i] == 0xE8 || p[i] == 0xE9) {
          int32_t rel;
          std::memcpy(&rel, p + i + 1, 4);
          hit(s.sh_addr + i + 5 + static_cast<int64_t>(rel), "call");
        }
        if (i + 7 <= n && (p[i] == 0x48 || p[i] == 0x4C) && p[i + 1] == 0x8D && (p[i + 2] & 0xC7) == 0x05) {
          int32_t rel;
          std::memcpy(&rel, p + i + 3, 4);
          hit(s.sh_addr + i + 7 + static_cast<int64_t>(rel), "call");
        }
      }
    } else if (machine == EM_AARCH64) {
      for (uint64_t i = 0; i + 4 <= n; i += 4) {
        uint32_t insn;
        std::memcpy(&insn, p + i, 4);
        if ((insn & 0x7C000000u) == 0x14000000u) {  // b / bl imm26
          int64_t imm = static_cast<int64_t>(insn & 0x03FFFFFFu);
          if (imm & 0x02000000) imm -= 0x04000000;
          hit(s.sh_addr + i + static_cast<uint64_t>(imm * 4), "call");
        } else if ((insn & 0x9F000000u) == 0x10000000u) {  // adr
          int64_t imm = static_cast<int64_t>(((insn >> 5) & 0x7FFFFu) << 2 | ((insn >> 29) & 3u));
          if (imm & 0x100000) imm -= 0x200000;
          hit(s.sh_addr + i + static_cast<uint64_t>(imm), "call");
        }
      }
    }
  }
}

}  // namespace

PurityReport scan_elf_bytes(std::string_view data) {
  PurityReport r;
  Elf64_Ehdr eh;
  if (!read_at(data, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    r.error = "not an ELF file";
    return r;
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    r.error = "not a 64-bit little-endian ELF file";
    return r;
  }
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0) {
    r.error = "ELF file without section headers";
    return r;
  }
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  for (size_t i = 0; i < sh.size(); ++i) {
    if (!read_at(data, eh.e_shoff + i * sizeof(Elf64_Shdr), sh[i])) {
      r.error = "truncated ELF section table";
      return r;
    }
  }
  r.is_elf = true;
  std::set<std::string> seen;
  auto add = [&](const std::string& kind, const std::string& what) {
    if (seen.insert(kind + ":" + what).second) r.forbidden.push_back({kind, what});
  };
  auto section_range = [&](const Elf64_Shdr& s, uint64_t& begin, uint64_t& end) {
    begin = std::min<uint64_t>(s.sh_offset, data.size());
    end = s.sh_type == SHT_NOBITS ? begin : std::min<uint64_t>(s.sh_offset + s.sh_size, data.size());
  };

  const std::set<std::string> sync_names(std::begin(k_synchronising_calls), std::end(k_synchronising_calls));
  std::map<uint64_t, std::string> sync_targets;  // defined (linked-in) synchronising functions
  std::set<std::string> sync_imported;
  for (const Elf64_Shdr& s : sh) {
    // Dynamic section: DT_NEEDED names in the linked string table.
    if (s.sh_type == SHT_DYNAMIC && s.sh_link < sh.size()) {
      uint64_t b, e, sb, se;
      section_range(s, b, e);
      section_range(sh[s.sh_link], sb, se);
      for (uint64_t off = b; off + sizeof(Elf64_Dyn) <= e; off += sizeof(Elf64_Dyn)) {
        Elf64_Dyn d;
        if (!read_at(data, off, d) || d.d_tag == DT_NULL) break;
        if (d.d_tag != DT_NEEDED) continue;
        std::string name = cstring_at(data, sb + d.d_un.d_val, se);
        r.needed.push_back(name);
        std::string l = lower(name);
        for (const char* lib : k_forbidden_libraries) {
          if (l.find(lib) != std::string::npos) add("needed", name);
        }
      }
    }
    // Symbol tables.
    if ((s.sh_type == SHT_DYNSYM || s.sh_type == SHT_SYMTAB) && s.sh_link < sh.size() &&
        s.sh_entsize == sizeof(Elf64_Sym)) {
      uint64_t b, e, sb, se;
      section_range(s, b, e);
      section_range(sh[s.sh_link], sb, se);
      for (uint64_t off = b; off + sizeof(Elf64_Sym) <= e; off += sizeof(Elf64_Sym)) {
        Elf64_Sym sym;
        if (!read_at(data, off, sym) || sym.st_name == 0) continue;
        std::string name = cstring_at(data, sb + sym.st_name, se);
        if (name.empty()) continue;
        const bool undefined = sym.st_shndx == SHN_UNDEF;
        if (undefined && s.sh_type == SHT_DYNSYM) ++r.undefined_symbols;
        if (undefined) {
          for (const char* p : k_forbidden_prefixes) {
            if (name.rfind(p, 0) == 0) add("undefined_symbol", name);
          }
        }
        const std::string base = name.substr(0, name.find('@'));  // cudaMemcpy@libcudart.so.13
        if (sync_names.count(base)) {
          if (undefined && s.sh_type == SHT_DYNSYM) {
            if (sync_imported.insert(base).second) r.synchronising.push_back({"undefined_symbol", base});
          } else if (!undefined && ELF64_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_value != 0) {
            sync_targets[sym.st_value] = base;
          }
        }
        for (const char* part : k_forbidden_symbol_parts) {
          if (name.find(part) != std::string::npos) add("symbol", name.size() > 120 ? name.substr(0, 120) + "..." : name);
        }
      }
    }
  }
  if (!sync_targets.empty()) scan_call_sites(data, sh, eh.e_machine, sync_targets, r.synchronising);
  // Strings in sections present at run time.
  for (const Elf64_Shdr& s : sh) {
    if (!(s.sh_flags & SHF_ALLOC) || s.sh_type == SHT_NOBITS) continue;
    if (s.sh_type == SHT_DYNSYM || s.sh_type == SHT_SYMTAB) continue;
    uint64_t b, e;
    section_range(s, b, e);
    std::string_view body = data.substr(b, e - b);
    for (const char* needle : k_forbidden_strings) {
      if (body.find(needle) != std::string_view::npos) add("string", needle);
    }
  }
  // A string already reported as a library or a symbol is not repeated.
  std::vector<ElfFinding> kept;
  for (const auto& f : r.forbidden) {
    bool dup = false;
    if (f.kind == "string") {
      for (const auto& g : r.forbidden) {
        if (g.kind != "string" && g.what.find(f.what) != std::string::npos) dup = true;
      }
    }
    if (!dup) kept.push_back(f);
  }
  r.forbidden = std::move(kept);
  return r;
}

PurityReport scan_candidate(const std::filesystem::path& path) {
  auto content = read_file(path);
  if (!content) {
    PurityReport r;
    r.error = "file not found: " + path.string();
    return r;
  }
  return scan_elf_bytes(*content);
}

}  // namespace croq
