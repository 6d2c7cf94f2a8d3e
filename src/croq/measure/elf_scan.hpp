// Purity check of a candidate shared object, before it runs: a candidate must compute, not call a
// vendor library. Read from the ELF file itself (no tool, no loading):
//   - DT_NEEDED entries naming cuBLAS, cuBLASLt, cuDNN, cuSPARSELt, CUTLASS or libtorch libraries;
//   - undefined dynamic symbols of those libraries' C APIs (cublas*, cublasLt*, cudnn*, cusparseLt*);
//   - any symbol (dynamic or static table, defined or not) of a CUTLASS device-level GEMM
//     (cutlass::gemm::device::..., mangled "7cutlass4gemm6device"); CuTe and CUTLASS building
//     blocks below the device level (what hand-written and CroqTile kernels use) are allowed;
//   - strings in sections loaded at run time (.rodata, .dynstr, .data, ...) that name those
//     libraries or their GEMM entry points ("libcublas", "cublasGemmEx", ...): the trace of a
//     dlopen/dlsym detour. Debug sections are not read, so headers seen by -g do not count;
//   - separately (PurityReport::synchronising), calls of synchronising or host-reading CUDA
//     functions: imported, or call sites (x86-64 call/jmp/lea, AArch64 bl/b/adr) aimed at the
//     statically linked runtime's copy of them, found through the static symbol table.
// A deliberately obfuscated call (strings built at run time) is beyond a static scan; the runner's
// timing and verification still apply to such a candidate.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace croq {

struct ElfFinding {
  std::string kind;  // needed | undefined_symbol | symbol | string
  std::string what;  // the library name, symbol or string found
};

struct PurityReport {
  bool is_elf = false;
  std::string error;                   // why the file could not be read as ELF64
  std::vector<std::string> needed;     // every DT_NEEDED entry
  std::vector<ElfFinding> forbidden;
  size_t undefined_symbols = 0;
  // Calls that wait for the device or copy device memory to the host synchronously
  // (cudaDeviceSynchronize, cudaStreamSynchronize, cudaMemcpy, cuCtxSynchronize, ... see
  // k_synchronising_calls): kind "undefined_symbol" when imported from a shared runtime, "call"
  // when the candidate's code calls the copy of the runtime linked into it (nvcc links cudart
  // statically: its functions are in every candidate, so only a call site says one is used).
  // Inside croq_matmul such a call lets a candidate see its output or time itself between a checked
  // and a timed launch; an enforced task refuses it (verdict LIBRARY_CALL_FORBIDDEN, reason
  // synchronising_call). Not part of clean().
  std::vector<ElfFinding> synchronising;

  bool clean() const { return is_elf && forbidden.empty(); }
  // "DT_NEEDED libcublas.so.13; undefined symbol cublasGemmEx" (at most a few findings)
  std::string summary() const;
  // "calls cudaDeviceSynchronize, cudaMemcpy" ("" when none)
  std::string synchronising_summary() const;
};

// The synchronising or host-reading CUDA runtime and driver functions the scan looks for.
const std::vector<std::string>& synchronising_call_names();

PurityReport scan_elf_bytes(std::string_view data);
PurityReport scan_candidate(const std::filesystem::path& path);

}  // namespace croq
