// Memory-bound fixture: a streaming float4 copy of 1 GiB (DRAM at its peak, the SM idle).
#include "common.cuh"

__global__ void stream_copy_f4(const float4* __restrict__ in, float4* __restrict__ out, size_t n4) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (; i < n4; i += stride) out[i] = in[i];
}

int main(int argc, char** argv) {
  size_t mib = (size_t)arg_int(argc, argv, 1, 1024);
  size_t n4 = mib * (1u << 20) / sizeof(float4);
  float4 *in, *out;
  CK(cudaMalloc(&in, n4 * sizeof(float4)));
  CK(cudaMalloc(&out, n4 * sizeof(float4)));
  CK(cudaMemset(in, 1, n4 * sizeof(float4)));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  profile_protocol("stream_copy_f4", 2, [&] { stream_copy_f4<<<sms * 8, 512>>>(in, out, n4); });
  return 0;
}
