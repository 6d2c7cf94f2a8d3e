// What a compile reports about its kernels, read from the compiler's own output:
//  - the resource report ptxas prints with `-Xptxas -v`, per entry function and architecture:
//      ptxas info    : Compiling entry function '_Z6kernelPf' for 'sm_90a'
//      ptxas info    : Function properties for _Z6kernelPf
//          8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
//      ptxas info    : Used 64 registers, used 1 barriers, 8 bytes cumulative stack size, 8704 bytes smem
//    (older toolkits print "Used 10 registers, 352 bytes cmem[0]" and the smem figure only when
//    non-zero); device functions that are not entries have "Function properties" but are not
//    kernels and are left out;
//  - the first error lines of a failed compile (nvcc, g++, ptxas, choreo), for the build JSON.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "croq/util/json.hpp"

namespace croq {

struct KernelResources {
  std::string kernel;     // demangled name without its parameter list ("wmma_matmul<__half, float, false>")
  std::string symbol;     // the mangled entry name as ptxas printed it
  std::string arch;       // "sm_90a"
  int registers = 0;
  long shared_bytes = 0;  // static shared memory
  long stack_bytes = 0;   // stack frame
  long spill_stores = 0;  // bytes
  long spill_loads = 0;   // bytes
  int barriers = 0;

  json to_json() const;
};

std::vector<KernelResources> parse_ptxas_resources(std::string_view compiler_output);

// "_ZN12_GLOBAL__N_16kernelIfEEvPT_" -> "(anonymous namespace)::kernel<float>"; the input when it
// does not demangle (extern "C" kernels).
std::string kernel_display_name(const std::string& symbol);

// The first error lines of a compiler's output (at most `max_lines`): lines that carry an error
// or fatal diagnostic, each followed by the source line the compiler quoted when there is one.
// When no line looks like an error, the last non-empty lines (the tail usually says why).
std::vector<std::string> first_error_lines(std::string_view compiler_output, size_t max_lines = 12);

}  // namespace croq
