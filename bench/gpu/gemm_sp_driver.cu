// A standalone check and timer of 2:4 sparse GEMM candidates through croq's kernel ABI version 2
// (include/croq/kernel_abi.h, CROQ_OP_MATMUL_SPARSE24), independent of croq's runners: it loads the
// candidate .so, generates 2:4 inputs on the GPU the way the ABI describes them (A dense [M,K] with
// arbitrary non-zero values outside the kept positions, as large as the kept ones or larger; the
// metadata [M, K/8]; every one of the six patterns; some kept values zero; B stored N x K), prepares
// A through the candidate's croq_gemm_prepare, verifies three launches (and the last timed one) against a simple tiled f32
// reference GEMM (of A with the positions outside the pattern set to zero; every row up to 2^38
// multiply-adds, a sample of rows at every position inside a tile above) with croq's tolerances
// (an element fails unless |got - want| <= base + rel |want|; a normwise limit; C NaN-poisoned
// before each launch and a guard area after C that must stay untouched), then times launches one
// at a time with CUDA events, L2 flushed before each, and prints the median.
//
//   gemm_sp_driver CANDIDATE.so DTYPE MxNxK[,MxNxK...] [--label L] [--seed S] [--no-time]
//                  [--time-ms T] [--pattern P]
//
// --pattern P (0..5): every group keeps the same pair of positions (a diagnosis of metadata order).
//
// DTYPE: f16 (f16 -> f16), f16f32, bf16, bf16f32, e4m3 (e4m3 -> f16), e4m3bf16, e4m3f32. One JSON
// object per shape on stdout: status PASS / FAIL / UNSUPPORTED / ERROR, the error figures, and
// ms (median), ms_min, ms_max, tflops (2 M N K / median, the dense-equivalent count). A CUDA error
// ends the process (exit 3): the context is gone, the next shapes are not run.
#include <croq/kernel_abi.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Dtype {
  const char* name;
  croq_dtype in, out;
  double base_tol, rel_tol, normwise;
};
const Dtype k_dtypes[] = {
    {"f16", CROQ_F16, CROQ_F16, 1.0, 0.01, 2e-3},      {"f16f32", CROQ_F16, CROQ_F32, 1.0, 0.01, 1e-3},
    {"bf16", CROQ_BF16, CROQ_BF16, 1.0, 0.01, 1e-2},   {"bf16f32", CROQ_BF16, CROQ_F32, 1.0, 0.01, 1e-3},
    {"e4m3", CROQ_E4M3, CROQ_F16, 0.5, 0.01, 5e-3},    {"e4m3bf16", CROQ_E4M3, CROQ_BF16, 0.5, 0.01, 1e-2},
    {"e4m3f32", CROQ_E4M3, CROQ_F32, 0.5, 0.01, 5e-3},
};

int bytes_of(croq_dtype t) { return t == CROQ_E4M3 ? 1 : t == CROQ_F32 ? 4 : 2; }

__host__ __device__ inline uint32_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}
// Uniform in [-1, 1) from a hash.
__device__ inline float unit(uint32_t h) { return static_cast<float>(h >> 8) * (2.0f / 16777216.0f) - 1.0f; }

__device__ inline void store_elem(void* p, long long i, croq_dtype t, float v) {
  if (t == CROQ_F16) {
    static_cast<__half*>(p)[i] = __float2half_rn(v);
  } else if (t == CROQ_BF16) {
    static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
  } else if (t == CROQ_E4M3) {
    static_cast<__nv_fp8_e4m3*>(p)[i] = __nv_fp8_e4m3(v);
  } else {
    static_cast<float*>(p)[i] = v;
  }
}
__device__ inline float load_elem(const void* p, long long i, croq_dtype t) {
  if (t == CROQ_F16) return __half2float(static_cast<const __half*>(p)[i]);
  if (t == CROQ_BF16) return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  if (t == CROQ_E4M3) return static_cast<float>(static_cast<const __nv_fp8_e4m3*>(p)[i]);
  return static_cast<const float*>(p)[i];
}

