// A tiled tensor-core GEMM, f16 -> f32 (WMMA, HMMA.16816.F32 in SASS): 128x128 CTA tile, K step 32,
// 8 warps each computing 64x32 (4x2 fragments), operands staged in shared memory with 128-bit
// loads. The "reasonable hand-written tensor-core kernel" fixture. Usage: gemm_wmma [N=4096]
#include <mma.h>
#include <cuda_fp16.h>
#include "common.cuh"

using namespace nvcuda;
constexpr int BM = 128, BN = 128, BK = 32, PAD = 8;

__global__ void __launch_bounds__(256) wmma_tiled(const __half* a, const __half* b, float* c, int n) {
  __shared__ __half as[BM][BK + PAD];
  __shared__ __half bs[BK][BN + PAD];
  int warp = threadIdx.x / 32, wm = warp / 4, wn = warp % 4;  // 2 x 4 warps: 64 x 32 each
  int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.f);
  for (int k0 = 0; k0 < n; k0 += BK) {
    for (int t = threadIdx.x; t < BM * BK / 8; t += 256) {  // A tile: 128 x 32 halves, 8 per load
      int r = t / (BK / 8), q = (t % (BK / 8)) * 8;
      *reinterpret_cast<int4*>(&as[r][q]) = *reinterpret_cast<const int4*>(&a[(size_t)(row0 + r) * n + k0 + q]);
    }
    for (int t = threadIdx.x; t < BK * BN / 8; t += 256) {  // B tile: 32 x 128 halves
      int r = t / (BN / 8), q = (t % (BN / 8)) * 8;
      *reinterpret_cast<int4*>(&bs[r][q]) = *reinterpret_cast<const int4*>(&b[(size_t)(k0 + r) * n + col0 + q]);
    }
    __syncthreads();
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[4];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb[2];
      for (int i = 0; i < 4; ++i) wmma::load_matrix_sync(fa[i], &as[wm * 64 + i * 16][kk], BK + PAD);
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], &bs[kk][wn * 32 + j * 16], BN + PAD);
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(&c[(size_t)(row0 + wm * 64 + i * 16) * n + col0 + wn * 32 + j * 16], acc[i][j], n,
                              wmma::mem_row_major);
}

int main(int argc, char** argv) {
  int n = arg_int(argc, argv, 1, 4096);
  if (n % 128) {
    std::fprintf(stderr, "N must be a multiple of 128\n");
    return 2;
  }
  __half *a, *b;
  float* c;
  CK(cudaMalloc(&a, (size_t)n * n * sizeof(__half)));
  CK(cudaMalloc(&b, (size_t)n * n * sizeof(__half)));
  CK(cudaMalloc(&c, (size_t)n * n * sizeof(float)));
  CK(cudaMemset(a, 0x3c, (size_t)n * n * sizeof(__half)));
  CK(cudaMemset(b, 0x3c, (size_t)n * n * sizeof(__half)));
  dim3 grid(n / BN, n / BM);
  profile_protocol("wmma_tiled", 2, [&] { wmma_tiled<<<grid, 256>>>(a, b, c, n); });
  return 0;
}
