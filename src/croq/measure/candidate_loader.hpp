// Loading a candidate shared object in a runner process: dlopen with every symbol resolved now
// (a missing dependency fails here, not in the middle of timing) and the ABI's entry points
// looked up. The library stays loaded until the process exits: unloading code that registered
// CUDA kernels is a classic source of crashes at exit.
#pragma once
#include <filesystem>
#include <memory>
#include <string>

#include <croq/kernel_abi.h>

#include "croq/util/json.hpp"

namespace croq {

class CandidateLibrary {
 public:
  // nullptr on failure; `reason` is load_failed or missing_symbol and `error` says why.
  static std::unique_ptr<CandidateLibrary> open(const std::filesystem::path& path, std::string& reason,
                                                std::string& error);

  croq_matmul_fn matmul = nullptr;
  croq_matmul_workspace_bytes_fn workspace_bytes = nullptr;  // optional
  json info;  // croq_kernel_info() parsed, the raw string if it is not JSON, or null

 private:
  void* m_handle = nullptr;
};

}  // namespace croq