__constant__ uint8_t k_patterns[6] = {0x4, 0x8, 0xC, 0x9, 0xD, 0xE};

// A [M,K] and its metadata [M,K/8]: one thread per (row, pair of groups).
// pattern: -1 every group its own (hashed) pattern; 0..5 every group the same one (a diagnosis:
// a kernel that passes with one fixed pattern and fails with mixed ones misplaces metadata).
__global__ void gen_a(void* a, uint8_t* meta, int m, int k, croq_dtype t, uint64_t seed, int pattern) {
  const long long pairs = static_cast<long long>(m) * (k / 8);
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < pairs;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long row = i / (k / 8), j = i % (k / 8);
    uint8_t byte = 0;
    for (int half = 0; half < 2; ++half) {
      const long long g = 2 * j + half;
      const uint32_t h = mix(seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(row) * 0x100000001B3ULL + g);
      const uint8_t nib = k_patterns[pattern >= 0 ? pattern % 6 : h % 6];
      byte |= static_cast<uint8_t>(nib << (4 * half));
      const int i0 = nib & 3, i1 = nib >> 2;
      for (int p = 0; p < 4; ++p) {
        const uint32_t hv = mix(h ^ (0xABCDEFULL * (p + 1)));
        float v;
        if (p == i0 || p == i1) {
          v = unit(hv);
          if (fabsf(v) < 0.0625f) v = v < 0 ? -0.0625f : 0.0625f;
          if ((h >> 20) % 16 == 0 && p == i0) v = 0.f;  // some kept values are zero
        } else {
          v = (1.0f + 3.0f * fabsf(unit(hv))) * ((hv & 1) ? -1.f : 1.f);  // outside the pattern: large
        }
        store_elem(a, row * k + 4 * g + p, t, v);
      }
    }
    meta[row * (k / 8) + j] = byte;
  }
}
__global__ void gen_b(void* b, long long count, croq_dtype t, uint64_t seed) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    store_elem(b, i, t, unit(mix(seed * 0x51ED27ULL + static_cast<uint64_t>(i))));
}

// The rows the reference computes: all (stride 1), or for large problems one row in every `stride`,
// at a varying offset inside each group so that every position inside a tile is checked somewhere.
__host__ __device__ inline long long sampled_row(long long i, long long stride, long long m) {
  const long long r = i * stride + (i * 7) % stride;
  return r < m ? r : m - 1;
}

