// A test candidate that delegates to cuBLAS (forbidden): croq must refuse it before it runs, from
// its DT_NEEDED entry and its undefined cublas* symbols.
#include <croq/kernel_abi.h>
#include <cublas_v2.h>

CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void* a, const void* b, void* c, void*, size_t,
                                    void* stream) {
  static cublasHandle_t h = nullptr;
  if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return CROQ_INTERNAL;
  if (p->a_type != CROQ_F16 || p->c_type != CROQ_F32) return CROQ_UNSUPPORTED;
  cublasSetStream(h, static_cast<cudaStream_t>(stream));
  const float one = 1.f, zero = 0.f;
  const bool col = p->b_layout == CROQ_COL_MAJOR;
  cublasStatus_t s = cublasGemmEx(h, col ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(p->n),
                                  static_cast<int>(p->m), static_cast<int>(p->k), &one, b, CUDA_R_16F,
                                  static_cast<int>(col ? p->k : p->n), a, CUDA_R_16F, static_cast<int>(p->k), &zero, c,
                                  CUDA_R_32F, static_cast<int>(p->n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return s == CUBLAS_STATUS_SUCCESS ? CROQ_OK : CROQ_LAUNCH_FAILED;
}
