// Looking for cuSPARSELt (cusparselt_locate.hpp).
#include "croq/measure/cusparselt_locate.hpp"

#include <cstdlib>
#include <filesystem>

#include "croq/util/text.hpp"

namespace croq {

namespace {

namespace fs = std::filesystem;

// A file as given; a folder: the library in it or in its lib/ (the Python package's layout).
std::string resolve(const std::string& given) {
  std::error_code ec;
  const fs::path p = given;
  if (!fs::is_directory(p, ec)) return given;
  for (const fs::path& c : {p / k_cusparselt_soname, p / "lib" / k_cusparselt_soname}) {
    if (fs::exists(c, ec)) return c.string();
  }
  return (p / "lib" / k_cusparselt_soname).string();
}

}  // namespace

std::vector<LibraryCandidate> cusparselt_candidates(const std::string& explicit_path, ProcessRunner& runner) {
  std::vector<LibraryCandidate> out;
  if (!explicit_path.empty()) out.push_back({resolve(explicit_path), "--cusparselt"});
  if (const char* env = std::getenv("CROQ_CUSPARSELT"); env && *env) out.push_back({resolve(env), "CROQ_CUSPARSELT"});
  out.push_back({k_cusparselt_soname, "loader search path"});
  ProcessSpec spec;
  spec.argv = {"python3", "-c", "import nvidia.cusparselt as c; print(list(c.__path__)[0])"};
  spec.timeout = std::chrono::milliseconds(30000);
  spec.max_capture_bytes = 1 << 16;
  ProcessResult r = runner.run(spec);
  if (r.ok()) {
    const std::string dir = trim(r.out);
    std::error_code ec;
    if (!dir.empty() && fs::is_directory(dir, ec)) out.push_back({resolve(dir), "python package nvidia.cusparselt"});
  }
  return out;
}

std::string cusparselt_missing_hint() {
  return "install cuSPARSELt (pip install nvidia-cusparselt-cu13, or -cu12 for CUDA 12: the PyTorch environment "
         "has it), or point croq at libcusparseLt.so.0 with --cusparselt PATH or CROQ_CUSPARSELT=PATH (the file, "
         "or the folder holding it or its lib/); a dense-only baseline: croq baseline --library cublaslt";
}

}  // namespace croq
