// The naive f16 -> f32 GEMM of include/croq/kernel_abi.h's example (one thread per output, a
// K loop of scalar loads and FFMA): the latency/L1-bound starting point, and the candidate whose
// `ncu --set full` wall time at 4096^3 is recorded. Usage: gemm_naive [N=4096]
#include <cuda_fp16.h>
#include <cstdint>
#include "common.cuh"

__global__ void naive(const __half* a, const __half* b, float* c, int64_t m, int64_t n, int64_t k) {
  int64_t i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m || j >= n) return;
  float acc = 0.f;
  for (int64_t p = 0; p < k; ++p) acc += __half2float(a[i * k + p]) * __half2float(b[p * n + j]);
  c[i * n + j] = acc;
}

int main(int argc, char** argv) {
  int64_t n = arg_int(argc, argv, 1, 4096);
  __half *a, *b;
  float* c;
  CK(cudaMalloc(&a, n * n * sizeof(__half)));
  CK(cudaMalloc(&b, n * n * sizeof(__half)));
  CK(cudaMalloc(&c, n * n * sizeof(float)));
  CK(cudaMemset(a, 0x3c, n * n * sizeof(__half)));
  CK(cudaMemset(b, 0x3c, n * n * sizeof(__half)));
  dim3 block(16, 16), grid((n + 15) / 16, (n + 15) / 16);
  profile_protocol("naive", 1, [&] { naive<<<grid, block>>>(a, b, c, n, n, n); });
  return 0;
}
