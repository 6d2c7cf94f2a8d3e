// Compute-bound fixture (FP32 pipe): eight independent FFMA chains per thread in registers, no
// memory traffic but one store per thread.
#include "common.cuh"

__global__ void fma_chains(float* out, int iters, float a, float b) {
  float r0 = threadIdx.x, r1 = r0 + 1, r2 = r0 + 2, r3 = r0 + 3, r4 = r0 + 4, r5 = r0 + 5, r6 = r0 + 6, r7 = r0 + 7;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      r0 = fmaf(r0, a, b); r1 = fmaf(r1, a, b); r2 = fmaf(r2, a, b); r3 = fmaf(r3, a, b);
      r4 = fmaf(r4, a, b); r5 = fmaf(r5, a, b); r6 = fmaf(r6, a, b); r7 = fmaf(r7, a, b);
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = r0 + r1 + r2 + r3 + r4 + r5 + r6 + r7;
}

int main(int argc, char** argv) {
  int iters = arg_int(argc, argv, 1, 4096);
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int blocks = sms * 8, threads = 256;
  float* out;
  CK(cudaMalloc(&out, (size_t)blocks * threads * sizeof(float)));
  profile_protocol("fma_chains", 2, [&] { fma_chains<<<blocks, threads>>>(out, iters, 0.9999f, 0.0001f); });
  return 0;
}
