// One process calling an exported library (croq export --name croq, linked statically) at many
// shapes, in two passes: every call's C against a reference computed on the GPU in f32, every
// element compared (C is filled with NaN first), and the call timed with CUDA events (median of 10
// back-to-back launches after 3 warm-ups, L2 not flushed: a figure for the log, not croq's method).
// Built and run by bench/gpu/export_evidence.sh:
//   nvcc -O2 -std=c++17 -I<export>/include export_check.cu <export>/lib/libcroq.a -o export_check
//   export_check matmul_f16fp32_4096x4096x4096 matmul_bf16fp32_1000x3000x500 ...
// Prints one line per call: "ok|FAIL <pass> <shape_key> kernel=<chosen> status=<s> rel_err=<e> ms=<t> tflops=<f>"
// and exits 0 when every call was correct.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "croq.h"

namespace {

#define CHECK(call)                                                            \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));         \
      std::exit(2);                                                            \
    }                                                                          \
  } while (0)

__device__ float load(const __half* p, long long i) { return __half2float(p[i]); }
__device__ float load(const __nv_bfloat16* p, long long i) { return __bfloat162float(p[i]); }
__device__ float load(const float* p, long long i) { return p[i]; }

template <typename T>
__global__ void fill(T* p, long long count, unsigned seed) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < count; i += 256LL * gridDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = T(static_cast<float>(h % 2001u) / 1000.f - 1.f);
  }
}

