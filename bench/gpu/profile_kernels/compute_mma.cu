// Compute-bound fixture (tensor cores): each warp loads its WMMA fragments once from shared
// memory, then issues independent mma_sync chains on registers only (HMMA.16816.F32).
#include <mma.h>
#include <cuda_fp16.h>
#include "common.cuh"

using namespace nvcuda;

__global__ void wmma_register_loop(float* out, int iters) {
  __shared__ __half tile[16 * 16];
  for (int i = threadIdx.x; i < 256; i += blockDim.x) tile[i] = __float2half(0.001f * (i % 7));
  __syncthreads();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c0, c1, c2, c3;
  wmma::load_matrix_sync(a, tile, 16);
  wmma::load_matrix_sync(b, tile, 16);
  wmma::fill_fragment(c0, 0.f);
  wmma::fill_fragment(c1, 0.f);
  wmma::fill_fragment(c2, 0.f);
  wmma::fill_fragment(c3, 0.f);
  for (int i = 0; i < iters; ++i) {
    wmma::mma_sync(c0, a, b, c0);
    wmma::mma_sync(c1, a, b, c1);
    wmma::mma_sync(c2, a, b, c2);
    wmma::mma_sync(c3, a, b, c3);
  }
  for (int i = 0; i < c0.num_elements; ++i) c0.x[i] += c1.x[i] + c2.x[i] + c3.x[i];
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  wmma::store_matrix_sync(out + (size_t)warp * 256, c0, 16, wmma::mem_row_major);
}

int main(int argc, char** argv) {
  int iters = arg_int(argc, argv, 1, 8192);
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int blocks = sms * 4, threads = 256;
  float* out;
  CK(cudaMalloc(&out, (size_t)blocks * (threads / 32) * 256 * sizeof(float)));
  profile_protocol("wmma_register_loop", 2, [&] { wmma_register_loop<<<blocks, threads>>>(out, iters); });
  return 0;
}