// Reference: C[i,n] = sum_k A'[row(i),k] B[n,k] in f32, A' = A with the positions outside the
// pattern zeroed. 64 x 64 tiles, 256 threads, 4 x 4 outputs each.
__global__ void reference(const void* a, const uint8_t* meta, const void* b, float* c, int m, int n, int k,
                          croq_dtype t, long long rows, long long stride) {
  __shared__ float as[16][65], bs[16][65];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const long long i0 = blockIdx.y * 64LL;
  const int n0 = blockIdx.x * 64;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < k; k0 += 16) {
    for (int i = threadIdx.x; i < 64 * 16; i += 256) {
      const int r = i / 16, kk = i % 16;
      const int gn = n0 + r, gk = k0 + kk;
      float va = 0.f, vb = 0.f;
      if (i0 + r < rows && gk < k) {
        const long long gm = sampled_row(i0 + r, stride, m);
        const int nib = (meta[gm * (k / 8) + gk / 8] >> (4 * ((gk / 4) % 2))) & 0xF;
        const int pos = gk % 4;
        if (pos == (nib & 3) || pos == (nib >> 2)) va = load_elem(a, gm * k + gk, t);
      }
      if (gn < n && gk < k) vb = load_elem(b, static_cast<long long>(gn) * k + gk, t);
      as[kk][r] = va;
      bs[kk][r] = vb;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 16; ++kk) {
      float x[4], y[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        x[i] = as[kk][ty * 4 + i];
        y[i] = bs[kk][tx * 4 + i];
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(x[i], y[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const long long r = i0 + ty * 4 + i;
      const int col = n0 + tx * 4 + j;
      if (r < rows && col < n) c[r * n + col] = acc[i][j];
    }
}

struct Stats {
  unsigned long long mismatches, nans, guard_changed;
  double sum_d2, sum_w2;
  unsigned int max_err_bits;
  long long first_bad;
};

// Compares the sampled rows of C (row-major, n columns) with the reference's.
__global__ void compare(const void* got, croq_dtype t, const float* want, long long rows, long long stride,
                        long long m, long long n, double base, double rel, Stats* s) {
  double d2 = 0, w2 = 0;
  unsigned long long bad = 0, nans = 0;
  float maxe = 0;
  long long first = -1;
  const long long count = rows * n;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = i / n, col = i - r * n;
    const long long at = sampled_row(r, stride, m) * n + col;
    const float g = load_elem(got, at, t), w = want[i];
    const float e = fabsf(g - w);
    if (isnan(g)) ++nans;
    if (!(e <= base + rel * fabsf(w))) {
      ++bad;
      if (first < 0) first = at;
    }
    if (e > maxe || isnan(e)) maxe = isnan(e) ? INFINITY : e;
    d2 += static_cast<double>(g - w) * (g - w);
    w2 += static_cast<double>(w) * w;
  }
  atomicAdd(&s->mismatches, bad);
  atomicAdd(&s->nans, nans);
  atomicAdd(&s->sum_d2, d2);
  atomicAdd(&s->sum_w2, w2);
  atomicMax(&s->max_err_bits, __float_as_uint(maxe));
  if (first >= 0) atomicMin(reinterpret_cast<unsigned long long*>(&s->first_bad), static_cast<unsigned long long>(first));
}
__global__ void count_changed(const uint8_t* p, long long count, uint8_t expect, Stats* s) {
  unsigned long long changed = 0;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    changed += p[i] != expect;
  atomicAdd(&s->guard_changed, changed);
}

struct Api {
  croq_gemm_fn gemm = nullptr;
  croq_gemm_workspace_bytes_fn workspace = nullptr;
  croq_gemm_prepared_bytes_fn prepared_bytes = nullptr;
  croq_gemm_prepare_fn prepare = nullptr;
  croq_kernel_info_fn info = nullptr;
};

std::string json_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) continue;
    o += ch;
  }
  return o;
}

