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

CROQ_EXPORT const char* croq_kernel_info(void) { return "{\"name\": \"" CROQ_TEST_NAME "\", \"params\": {}}"; }