// 16 x 16 tiles through shared memory: the f32 reference (B row-major K x N).
template <typename T>
__global__ void reference(const T* a, const T* b, float* c, long long m, long long n, long long k) {
  __shared__ float as[16][17], bs[16][17];
  const long long row = blockIdx.y * 16LL + threadIdx.y, col = blockIdx.x * 16LL + threadIdx.x;
  float acc = 0.f;
  for (long long q0 = 0; q0 < k; q0 += 16) {
    as[threadIdx.y][threadIdx.x] = row < m && q0 + threadIdx.x < k ? load(a, row * k + q0 + threadIdx.x) : 0.f;
    bs[threadIdx.y][threadIdx.x] = col < n && q0 + threadIdx.y < k ? load(b, (q0 + threadIdx.y) * n + col) : 0.f;
    __syncthreads();
#pragma unroll
    for (int q = 0; q < 16; ++q) acc += as[threadIdx.y][q] * bs[q][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = acc;
}

// out[0] = max |c - ref| (NaN counts as infinite), out[1] = max |ref|, as ordered float bits.
template <typename TOut>
__global__ void compare(const TOut* c, const float* ref, long long count, unsigned* out) {
  float err = 0.f, scale = 0.f;
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < count; i += 256LL * gridDim.x) {
    const float v = load(c, i), r = ref[i];
    const float d = fabsf(v - r);
    err = fmaxf(err, isnan(d) ? INFINITY : d);
    scale = fmaxf(scale, fabsf(r));
  }
  atomicMax(out, __float_as_uint(err));
  atomicMax(out + 1, __float_as_uint(scale));
}

struct Shape {
  std::string key, dtype;
  long long m = 0, n = 0, k = 0;
};

bool parse(const std::string& key, Shape& s) {
  // matmul_<dtype>_<M>x<N>x<K>
  const size_t a = key.find('_'), b = key.rfind('_');
  if (a == std::string::npos || b == a) return false;
  s.key = key;
  s.dtype = key.substr(a + 1, b - a - 1);
  return std::sscanf(key.c_str() + b + 1, "%lldx%lldx%lld", &s.m, &s.n, &s.k) == 3;
}

template <typename TIn, typename TOut>
bool run_shape(const Shape& s, croq_dtype in, croq_dtype out, int pass, cudaStream_t stream) {
  const long long m = s.m, n = s.n, k = s.k;
  TIn *a = nullptr, *b = nullptr;
  TOut* c = nullptr;
  float* ref = nullptr;
  unsigned* cmp = nullptr;
  CHECK(cudaMalloc(&a, sizeof(TIn) * m * k));
  CHECK(cudaMalloc(&b, sizeof(TIn) * k * n));
  CHECK(cudaMalloc(&c, sizeof(TOut) * m * n));
  CHECK(cudaMalloc(&ref, sizeof(float) * m * n));
  CHECK(cudaMalloc(&cmp, 2 * sizeof(unsigned)));
  fill<<<1024, 256, 0, stream>>>(a, m * k, 17u);
  fill<<<1024, 256, 0, stream>>>(b, k * n, 29u);
  dim3 grid(static_cast<unsigned>((n + 15) / 16), static_cast<unsigned>((m + 15) / 16));
  reference<<<grid, dim3(16, 16), 0, stream>>>(a, b, ref, m, n, k);
  CHECK(cudaMemsetAsync(c, 0xff, sizeof(TOut) * m * n, stream));
  croq_matmul_problem p = croq_make_problem(m, n, k, in, out, CROQ_ROW_MAJOR);
  const size_t ws_bytes = croq_matmul_workspace_bytes(&p);
  void* ws = nullptr;
  if (ws_bytes) CHECK(cudaMalloc(&ws, ws_bytes));
  const croq_status st = croq_matmul(&p, a, b, c, ws, ws_bytes, stream);
  CHECK(cudaMemsetAsync(cmp, 0, 2 * sizeof(unsigned), stream));
  compare<<<1024, 256, 0, stream>>>(c, ref, m * n, cmp);
  unsigned h[2] = {0, 0};
  CHECK(cudaMemcpyAsync(h, cmp, sizeof h, cudaMemcpyDeviceToHost, stream));
  const cudaError_t done = cudaStreamSynchronize(stream);
  float err, scale;
  std::memcpy(&err, &h[0], 4);
  std::memcpy(&scale, &h[1], 4);
  const double rel = scale > 0 ? err / scale : err;
  const double tol = sizeof(TOut) == 2 ? 2e-2 : 2e-3;
  bool ok = st == CROQ_OK && done == cudaSuccess && rel <= tol;
  // Timing: 3 warm-ups, then 10 launches each between two events.
  double median_ms = 0;
  if (ok) {
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; ++i) croq_matmul(&p, a, b, c, ws, ws_bytes, stream);
    std::vector<float> t;
    for (int i = 0; i < 10; ++i) {
      CHECK(cudaEventRecord(e0, stream));
      croq_matmul(&p, a, b, c, ws, ws_bytes, stream);
      CHECK(cudaEventRecord(e1, stream));
      CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    median_ms = (t[4] + t[5]) / 2;
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
  }
  const char* chosen = croq_matmul_choice(&p);
  std::printf("%s pass%d %s kernel=%s task=%s status=%d launch=%s rel_err=%.3g ms=%.4f tflops=%.1f\n",
              ok ? "ok" : "FAIL", pass, s.key.c_str(), chosen ? chosen : "none",
              croq_matmul_choice_task(&p) ? croq_matmul_choice_task(&p) : "none", static_cast<int>(st),
              cudaGetErrorString(done), rel, median_ms, median_ms > 0 ? 2.0 * m * n * k / (median_ms * 1e9) : 0.0);
  std::fflush(stdout);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cudaFree(ref);
  cudaFree(cmp);
  if (ws) cudaFree(ws);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::printf("library: %d kernel(s)\n", croq_kernel_count());
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  int failures = 0;
  for (int pass = 1; pass <= 2; ++pass) {
    for (int i = 1; i < argc; ++i) {
      Shape s;
      if (!parse(argv[i], s)) {
        std::fprintf(stderr, "bad shape key %s\n", argv[i]);
        return 2;
      }
      bool ok = false;
      if (s.dtype == "f16fp32" || s.dtype == "f16f32") ok = run_shape<__half, float>(s, CROQ_F16, CROQ_F32, pass, stream);
      else if (s.dtype == "bf16fp32" || s.dtype == "bf16f32") ok = run_shape<__nv_bfloat16, float>(s, CROQ_BF16, CROQ_F32, pass, stream);
      else if (s.dtype == "f16") ok = run_shape<__half, __half>(s, CROQ_F16, CROQ_F16, pass, stream);
      else if (s.dtype == "bf16") ok = run_shape<__nv_bfloat16, __nv_bfloat16>(s, CROQ_BF16, CROQ_BF16, pass, stream);
      else std::printf("FAIL pass%d %s: dtype %s not handled by this check\n", pass, s.key.c_str(), s.dtype.c_str());
      failures += !ok;
    }
  }
  std::printf("%s: %d failure(s)\n", failures ? "FAILED" : "ALL OK", failures);
  return failures ? 1 : 0;
}
