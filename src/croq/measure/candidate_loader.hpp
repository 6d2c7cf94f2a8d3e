// Loading a candidate shared object in a runner process: dlopen with every symbol resolved now
// (a missing dependency fails here, not in the middle of timing) and the ABI's entry points
// looked up: version 2's croq_gemm first (with its optional workspace and prepare entries), else
// version 1's croq_matmul. The library stays loaded until the process exits: unloading code that
// registered CUDA kernels is a classic source of crashes at exit.
#pragma once
#include <filesystem>
#include <memory>
#include <string>

#include <croq/kernel_abi.h>

#include "croq/measure/problem.hpp"
#include "croq/util/json.hpp"

namespace croq {

class CandidateLibrary {
 public:
  // nullptr on failure; `reason` is load_failed or missing_symbol and `error` says why.
  static std::unique_ptr<CandidateLibrary> open(const std::filesystem::path& path, std::string& reason,
                                                std::string& error);

  // Version 2 (croq_gemm) when exported; version 1 otherwise.
  croq_gemm_fn gemm = nullptr;
  croq_gemm_workspace_bytes_fn gemm_workspace_bytes = nullptr;      // optional
  croq_gemm_prepared_bytes_fn gemm_prepared_bytes = nullptr;        // optional, with prepare
  croq_gemm_prepare_fn gemm_prepare = nullptr;                      // optional, with prepared_bytes
  croq_matmul_fn matmul = nullptr;
  croq_matmul_workspace_bytes_fn workspace_bytes = nullptr;  // optional (version 1)
  json info;  // croq_kernel_info() parsed, the raw string if it is not JSON, or null

  int abi_version() const { return gemm ? 2 : 1; }
  // Why this candidate cannot compute the problem at all (a version-1 candidate and an operator
  // other than dense matmul), or empty.
  std::string cannot_compute(const ProblemSetup& p) const;
  // Bytes of scratch memory and of prepared A for the problem (0: none, and always 0 where croq
  // does not offer the preparation: prepare_offered).
  size_t workspace_for(const ProblemSetup& p) const;
  size_t prepared_bytes_for(const ProblemSetup& p) const;
  // Why a croq_gemm_prepare the candidate exports is not called for this problem, or empty (no
  // prepare exported, or the problem is one it is offered for).
  std::string prepare_not_offered(const ProblemSetup& p) const;
  // The launch through whichever ABI the candidate exports; `ops` holds every pointer (version 1
  // uses a, b, c and the workspace).
  croq_status launch(const ProblemSetup& p, const croq_gemm_operands& ops, void* stream) const;
  // croq_gemm_prepare on `ops` (a, a_meta and the scales; the other pointers are cleared); nothing
  // where it is not offered.
  croq_status prepare(const ProblemSetup& p, const croq_gemm_operands& ops, void* dst, size_t bytes,
                      void* stream) const;

 private:
  void* m_handle = nullptr;
};

}  // namespace croq