void fail_cuda(const char* what, cudaError_t e, const std::string& prefix) {
  std::printf("%s\"status\":\"ERROR\",\"detail\":\"%s: %s\"}\n", prefix.c_str(), what, cudaGetErrorString(e));
  std::fflush(stdout);
  std::exit(3);
}
#define CK(call)                                         \
  do {                                                   \
    cudaError_t e_ = (call);                             \
    if (e_ != cudaSuccess) fail_cuda(#call, e_, prefix); \
  } while (0)

double max_err_of(unsigned int bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

unsigned blocks_for(long long n) { return static_cast<unsigned>(std::min<long long>((n + 255) / 256, 8192)); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: %s CANDIDATE.so DTYPE MxNxK[,MxNxK...] [--label L] [--seed S] [--no-time] [--time-ms T] "
                 "[--pattern 0..5]\n",
                 argv[0]);
    return 2;
  }
  const char* so = argv[1];
  const Dtype* dt = nullptr;
  for (const auto& d : k_dtypes)
    if (std::strcmp(d.name, argv[2]) == 0) dt = &d;
  if (!dt) {
    std::fprintf(stderr, "unknown dtype %s (f16 f16f32 bf16 bf16f32 e4m3 e4m3bf16 e4m3f32)\n", argv[2]);
    return 2;
  }
  std::vector<std::array<long long, 3>> shapes;
  {
    std::string s = argv[3];
    size_t pos = 0;
    while (pos <= s.size()) {
      size_t comma = s.find(',', pos);
      std::string one = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      long long m, n, k;
      if (std::sscanf(one.c_str(), "%lldx%lldx%lld", &m, &n, &k) != 3 || m <= 0 || n <= 0 || k <= 0) {
        std::fprintf(stderr, "bad shape '%s' (MxNxK)\n", one.c_str());
        return 2;
      }
      shapes.push_back({m, n, k});
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }
  std::string label = so;
  uint64_t seed = 7;
  bool time_it = true;
  double time_ms = 300;
  int pattern = -1;
  for (int i = 4; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--label") && i + 1 < argc) label = argv[++i];
    else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--no-time")) time_it = false;
    else if (!std::strcmp(argv[i], "--time-ms") && i + 1 < argc) time_ms = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--pattern") && i + 1 < argc) pattern = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  std::string prefix = "{\"label\":\"" + json_escape(label) + "\",\"dtype\":\"" + dt->name + "\",";

  void* h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::printf("%s\"status\":\"ERROR\",\"detail\":\"dlopen: %s\"}\n", prefix.c_str(), json_escape(dlerror()).c_str());
    return 3;
  }
  Api api;
  api.gemm = reinterpret_cast<croq_gemm_fn>(dlsym(h, CROQ_GEMM_SYMBOL));
  api.workspace = reinterpret_cast<croq_gemm_workspace_bytes_fn>(dlsym(h, CROQ_GEMM_WORKSPACE_SYMBOL));
  api.prepared_bytes = reinterpret_cast<croq_gemm_prepared_bytes_fn>(dlsym(h, CROQ_GEMM_PREPARED_BYTES_SYMBOL));
  api.prepare = reinterpret_cast<croq_gemm_prepare_fn>(dlsym(h, CROQ_GEMM_PREPARE_SYMBOL));
  api.info = reinterpret_cast<croq_kernel_info_fn>(dlsym(h, CROQ_KERNEL_INFO_SYMBOL));
  if (!api.gemm) {
    std::printf("%s\"status\":\"ERROR\",\"detail\":\"no croq_gemm in %s\"}\n", prefix.c_str(), json_escape(so).c_str());
    return 3;
  }
  if (api.info) std::fprintf(stderr, "%s: %s\n", label.c_str(), api.info());

  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void* flush = nullptr;
  const size_t flush_bytes = 256ull << 20;  // more than the L2 (50-60 MB on H100/H200)
  if (time_it) CK(cudaMalloc(&flush, flush_bytes));
  Stats* stats;
  CK(cudaMalloc(&stats, sizeof(Stats)));
  const int ib = bytes_of(dt->in), ob = bytes_of(dt->out);
  int exit_code = 0;

  for (const auto& sh : shapes) {
    const long long m = sh[0], n = sh[1], k = sh[2];
    char shape_txt[96];
    std::snprintf(shape_txt, sizeof(shape_txt), "%lldx%lldx%lld", m, n, k);
    prefix = "{\"label\":\"" + json_escape(label) + "\",\"dtype\":\"" + dt->name + "\",\"shape\":\"" + shape_txt + "\",";
    if (k % 8 != 0) {
      std::printf("%s\"status\":\"UNSUPPORTED\",\"detail\":\"K must be a multiple of 8\"}\n", prefix.c_str());
      continue;
    }
    croq_gemm_desc d;
    std::memset(&d, 0, sizeof(d));
    d.abi_version = CROQ_GEMM_ABI_VERSION;
    d.struct_bytes = sizeof(d);
    d.op = CROQ_OP_MATMUL_SPARSE24;
    d.m = m;
    d.n = n;
    d.k = k;
    d.a_type = dt->in;
    d.b_type = dt->in;
    d.c_type = dt->out;
    d.compute_type = CROQ_F32;
    d.b_layout = CROQ_COL_MAJOR;
    d.lda = k;
    d.ldb = k;
    d.ldc = n;
    d.scale_mode = CROQ_SCALE_NONE;

    void *a, *b, *c, *prep = nullptr, *ws = nullptr;
    uint8_t* meta;
    float* want;
    const size_t c_bytes = static_cast<size_t>(m) * n * ob, guard = 65536;
    CK(cudaMalloc(&a, static_cast<size_t>(m) * k * ib));
    CK(cudaMalloc(&meta, static_cast<size_t>(m) * (k / 8)));
    CK(cudaMalloc(&b, static_cast<size_t>(n) * k * ib));
    CK(cudaMalloc(&c, c_bytes + guard));
    // Problems above 2^38 multiply-adds (4096x8192x8192): the reference for one row in `stride`,
    // about 2^37 multiply-adds in all.
    const long long stride = m * n * k <= (1LL << 38) ? 1 : (m * n * k + (1LL << 37) - 1) >> 37;
    const long long rows = (m + stride - 1) / stride;
    CK(cudaMalloc(&want, static_cast<size_t>(rows) * n * sizeof(float)));
    gen_a<<<blocks_for(m * (k / 8)), 256, 0, stream>>>(a, meta, static_cast<int>(m), static_cast<int>(k), dt->in, seed,
                                                       pattern);
    gen_b<<<blocks_for(n * k), 256, 0, stream>>>(b, n * k, dt->in, seed + 1);
    reference<<<dim3(static_cast<unsigned>((n + 63) / 64), static_cast<unsigned>((rows + 63) / 64)), 256, 0, stream>>>(
        a, meta, b, want, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), dt->in, rows, stride);
    CK(cudaGetLastError());

    croq_gemm_operands ops;
    std::memset(&ops, 0, sizeof(ops));
    ops.a = a;
    ops.a_meta = meta;
    const size_t pbytes = api.prepared_bytes && api.prepare ? api.prepared_bytes(&d) : 0;
    croq_status st = CROQ_OK;
    if (pbytes > 0) {
      CK(cudaMalloc(&prep, pbytes));
      st = api.prepare(&d, &ops, prep, pbytes, stream);
    }
    const size_t wbytes = api.workspace ? api.workspace(&d) : 0;
    if (wbytes > 0) CK(cudaMalloc(&ws, wbytes));
    ops.b = b;
    ops.c = c;
    ops.a_prepared = prep;
    ops.a_prepared_bytes = pbytes;
    ops.workspace = ws;
    ops.workspace_bytes = wbytes;
    CK(cudaStreamSynchronize(stream));

    std::string status = "PASS", detail;
    Stats hs{};
    if (st != CROQ_OK) {
      status = st == CROQ_UNSUPPORTED ? "UNSUPPORTED" : "ERROR";
      detail = "prepare returned " + std::to_string(static_cast<int>(st));
    }
    // Verifies C as it stands against the reference (also the guard area after C); false with `detail`
    // set when it is wrong.
    auto verify = [&](const char* when) {
      Stats zero{};
      zero.first_bad = -1;
      CK(cudaMemcpyAsync(stats, &zero, sizeof(Stats), cudaMemcpyHostToDevice, stream));
      compare<<<blocks_for(rows * n), 256, 0, stream>>>(c, dt->out, want, rows, stride, m, n, dt->base_tol,
                                                        dt->rel_tol, stats);
      count_changed<<<blocks_for(guard), 256, 0, stream>>>(static_cast<uint8_t*>(c) + c_bytes, guard, 0xFF, stats);
      CK(cudaMemcpyAsync(&hs, stats, sizeof(Stats), cudaMemcpyDeviceToHost, stream));
      CK(cudaStreamSynchronize(stream));
      const double nw = hs.sum_w2 > 0 ? std::sqrt(hs.sum_d2 / hs.sum_w2) : std::sqrt(hs.sum_d2);
      if (hs.mismatches || hs.nans || hs.guard_changed || !(nw <= dt->normwise)) {
        char buf[256];
        const long long fb = hs.first_bad;
        std::snprintf(buf, sizeof(buf), "%s: %llu bad elements, first at row %lld col %lld", when, hs.mismatches,
                      fb >= 0 ? fb / n : -1, fb >= 0 ? fb % n : -1);
        detail = buf;
        return false;
      }
      return true;
    };
    // Three verified launches, C poisoned (0xFF: NaN in every output type) before each; a race in
    // the kernel shows in some launches and not in others.
    for (int rep = 0; rep < 3 && status == "PASS"; ++rep) {
      CK(cudaMemsetAsync(c, 0xFF, c_bytes + guard, stream));
      st = api.gemm(&d, &ops, stream);
      if (st != CROQ_OK) {
        status = st == CROQ_UNSUPPORTED ? "UNSUPPORTED" : "ERROR";
        detail = "croq_gemm returned " + std::to_string(static_cast<int>(st));
        break;
      }
      CK(cudaStreamSynchronize(stream));
      CK(cudaGetLastError());
      const std::string when = "launch " + std::to_string(rep + 1);
      if (!verify(when.c_str())) status = "FAIL";
    }
    const double normwise = hs.sum_w2 > 0 ? std::sqrt(hs.sum_d2 / hs.sum_w2) : 0;
    double med = 0, lo = 0, hi = 0;
    int iters = 0;
    if (status == "PASS" && time_it) {
      cudaEvent_t e0, e1;
      CK(cudaEventCreate(&e0));
      CK(cudaEventCreate(&e1));
      // Warm-up: three launches, timed together, size the number of timed launches.
      CK(cudaEventRecord(e0, stream));
      for (int i = 0; i < 3; ++i) api.gemm(&d, &ops, stream);
      CK(cudaEventRecord(e1, stream));
      CK(cudaEventSynchronize(e1));
      float warm = 0;
      CK(cudaEventElapsedTime(&warm, e0, e1));
      iters = static_cast<int>(std::min(100.0, std::max(5.0, time_ms / (warm / 3 + 0.1))));
      std::vector<float> t(iters);
      for (int i = 0; i < iters; ++i) {
        CK(cudaMemsetAsync(flush, i & 0xFF, flush_bytes, stream));
        CK(cudaEventRecord(e0, stream));
        api.gemm(&d, &ops, stream);
        CK(cudaEventRecord(e1, stream));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&t[i], e0, e1));
      }
      CK(cudaGetLastError());
      // The last timed launch's C (L2 flushed before it, like every timed launch) checked too.
      if (!verify("after timing")) status = "FAIL";
      std::sort(t.begin(), t.end());
      med = iters % 2 ? t[iters / 2] : 0.5 * (t[iters / 2 - 1] + t[iters / 2]);
      lo = t.front();
      hi = t.back();
      cudaEventDestroy(e0);
      cudaEventDestroy(e1);
    }
    const double tflops = med > 0 ? 2.0 * m * n * k / (med * 1e-3) / 1e12 : 0;
    std::printf(
        "%s\"status\":\"%s\",\"detail\":\"%s\",\"mismatches\":%llu,\"nans\":%llu,\"guard_changed\":%llu,"
        "\"rows_checked\":%lld,\"normwise\":%.3e,\"max_abs_err\":%.4g,\"iters\":%d,\"ms\":%.5f,\"ms_min\":%.5f,\"ms_max\":%.5f,"
        "\"tflops\":%.1f}\n",
        prefix.c_str(), status.c_str(), json_escape(detail).c_str(), hs.mismatches, hs.nans, hs.guard_changed, rows, normwise,
        max_err_of(hs.max_err_bits), iters, med, lo, hi, tflops);
    std::fflush(stdout);
    if (status != "PASS" && status != "UNSUPPORTED") exit_code = 1;
    cudaFree(a);
    cudaFree(meta);
    cudaFree(b);
    cudaFree(c);
    cudaFree(want);
    if (prep) cudaFree(prep);
    if (ws) cudaFree(ws);
  }
  return exit_code;
}
