// Choosing the kernel a profile is about. A CSV may hold several launches (the candidate, the
// harness's input initialisation, a library reference, another process's kernel); the classifier
// must read the candidate's row and say which one it read and why.
//
// Kernel names are sorted into three origins by pattern (documented in docs/classifier.md):
//   library  cuBLAS/cuBLASLt/CUTLASS library kernels: nvjet_*, *gemm*_kernel from cublas, xmma,
//            cutlass::, splitKreduce, gemv...
//   harness  croq's own and typical set-up kernels: croq_harness*, croq_fill*, croq_reference*, ..., *init*, *fill*, *rand*, *poison*,
//            *flush*, *reference*, *verify*
//   candidate everything else.
#pragma once
#include <string>
#include <vector>

#include "croq/profile/ncu_csv.hpp"
#include "croq/util/json.hpp"

namespace croq::profile {

enum class KernelOrigin { candidate, library, harness };
const char* kernel_origin_name(KernelOrigin origin);
KernelOrigin kernel_origin(const std::string& kernel_name);

struct KernelSelection {
  size_t index = 0;           // into NcuCsv::kernels
  std::string reason;         // one line: why this row
  bool only_non_candidates = false;  // every row was a library or harness kernel
  json rows = json::array();  // [{id, kernel, origin, duration_us, chosen}]
};

// `pattern`: an ECMAScript regex searched in the kernel name (empty: automatic choice: the only
// row; else the longest candidate-origin row). Throws Error(not_found) when the pattern matches no
// row, Error(usage) when it is not a valid regex.
KernelSelection select_kernel(const NcuCsv& csv, const std::string& pattern);

}  // namespace croq::profile
