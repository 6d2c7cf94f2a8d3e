// Loads several candidate shared objects into ONE process (dlopen, RTLD_NOW | RTLD_LOCAL) and
// verifies each against a reference on the GPU, in two interleaved passes (k1 k2 ... kn k1 k2 ...
// kn): kernels of one template with different configurations must not share a function, a launch
// cache or a tensor-map cache. croq's runner loads one candidate per process, so only this shows it.
//
// Usage: croq_multi_load <m> <n> <k> <f16f32|bf16f32|f16|bf16> <row|col> <candidate.so>...
// Prints one line per call ("ok|FAIL <pass> <file> status=<s> rel_err=<e>") and exits 0 when every
// call of every candidate returned CROQ_OK with a small error, 1 otherwise, 2 on bad use.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <croq/kernel_abi.h>

namespace {

#define CHECK(call)                                                                     \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                  \
      std::exit(2);                                                                     \
    }                                                                                   \
  } while (0)

template <typename T>
__device__ float to_f(T v);
template <>
__device__ float to_f<__half>(__half v) { return __half2float(v); }
template <>
__device__ float to_f<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

// C_ref[i,j] = sum_q A[i,q] * B[q,j] in f32; B row-major (K x N) or stored N x K.
template <typename T>
__global__ void reference(const T* a, const T* b, float* c, long long m, long long n, long long k, bool col) {
  const long long i = blockIdx.y * 16LL + threadIdx.y, j = blockIdx.x * 16LL + threadIdx.x;
  if (i >= m || j >= n) return;
  float acc = 0.f;
  for (long long q = 0; q < k; ++q) acc += to_f(a[i * k + q]) * to_f(col ? b[j * k + q] : b[q * n + j]);
  c[i * n + j] = acc;
}

template <typename T>
std::vector<T> random_matrix(size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<T> v(count);
  for (auto& x : v) x = T(u(rng));
  return v;
}

struct Candidate {
  std::string file;
  croq_matmul_fn matmul = nullptr;
  croq_matmul_workspace_bytes_fn workspace = nullptr;
};

