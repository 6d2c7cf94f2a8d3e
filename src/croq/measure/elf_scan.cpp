// The purity check of a candidate (elf_scan.hpp), on util/elf's reader of the file (every offset
// checked against its size: a candidate file is untrusted input).
#include "croq/measure/elf_scan.hpp"

#include <elf.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <iterator>
#include <map>
#include <set>

#include <fmt/format.h>

#include "croq/util/elf.hpp"
#include "croq/util/fs.hpp"

namespace croq {

namespace {

// GPU GEMM libraries, and the CPU BLAS libraries the cpp backend's baseline is (OpenBLAS) or could be.
const char* const k_forbidden_libraries[] = {"cublas", "cudnn", "cusparselt", "cutlass", "libtorch",
                                             "openblas", "libblas", "libcblas", "libmkl", "libblis"};
const char* const k_forbidden_prefixes[] = {"cublas", "cudnn", "cusparseLt", "cblas_", "openblas_", "mkl_", "bli_"};
// The Fortran BLAS entry points (undefined: resolved from a BLAS the process has loaded, the cpp
// runner's own OpenBLAS included).
const char* const k_forbidden_names[] = {"sgemm_", "dgemm_", "cgemm_", "zgemm_", "sgemv_", "dgemv_", "sgemmt_",
                                         "dgemmt_", "sgemm", "dgemm"};
// Process control: a candidate runs inside the runner and may start no other process (one that
// outlives the runner can rewrite its output) nor touch another's memory. (Not syscall(): CUDA's
// static runtime, in every nvcc-built candidate, imports it. The cpp runner also forbids these
// calls to the running candidate by seccomp.)
const char* const k_process_calls[] = {"fork",   "vfork",  "clone",       "clone3",       "execve", "execveat",
                                       "fexecve", "execv", "execvp",      "execvpe",      "execl",  "execlp",
                                       "execle", "system", "popen",       "posix_spawn",  "posix_spawnp",
                                       "daemon", "ptrace", "process_vm_writev", "process_vm_readv"};
const char* const k_forbidden_symbol_parts[] = {"7cutlass4gemm6device", "cutlass::gemm::device"};
const char* const k_forbidden_strings[] = {"libcublas", "libcudnn", "libcusparseLt", "cublasGemmEx", "cublasSgemm",
                                           "cublasHgemm", "cublasGemmStridedBatched", "cublasLtMatmul",
                                           "cudnnConvolutionForward", "cutlass::gemm::device", "libopenblas",
                                           "cblas_sgemm", "cblas_dgemm"};

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
    else if (f.kind == "process_call") out += "calls " + f.what + " (a candidate starts no process)";
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
void scan_call_sites(std::string_view data, const ElfFile& elf, const std::map<uint64_t, std::string>& targets,
                     std::vector<ElfFinding>& out) {
  std::set<std::string> found;
  for (const ElfSection& s : elf.sections) {
    if (s.type != SHT_PROGBITS || !(s.flags & SHF_EXECINSTR)) continue;
    if (s.size != s.raw_size) continue;  // runs past the end of the file
    const unsigned char* p = reinterpret_cast<const unsigned char*>(data.data() + s.offset);
    const uint64_t n = s.size;
    auto hit = [&](uint64_t target, const char* how) {
      auto it = targets.find(target);
      if (it != targets.end() && found.insert(it->second).second) out.push_back({how, it->second});
    };
    if (elf.machine == EM_X86_64) {
      for (uint64_t i = 0; i + 5 <= n; ++i) {
        if (p[i] == 0xE8 || p[i] == 0xE9) {
          int32_t rel;
          std::memcpy(&rel, p + i + 1, 4);
          hit(s.addr + i + 5 + static_cast<int64_t>(rel), "call");
        }
        if (i + 7 <= n && (p[i] == 0x48 || p[i] == 0x4C) && p[i + 1] == 0x8D && (p[i + 2] & 0xC7) == 0x05) {
          int32_t rel;
          std::memcpy(&rel, p + i + 3, 4);
          hit(s.addr + i + 7 + static_cast<int64_t>(rel), "call");
        }
      }
    } else if (elf.machine == EM_AARCH64) {
      for (uint64_t i = 0; i + 4 <= n; i += 4) {
        uint32_t insn;
        std::memcpy(&insn, p + i, 4);
        if ((insn & 0x7C000000u) == 0x14000000u) {  // b / bl imm26
          int64_t imm = static_cast<int64_t>(insn & 0x03FFFFFFu);
          if (imm & 0x02000000) imm -= 0x04000000;
          hit(s.addr + i + static_cast<uint64_t>(imm * 4), "call");
        } else if ((insn & 0x9F000000u) == 0x10000000u) {  // adr
          int64_t imm = static_cast<int64_t>(((insn >> 5) & 0x7FFFFu) << 2 | ((insn >> 29) & 3u));
          if (imm & 0x100000) imm -= 0x200000;
          hit(s.addr + i + static_cast<uint64_t>(imm), "call");
        }
      }
    }
  }
}

}  // namespace

PurityReport scan_elf_bytes(std::string_view data) {
  PurityReport r;
  const ElfFile elf = read_elf(data);
  if (!elf.ok) {
    r.error = elf.error;
    return r;
  }
  r.is_elf = true;
  std::set<std::string> seen;
  auto add = [&](const std::string& kind, const std::string& what) {
    if (seen.insert(kind + ":" + what).second) r.forbidden.push_back({kind, what});
  };

  const std::set<std::string> sync_names(std::begin(k_synchronising_calls), std::end(k_synchronising_calls));
  std::map<uint64_t, std::string> sync_targets;  // defined (linked-in) synchronising functions
  std::set<std::string> sync_imported;
  // Section by section, in the file's order: DT_NEEDED names, then each symbol table's symbols.
  size_t next_symbol = 0;
  for (size_t i = 0; i < elf.sections.size(); ++i) {
    if (i == elf.dynamic_section) {
      for (const std::string& name : elf.needed) {
        r.needed.push_back(name);
        std::string l = lower(name);
        for (const char* lib : k_forbidden_libraries) {
          if (l.find(lib) != std::string::npos) add("needed", name);
        }
      }
    }
    for (; next_symbol < elf.symbols.size() && elf.symbols[next_symbol].table == i; ++next_symbol) {
      const ElfSymbol& sym = elf.symbols[next_symbol];
      const std::string& name = sym.name;
      const bool undefined = !sym.defined;
      if (undefined && sym.dynamic) ++r.undefined_symbols;
      if (undefined) {
        for (const char* p : k_forbidden_prefixes) {
          if (name.rfind(p, 0) == 0) add("undefined_symbol", name);
        }
        const std::string plain = name.substr(0, name.find('@'));
        for (const char* n : k_forbidden_names) {
          if (plain == n) add("undefined_symbol", name);
        }
        if (sym.dynamic) {
          for (const char* n : k_process_calls) {
            if (plain == n) add("process_call", plain);
          }
        }
      }
      const std::string base = name.substr(0, name.find('@'));  // cudaMemcpy@libcudart.so.13
      if (sync_names.count(base)) {
        if (undefined && sym.dynamic) {
          if (sync_imported.insert(base).second) r.synchronising.push_back({"undefined_symbol", base});
        } else if (!undefined && sym.type == STT_FUNC && sym.value != 0) {
          sync_targets[sym.value] = base;
        }
      }
      for (const char* part : k_forbidden_symbol_parts) {
        if (name.find(part) != std::string::npos) add("symbol", name.size() > 120 ? fmt::format("{}...", std::string_view(name).substr(0, 120)) : name);
      }
    }
  }
  if (!sync_targets.empty()) scan_call_sites(data, elf, sync_targets, r.synchronising);
  // Strings in sections present at run time.
  for (const ElfSection& s : elf.sections) {
    if (!(s.flags & SHF_ALLOC) || s.type == SHT_NOBITS) continue;
    if (s.type == SHT_DYNSYM || s.type == SHT_SYMTAB) continue;
    std::string_view body = elf.section_bytes(data, s);
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
