// Mixed fixture candidates: an elementwise kernel doing K FMAs per float4 read and written (K/4 per
// float). Near K ~ 192 on an H200 the FP32 pipe and DRAM are both busy (the roofline ridge: about
// 30 T FMA/s over 4.8 TB/s / 32 bytes per float4 = 150 G float4/s). Five intensities are profiled
// in one process (one row each in the CSV): the mixed one and the rows on either side.
#include "common.cuh"

template <int K>
__global__ void fma_stream(const float4* __restrict__ in, float4* __restrict__ out, size_t n4) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (; i < n4; i += stride) {
    float4 v = in[i];
#pragma unroll
    for (int k = 0; k < K / 4; ++k) {
      v.x = fmaf(v.x, 1.0001f, 0.5f); v.y = fmaf(v.y, 1.0001f, 0.5f);
      v.z = fmaf(v.z, 1.0001f, 0.5f); v.w = fmaf(v.w, 1.0001f, 0.5f);
    }
    out[i] = v;
  }
}

int main(int argc, char** argv) {
  size_t mib = (size_t)arg_int(argc, argv, 1, 512);
  size_t n4 = mib * (1u << 20) / sizeof(float4);
  float4 *in, *out;
  CK(cudaMalloc(&in, n4 * sizeof(float4)));
  CK(cudaMalloc(&out, n4 * sizeof(float4)));
  CK(cudaMemset(in, 0, n4 * sizeof(float4)));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  dim3 grid(sms * 16), block(256);
  profile_protocol("fma_stream_sweep", 1, [&] {
    fma_stream<64><<<grid, block>>>(in, out, n4);
    fma_stream<128><<<grid, block>>>(in, out, n4);
    fma_stream<192><<<grid, block>>>(in, out, n4);
    fma_stream<256><<<grid, block>>>(in, out, n4);
    fma_stream<384><<<grid, block>>>(in, out, n4);
  });
  return 0;
}
