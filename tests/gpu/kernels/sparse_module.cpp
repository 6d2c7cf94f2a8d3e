// One 2:4 sparse test candidate: exports the kernel ABI's croq_gemm (and the prepare pair) and
// forwards to the shared sparse test kernels with this module's mode (CROQ_SPARSE_MODE, set by CMake).
#include <croq/kernel_abi.h>

#include "sparse_modes.h"

extern "C" croq_status sk_gemm(int mode, const croq_gemm_desc* d, const croq_gemm_operands* o, void* stream);
extern "C" size_t sk_prepared_bytes(int mode, const croq_gemm_desc* d);
extern "C" croq_status sk_prepare(int mode, const croq_gemm_desc* d, const croq_gemm_operands* o, void* out,
                                  size_t bytes, void* stream);

CROQ_EXPORT croq_status croq_gemm(const croq_gemm_desc* d, const croq_gemm_operands* o, void* stream) {
  return sk_gemm(CROQ_SPARSE_MODE, d, o, stream);
}

CROQ_EXPORT size_t croq_gemm_prepared_bytes(const croq_gemm_desc* d) { return sk_prepared_bytes(CROQ_SPARSE_MODE, d); }

CROQ_EXPORT croq_status croq_gemm_prepare(const croq_gemm_desc* d, const croq_gemm_operands* o, void* a_prepared,
                                          size_t bytes, void* stream) {
  return sk_prepare(CROQ_SPARSE_MODE, d, o, a_prepared, bytes, stream);
}

CROQ_EXPORT const char* croq_kernel_info(void) { return "{\"name\": \"" CROQ_TEST_NAME "\", \"params\": {}}"; }