template <typename T>
int run(long long m, long long n, long long k, bool out16, bool col, const std::vector<Candidate>& cands,
        croq_dtype in_type) {
  auto ha = random_matrix<T>(static_cast<size_t>(m * k), 1);
  auto hb = random_matrix<T>(static_cast<size_t>(k * n), 2);
  T *a = nullptr, *b = nullptr;
  float* ref = nullptr;
  void* c = nullptr;
  CHECK(cudaMalloc(&a, ha.size() * sizeof(T)));
  CHECK(cudaMalloc(&b, hb.size() * sizeof(T)));
  CHECK(cudaMalloc(&ref, static_cast<size_t>(m * n) * sizeof(float)));
  const size_t c_bytes = static_cast<size_t>(m * n) * (out16 ? 2 : 4);
  CHECK(cudaMalloc(&c, c_bytes));
  CHECK(cudaMemcpy(a, ha.data(), ha.size() * sizeof(T), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, hb.data(), hb.size() * sizeof(T), cudaMemcpyHostToDevice));
  dim3 block(16, 16), grid(static_cast<unsigned>((n + 15) / 16), static_cast<unsigned>((m + 15) / 16));
  reference<T><<<grid, block>>>(a, b, ref, m, n, k, col);
  CHECK(cudaDeviceSynchronize());
  std::vector<float> href(static_cast<size_t>(m * n));
  CHECK(cudaMemcpy(href.data(), ref, href.size() * sizeof(float), cudaMemcpyDeviceToHost));
  double scale = 0;
  for (float v : href) scale = std::max(scale, static_cast<double>(std::fabs(v)));

  croq_matmul_problem p{};
  p.abi_version = CROQ_ABI_VERSION;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = p.b_type = in_type;
  p.c_type = out16 ? in_type : CROQ_F32;
  p.compute_type = CROQ_F32;
  p.b_layout = col ? CROQ_COL_MAJOR : CROQ_ROW_MAJOR;
  p.lda = k;
  p.ldb = col ? k : n;
  p.ldc = n;
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  int failures = 0;
  std::vector<uint16_t> h16;
  std::vector<float> h32;
  for (int pass = 1; pass <= 2; ++pass) {
    for (const Candidate& cand : cands) {
      const size_t ws_bytes = cand.workspace ? cand.workspace(&p) : 0;
      void* ws = nullptr;
      if (ws_bytes) CHECK(cudaMalloc(&ws, ws_bytes));
      CHECK(cudaMemset(c, 0xff, c_bytes));  // NaN everywhere: every element must be written
      const croq_status st = cand.matmul(&p, a, b, c, ws, ws_bytes, stream);
      const cudaError_t launched = cudaStreamSynchronize(stream);
      double err = INFINITY;
      if (st == CROQ_OK && launched == cudaSuccess) {
        err = 0;
        if (out16) {
          h16.resize(static_cast<size_t>(m * n));
          CHECK(cudaMemcpy(h16.data(), c, c_bytes, cudaMemcpyDeviceToHost));
          for (size_t i = 0; i < h16.size(); ++i) {
            T v;
            std::memcpy(&v, &h16[i], 2);
            const double d = std::fabs(static_cast<double>(static_cast<float>(v)) - href[i]);
            err = std::isnan(d) ? INFINITY : std::max(err, d);
          }
        } else {
          h32.resize(static_cast<size_t>(m * n));
          CHECK(cudaMemcpy(h32.data(), c, c_bytes, cudaMemcpyDeviceToHost));
          for (size_t i = 0; i < h32.size(); ++i) {
            const double d = std::fabs(static_cast<double>(h32[i]) - href[i]);
            err = std::isnan(d) ? INFINITY : std::max(err, d);
          }
        }
        err /= std::max(scale, 1e-6);
      }
      const double tol = out16 ? 2e-2 : 2e-3;
      const bool ok = st == CROQ_OK && launched == cudaSuccess && err <= tol;
      failures += !ok;
      std::printf("%s pass%d %s status=%d launch=%s rel_err=%.3g\n", ok ? "ok" : "FAIL", pass, cand.file.c_str(),
                  static_cast<int>(st), cudaGetErrorString(launched), err);
      if (ws) CHECK(cudaFree(ws));
    }
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(ref);
  cudaFree(c);
  cudaStreamDestroy(stream);
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: %s <m> <n> <k> <f16f32|bf16f32|f16|bf16> <row|col> <candidate.so>...\n", argv[0]);
    return 2;
  }
  const long long m = std::atoll(argv[1]), n = std::atoll(argv[2]), k = std::atoll(argv[3]);
  const std::string dtype = argv[4], layout = argv[5];
  std::vector<Candidate> cands;
  for (int i = 6; i < argc; ++i) {
    void* h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      std::fprintf(stderr, "dlopen %s: %s\n", argv[i], dlerror());
      return 2;
    }
    Candidate c;
    c.file = argv[i];
    c.matmul = reinterpret_cast<croq_matmul_fn>(dlsym(h, CROQ_MATMUL_SYMBOL));
    c.workspace = reinterpret_cast<croq_matmul_workspace_bytes_fn>(dlsym(h, CROQ_MATMUL_WORKSPACE_SYMBOL));
    if (!c.matmul) {
      std::fprintf(stderr, "%s has no %s\n", argv[i], CROQ_MATMUL_SYMBOL);
      return 2;
    }
    cands.push_back(c);
  }
  const bool col = layout == "col";
  if (dtype == "f16f32") return run<__half>(m, n, k, false, col, cands, CROQ_F16);
  if (dtype == "f16") return run<__half>(m, n, k, true, col, cands, CROQ_F16);
  if (dtype == "bf16f32") return run<__nv_bfloat16>(m, n, k, false, col, cands, CROQ_BF16);
  if (dtype == "bf16") return run<__nv_bfloat16>(m, n, k, true, col, cands, CROQ_BF16);
  std::fprintf(stderr, "unknown dtype %s\n", dtype.c_str());
  return 2;
}
