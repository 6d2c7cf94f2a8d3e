// Latency-bound fixture: dependent loads (pointer chasing) over 256 MiB with few warps per SM, so
// every warp waits on DRAM latency while neither DRAM bandwidth nor the SM is near its peak.
// next[i] = (a*i + c) mod 2^k with a = 1 mod 4 and c odd is one cycle over all indices
// (Hull-Dobell), and the jumps defeat caches.
#include <cstdint>
#include "common.cuh"

__global__ void build_chain(uint32_t* next, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) next[i] = (1664525u * i + 1013904223u) & (n - 1);
}

__global__ void pointer_chase(const uint32_t* __restrict__ next, uint32_t* out, uint32_t n, int steps) {
  uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t p = (t * 2654435761u) & (n - 1);
  for (int s = 0; s < steps; ++s) p = next[p];
  out[t] = p;
}

int main(int argc, char** argv) {
  int steps = arg_int(argc, argv, 1, 2000);
  const uint32_t n = 1u << 26;  // 64 Mi entries, 256 MiB
  uint32_t *next, *out;
  CK(cudaMalloc(&next, n * sizeof(uint32_t)));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CK(cudaMalloc(&out, sms * 64 * sizeof(uint32_t)));
  build_chain<<<n / 256, 256>>>(next, n);
  profile_protocol("pointer_chase", 1, [&] { pointer_chase<<<sms, 64>>>(next, out, n, steps); });
  return 0;
}
