// Cheating CUDA candidates (f16 -> f32, M, N, K multiples of 16): each does the whole product when
// it believes it is being checked and skips the last tenth of C's rows when it believes it is
// being timed -- the attack of a candidate that "wins" over the library by telling a checked
// launch from a timed one (on the H200 such a candidate measured 821 TFLOPS at 8192^3 against
// 735 honest, with PASS). One file, one mode per build (-DCHEAT_MODE=<n>), so that each shared
// object contains only its own mode's calls (the purity scan reads call sites):
//
//   n  mode          tells a check by                                     croq's answer
//   0  honest        (does the work every time)                           PASS
//   1  sniff_output  C[0] is the NaN poison (read on the device, in a     PASS at the honest speed: C is
//                    kernel ordered before the product)                   poisoned before every launch
//   2  count_calls   the call number: the first 5 calls                   VERIFY_FAIL (a timed launch
//                    (first check, probe) do the work                     verified at random)
//   3  timing_gap    more than 20 ms on the host clock since the          VERIFY_FAIL
//                    previous call returned (checks follow the
//                    reference's computation; timed launches follow
//                    each other)
//   4  host_sniff    reads C[0] with cudaMemcpy inside croq_matmul         LIBRARY_CALL_FORBIDDEN
//                                                                         synchronising_call (enforced)
//   5  sync_inside   cudaStreamSynchronize inside croq_matmul             LIBRARY_CALL_FORBIDDEN
//                                                                         synchronising_call (enforced);
//                                                                         flag launch_waits
//   6  write_input   (not a tell) zeroes the last tenth of A's rows, then      VERIFY_FAIL input_modified
//                    computes: right for the inputs as it left them
//   7  start_process (not a tell) honest, but its constructor starts a          PASS, and the child never
//                    process by the raw clone system call (no import the      runs: croq-gpu-runner forbids
//                    scan sees), whose child writes $CROQ_TEST_MARKER         the call (seccomp)
// The product itself: one warp per 16 x 16 tile of C with WMMA (tensor cores, no shared memory).
#include <croq/kernel_abi.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <chrono>
#include <cmath>
#include <cstdint>

#ifndef CHEAT_MODE
#define CHEAT_MODE 0
#endif

#if CHEAT_MODE == 7
#include "../../data/measure/start_process.h"
#endif

namespace {

#if CHEAT_MODE == 1
// Whether the launch does the whole product: 1 yes; 0 skips the rows from `skip_from` on.
__global__ void sniff_kernel(const float* c, int* whole) { *whole = isnan(c[0]) ? 1 : 0; }
#endif

__global__ void wmma_kernel(const __half* a, const __half* b, float* c, int64_t m, int64_t n, int64_t k, bool b_col,
                            const int* whole, int64_t skip_from) {
  using namespace nvcuda;
  const int64_t tile_m = (blockIdx.y * int64_t(blockDim.y) + threadIdx.y) * 16;
  const int64_t tile_n = (blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32) * 16;
  if (tile_m >= m || tile_n >= n) return;
  if (whole != nullptr && *whole == 0 && tile_m >= skip_from) return;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int64_t p = 0; p < k; p += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::load_matrix_sync(fa, a + tile_m * k + p, static_cast<unsigned>(k));
    if (b_col) {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
      wmma::load_matrix_sync(fb, b + tile_n * k + p, static_cast<unsigned>(k));
      wmma::mma_sync(acc, fa, fb, acc);
    } else {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
      wmma::load_matrix_sync(fb, b + p * n + tile_n, static_cast<unsigned>(n));
      wmma::mma_sync(acc, fa, fb, acc);
    }
  }
  wmma::store_matrix_sync(c + tile_m * n + tile_n, acc, static_cast<unsigned>(n), wmma::mem_row_major);
}

#if CHEAT_MODE != 1
__global__ void set_flag(int* whole, int value) { *whole = value; }
#endif

int* g_whole = nullptr;  // device flag: the product is whole (1) or cut (0)

}  // namespace

CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void* a, const void* b, void* c, void*,
                                    size_t, void* stream) {
  if (p->a_type != CROQ_F16 || p->c_type != CROQ_F32 || p->m % 16 || p->n % 16 || p->k % 16) return CROQ_UNSUPPORTED;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (!g_whole && cudaMalloc(&g_whole, sizeof(int)) != cudaSuccess) return CROQ_INTERNAL;
  const int64_t skip_from = (p->m * 9 / 10) / 16 * 16;
#if CHEAT_MODE == 1
  sniff_kernel<<<1, 1, 0, s>>>(static_cast<const float*>(c), g_whole);
#elif CHEAT_MODE == 2
  static int calls = 0;
  set_flag<<<1, 1, 0, s>>>(g_whole, ++calls <= 5 ? 1 : 0);
#elif CHEAT_MODE == 3
  using clock = std::chrono::steady_clock;
  static clock::time_point last{};
  static bool first = true;
  const double gap_ms = std::chrono::duration<double, std::milli>(clock::now() - last).count();
  set_flag<<<1, 1, 0, s>>>(g_whole, first || gap_ms > 20.0 ? 1 : 0);
  first = false;
#elif CHEAT_MODE == 6
  const int64_t row_bytes = p->k * static_cast<int64_t>(sizeof(__half));
  cudaMemsetAsync(static_cast<char*>(const_cast<void*>(a)) + skip_from * row_bytes, 0,
                  static_cast<size_t>((p->m - skip_from) * row_bytes), s);
  set_flag<<<1, 1, 0, s>>>(g_whole, 1);
#elif CHEAT_MODE == 4
  float head = 0;
  cudaMemcpy(&head, c, sizeof head, cudaMemcpyDeviceToHost);
  set_flag<<<1, 1, 0, s>>>(g_whole, std::isnan(head) ? 1 : 0);
#else
  set_flag<<<1, 1, 0, s>>>(g_whole, 1);
#endif
  dim3 block(32 * 4, 4);  // 4 x 4 warps: a 64 x 64 block of C
  dim3 grid(static_cast<unsigned>((p->n + 63) / 64), static_cast<unsigned>((p->m + 63) / 64));
  wmma_kernel<<<grid, block, 0, s>>>(static_cast<const __half*>(a), static_cast<const __half*>(b),
                                      static_cast<float*>(c), p->m, p->n, p->k, p->b_layout == CROQ_COL_MAJOR, g_whole,
                                      skip_from);
  const croq_status r = cudaGetLastError() == cudaSuccess ? CROQ_OK : CROQ_LAUNCH_FAILED;
#if CHEAT_MODE == 5
  cudaStreamSynchronize(s);
#endif
#if CHEAT_MODE == 3
  last = clock::now();
#endif
  return r;
}

#define CHEAT_STR2(x) #x
#define CHEAT_STR(x) CHEAT_STR2(x)
CROQ_EXPORT const char* croq_kernel_info(void) { return "{\"name\": \"cheat\", \"params\": {\"mode\": " CHEAT_STR(CHEAT_MODE) "}}"; }
