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
  lib->gemm = reinterpret_cast<croq_gemm_fn>(::dlsym(h, CROQ_GEMM_SYMBOL));
  lib->matmul = reinterpret_cast<croq_matmul_fn>(::dlsym(h, CROQ_MATMUL_SYMBOL));
  if (!lib->gemm && !lib->matmul) {
    reason_code = reason::missing_symbol;
    error = fmt::format("the candidate exports neither {} (kernel ABI version 2) nor {} (version 1): extern \"C\", "
                        "see include/croq/kernel_abi.h",
                        CROQ_GEMM_SYMBOL, CROQ_MATMUL_SYMBOL);
    return nullptr;
  }
  if (lib->gemm) {
    lib->gemm_workspace_bytes =
        reinterpret_cast<croq_gemm_workspace_bytes_fn>(::dlsym(h, CROQ_GEMM_WORKSPACE_SYMBOL));
    lib->gemm_prepared_bytes =
        reinterpret_cast<croq_gemm_prepared_bytes_fn>(::dlsym(h, CROQ_GEMM_PREPARED_BYTES_SYMBOL));
    lib->gemm_prepare = reinterpret_cast<croq_gemm_prepare_fn>(::dlsym(h, CROQ_GEMM_PREPARE_SYMBOL));
    if ((lib->gemm_prepared_bytes == nullptr) != (lib->gemm_prepare == nullptr)) {
      reason_code = reason::missing_symbol;
      error = fmt::format("the candidate exports only one of {} and {}: they come as a pair (include/croq/kernel_abi.h)",
                          CROQ_GEMM_PREPARED_BYTES_SYMBOL, CROQ_GEMM_PREPARE_SYMBOL);
      return nullptr;
    }
  } else {
    lib->workspace_bytes = reinterpret_cast<croq_matmul_workspace_bytes_fn>(::dlsym(h, CROQ_MATMUL_WORKSPACE_SYMBOL));
  }
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

std::string CandidateLibrary::cannot_compute(const ProblemSetup& p) const {
  if (!gemm && (p.sparse || p.scale_mode != CROQ_SCALE_NONE)) {
    return fmt::format("the candidate implements kernel ABI version 1 ({}, dense matmul only) and the problem is "
                       "{}{}: export {} (version 2, include/croq/kernel_abi.h)",
                       CROQ_MATMUL_SYMBOL, p.desc.op,
                       p.scale_mode == CROQ_SCALE_TENSOR ? " with per-tensor scales (e4m3 inputs)" : "",
                       CROQ_GEMM_SYMBOL);
  }
  return {};
}

size_t CandidateLibrary::workspace_for(const ProblemSetup& p) const {
  if (gemm) return gemm_workspace_bytes ? gemm_workspace_bytes(&p.gemm) : 0;
  return workspace_bytes ? workspace_bytes(&p.abi) : 0;
}

// croq_gemm_prepare runs off the clock, so croq offers it only where a deployment does the same work
// once: the 2:4 sparse operator, whose A is a weight compressed once. Elsewhere A is an activation
// (the block-scaled operator's per-token scales say so): rearranging it, or its scales, belongs in
// the timed croq_gemm, and a candidate must not move work out of the timing through prepare.
static bool prepare_offered(const ProblemSetup& p) { return p.gemm.op == CROQ_OP_MATMUL_SPARSE24; }

size_t CandidateLibrary::prepared_bytes_for(const ProblemSetup& p) const {
  if (!prepare_offered(p)) return 0;
  return gemm && gemm_prepared_bytes ? gemm_prepared_bytes(&p.gemm) : 0;
}

std::string CandidateLibrary::prepare_not_offered(const ProblemSetup& p) const {
  if (!gemm || !gemm_prepare || prepare_offered(p)) return {};
  return fmt::format(
      "croq_gemm_prepare was not called: croq offers it for the 2:4 sparse operator only (its A is a weight, "
      "compressed once); for {} A is an activation and work on it belongs in the timed croq_gemm "
      "(operands->a_prepared is NULL)",
      p.desc.op);
}

croq_status CandidateLibrary::launch(const ProblemSetup& p, const croq_gemm_operands& ops, void* stream) const {
  if (gemm) return gemm(&p.gemm, &ops, stream);
  if (p.sparse || p.scale_mode != CROQ_SCALE_NONE) return CROQ_UNSUPPORTED;
  return matmul(&p.abi, ops.a, ops.b, ops.c, ops.workspace, ops.workspace_bytes, stream);
}

croq_status CandidateLibrary::prepare(const ProblemSetup& p, const croq_gemm_operands& ops, void* dst, size_t bytes,
                                      void* stream) const {
  if (!gemm_prepare || !prepare_offered(p)) return CROQ_OK;
  croq_gemm_operands in{};
  in.a = ops.a;
  in.a_meta = ops.a_meta;
  in.a_scale = ops.a_scale;
  in.b_scale = ops.b_scale;
  return gemm_prepare(&p.gemm, &in, dst, bytes, stream);
}

}  // namespace croq
