// What croq reads from a Triton candidate's source without running Python: the kernels it
// compiles (functions decorated with @triton.jit, possibly under @triton.autotune), whose names
// are the names of the compiled GPU kernels (croq profile's ncu filter), and the @autotune
// decorators (allowed only in iter000, the croq-tune skill's rule: a later iteration pins the
// configuration it measured).
#pragma once
#include <string>
#include <vector>

namespace croq {

struct TritonDecorator {
  int line = 0;          // 1-based
  std::string text;      // the decorator line, trimmed
};

// Functions decorated with jit (`@triton.jit`, `@jit`, `@triton.jit(...)`, `@tl.jit`...), in
// source order.
std::vector<std::string> triton_jit_kernels(const std::string& source);
// Decorators naming autotune (`@triton.autotune(...)`, `@autotune(...)`).
std::vector<TritonDecorator> triton_autotune_decorators(const std::string& source);
// An ncu --kernel-name regex matching exactly those kernels ("^(_croq_mm|_croq_reduce)$"), or
// empty when there are none.
std::string triton_kernel_regex(const std::vector<std::string>& kernels);
// Why an iteration may not use @triton.autotune, or empty: only iter000 (the baseline) may.
std::string triton_autotune_refusal(const std::string& source, const std::string& kernel);

}  // namespace croq
