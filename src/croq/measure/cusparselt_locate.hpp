// Where cuSPARSELt (libcusparseLt.so.0) is looked for. croq never links it: the GPU runner loads
// it at run time for the 2:4 sparse baselines, so croq builds and runs where it is absent and
// says what is missing only where it is needed. The places, in order:
//
//   1. --cusparselt PATH (croq baseline, the runner): the library file, or a folder holding it
//      (directly or in lib/: the Python package's folder works as it is)
//   2. CROQ_CUSPARSELT=PATH, read the same way
//   3. the dynamic loader's own search (LD_LIBRARY_PATH, ld.so.cache): "libcusparseLt.so.0"
//   4. the nvidia-cusparselt Python package (what PyTorch uses): the folder printed by
//      python3 -c "import nvidia.cusparselt as c; print(list(c.__path__)[0])", then lib/
#pragma once
#include <string>
#include <vector>

#include "croq/util/process.hpp"

namespace croq {

inline constexpr const char* k_cusparselt_soname = "libcusparseLt.so.0";

struct LibraryCandidate {
  std::string path;    // a file path, or the bare soname for the loader's search
  std::string origin;  // "--cusparselt", "CROQ_CUSPARSELT", "loader search path", "python package nvidia.cusparselt"
};

// The places to try, in order (a Python package only when python3 finds one; it is asked through
// `runner` with a short time limit).
std::vector<LibraryCandidate> cusparselt_candidates(const std::string& explicit_path, ProcessRunner& runner);
// What to do when none of them loads.
std::string cusparselt_missing_hint();

}  // namespace croq
