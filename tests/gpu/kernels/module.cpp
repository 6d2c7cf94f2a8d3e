// One test candidate: exports the kernel ABI's croq_matmul and forwards to the shared test
// kernels with this module's mode (CROQ_TEST_MODE, set by CMake).
#include <croq/kernel_abi.h>

#include "modes.h"

extern "C" croq_status tk_matmul(int mode, const croq_matmul_problem* p, const void* a, const void* b, void* c,
                                 void* workspace, size_t workspace_bytes, void* stream);

CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void* a, const void* b, void* c,
                                    void* workspace, size_t workspace_bytes, void* stream) {
  return tk_matmul(CROQ_TEST_MODE, p, a, b, c, workspace, workspace_bytes, stream);
}

#if CROQ_TEST_MODE == 0 /* TK_NAIVE */
// Version 2 as well, so that the naive kernel also computes the e4m3 problems with scales.
extern "C" croq_status tk_gemm_scaled(const croq_gemm_desc* d, const croq_gemm_operands* o, void* stream);

CROQ_EXPORT croq_status croq_gemm(const croq_gemm_desc* d, const croq_gemm_operands* o, void* stream) {
  if (d->scale_mode != CROQ_SCALE_NONE) return tk_gemm_scaled(d, o, stream);
  if (d->op != CROQ_OP_MATMUL) return CROQ_UNSUPPORTED;
  croq_matmul_problem p{};
  p.abi_version = CROQ_ABI_VERSION;
  p.m = d->m;
  p.n = d->n;
  p.k = d->k;
  p.a_type = d->a_type;
  p.b_type = d->b_type;
  p.c_type = d->c_type;
  p.compute_type = d->compute_type;
  p.b_layout = d->b_layout;
  p.lda = d->lda;
  p.ldb = d->ldb;
  p.ldc = d->ldc;
  return tk_matmul(CROQ_TEST_MODE, &p, o->a, o->b, o->c, o->workspace, o->workspace_bytes, stream);
}
#endif

CROQ_EXPORT const char* croq_kernel_info(void) { return "{\"name\": \"" CROQ_TEST_NAME "\", \"params\": {}}"; }
