// dlopen of a candidate (candidate_loader.hpp).
#include "croq/measure/candidate_loader.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

#include "croq/measure/verdict.hpp"

namespace croq {

std::unique_ptr<CandidateLibrary> CandidateLibrary::open(const std::filesystem::path& path, std::string& reason_code,
                                                         std::string& error) {
  std::filesystem::path p = path;
  if (p.is_relative()) p = std::filesystem::absolute(p);
  void* h = ::dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    reason_code = reason::load_failed;
    const char* e = ::dlerror();
    error = fmt::format("dlopen failed: {}", e ? e : "unknown error");
    return nullptr;
  }
  auto lib = std::unique_ptr<CandidateLibrary>(new CandidateLibrary());
  lib->m_handle = h;
  lib->matmul = reinterpret_cast<croq_matmul_fn>(::dlsym(h, CROQ_MATMUL_SYMBOL));
  if (!lib->matmul) {
    reason_code = reason::missing_symbol;
    error = fmt::format("the candidate does not export {} (extern \"C\", see include/croq/kernel_abi.h)",
                        CROQ_MATMUL_SYMBOL);
    return nullptr;
  }
  lib->workspace_bytes = reinterpret_cast<croq_matmul_workspace_bytes_fn>(::dlsym(h, CROQ_MATMUL_WORKSPACE_SYMBOL));
  auto info_fn = reinterpret_cast<croq_kernel_info_fn>(::dlsym(h, CROQ_KERNEL_INFO_SYMBOL));
  if (info_fn) {
    const char* text = info_fn();
    if (text) {
      if (auto j = try_parse_json(text)) lib->info = *j;
      else lib->info = std::string(text).substr(0, 4096);
    }
  }
  return lib;
}

}  // namespace croq
