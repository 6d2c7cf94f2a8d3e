// The library baseline: cublasGemmEx f16 -> f32 (compute f32) at N^3, one launch profiled after
// warm-up. Its profile is the baseline fixture and its report the source of the cuBLAS kernel's
// SASS (ncu --page source --print-source sass). Usage: gemm_cublas [N=4096]
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include "common.cuh"

int main(int argc, char** argv) {
  int n = arg_int(argc, argv, 1, 4096);
  __half *a, *b;
  float* c;
  CK(cudaMalloc(&a, (size_t)n * n * sizeof(__half)));
  CK(cudaMalloc(&b, (size_t)n * n * sizeof(__half)));
  CK(cudaMalloc(&c, (size_t)n * n * sizeof(float)));
  CK(cudaMemset(a, 0x3c, (size_t)n * n * sizeof(__half)));
  CK(cudaMemset(b, 0x3c, (size_t)n * n * sizeof(__half)));
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cublasCreate failed\n");
    return 1;
  }
  const float one = 1.f, zero = 0.f;
  profile_protocol("cublas_gemm_ex", 3, [&] {
    cublasStatus_t s = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, CUDA_R_16F, n, a, CUDA_R_16F, n, &zero,
                                    c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) {
      std::fprintf(stderr, "cublasGemmEx failed: %d\n", (int)s);
      std::exit(1);
    }
  });
  cublasDestroy(h);
  return 0;
}
