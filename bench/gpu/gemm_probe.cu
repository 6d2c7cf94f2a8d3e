/*
 * gemm_probe: checks and times matmul candidates (shared objects implementing croq's kernel ABI)
 * against cuBLAS in the same process, for bench/gpu/gemm_probe.sh. A stop-gap until croq's own
 * measurement runner (croq-gpu-runner) is available; it follows the same rules: fresh random
 * inputs (never zeros), the output poisoned with NaN before every checked run, every element
 * compared with a cuBLAS f32-accumulated reference, CUDA events around each launch, L2 flushed
 * between timed repetitions (--no-flush to skip), the median reported, and cuBLAS timed the same
 * way, interleaved with the candidate repetition by repetition (clock and power drift hit both
 * alike, so the in-process ratio is the number to trust). The workspace is filled with garbage
 * before the first call (a candidate may not assume zeroed scratch memory), and the output is
 * checked again after timing (after dozens of calls on the same workspace).
 *
 *   gemm_probe --so X.so --label NAME [--check M,N,K,DTYPE,LAYOUT]... [--time M,N,K,DTYPE,LAYOUT]...
 *              [--reps 20] [--out results.jsonl] [--no-flush]
 *
 * DTYPE: f16f32, f16, bf16f32, bf16; LAYOUT: row (B is K x N) or col (B stored N x K). Each case
 * prints one line "RESULT {json}" (also appended to --out) with verdict PASS, FAIL, UNSUPPORTED or
 * ERROR, errors, and for --time the candidate's and cuBLAS's median TFLOPS. A candidate that runs
 * longer than 20 s is reported as HANG and the process exits with status 3 (the context is lost).
 *
 * Build: nvcc -O2 -std=c++17 -I include bench/gpu/gemm_probe.cu -o gemm_probe -lcublas -ldl -cudart shared
 */
#include <croq/kernel_abi.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

namespace {

FILE* g_out = nullptr;
std::string g_label;
int g_reps = 20;
bool g_flush = true;

#define CK(call)                                                                                    \
  do {                                                                                              \
    cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess) {                                                                        \
      fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, __LINE__, #call); \
      throw std::runtime_error(cudaGetErrorString(e_));                                             \
    }                                                                                               \
  } while (0)
#define CB(call)                                                                                      \
  do {                                                                                                \
    cublasStatus_t s_ = (call);                                                                       \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                                \
      fprintf(stderr, "cuBLAS error %d at %s:%d: %s\n", static_cast<int>(s_), __FILE__, __LINE__, #call); \
      throw std::runtime_error("cublas");                                                             \
    }                                                                                                 \
  } while (0)

struct Case {
  long long m = 0, n = 0, k = 0;
  std::string dtype, layout;
  bool time = false;
};

struct DtypeInfo {
  croq_dtype in, out;
  cudaDataType_t cin, cout;
  int out_bytes;
  double rtol;  // elementwise relative tolerance of the output type
};

bool dtype_info(const std::string& d, DtypeInfo& i) {
  if (d == "f16f32") i = {CROQ_F16, CROQ_F32, CUDA_R_16F, CUDA_R_32F, 4, 2e-3};
  else if (d == "f16") i = {CROQ_F16, CROQ_F16, CUDA_R_16F, CUDA_R_16F, 2, 4e-3};
  else if (d == "bf16f32") i = {CROQ_BF16, CROQ_F32, CUDA_R_16BF, CUDA_R_32F, 4, 2e-3};
  else if (d == "bf16") i = {CROQ_BF16, CROQ_BF16, CUDA_R_16BF, CUDA_R_16BF, 2, 1.6e-2};
  else return false;
  return true;
}

bool parse_case(const char* s, Case& c) {
  char dt[32] = {0}, lay[32] = {0};
  if (sscanf(s, "%lld,%lld,%lld,%31[^,],%31s", &c.m, &c.n, &c.k, dt, lay) != 5) return false;
  c.dtype = dt;
  c.layout = lay;
  DtypeInfo di;
  return c.m > 0 && c.n > 0 && c.k > 0 && dtype_info(c.dtype, di) && (c.layout == "row" || c.layout == "col");
}

__device__ __forceinline__ uint32_t hash32(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

// Uniform values in [-1, 1) in the input type, different for every (seed, index).
template <typename T>
__global__ void fill_random(T* p, long long count, uint64_t seed) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const float u = (hash32(seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(i)) >> 8) * (1.0f / 8388608.0f) - 1.0f;
    p[i] = static_cast<T>(u);
  }
}

struct Stats {
  unsigned long long nan_count;
  unsigned long long bad_count;
  unsigned int max_abs_bits;
  unsigned int pad;
  double sum_sq_diff;
  double sum_sq_ref;
  unsigned long long first_bad;  // index + 1 of one bad element (0: none)
};

__global__ void sum_sq(const float* ref, long long m, long long n, long long ld, double* out) {
  double local = 0;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < m * n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = i / n, c = i % n;
    const double v = ref[r * ld + c];
    local += v * v;
  }
  atomicAdd(out, local);
}

template <typename T>
__device__ __forceinline__ float to_float(T v) {
  return static_cast<float>(v);
}

template <typename T>
__global__ void compare(const T* out, long long ldo, const float* ref, long long ldr, long long m, long long n,
                        float atol, float rtol, Stats* st) {
  unsigned long long nan = 0, bad = 0, first = 0;
  float mx = 0;
  double sd = 0;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < m * n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = i / n, c = i % n;
    const float o = to_float(out[r * ldo + c]);
    const float x = ref[r * ldr + c];
    if (!isfinite(o)) {
      ++nan;
      if (!first) first = i + 1;
      continue;
    }
    const float d = fabsf(o - x);
    mx = fmaxf(mx, d);
    sd += static_cast<double>(d) * d;
    if (d > atol + rtol * fabsf(x)) {
      ++bad;
      if (!first) first = i + 1;
    }
  }
  if (nan) atomicAdd(&st->nan_count, nan);
  if (bad) atomicAdd(&st->bad_count, bad);
  if (first) atomicCAS(&st->first_bad, 0ULL, first);
  atomicMax(&st->max_abs_bits, __float_as_uint(mx));
  atomicAdd(&st->sum_sq_diff, sd);
}

struct Candidate {
  void* handle = nullptr;
  croq_matmul_fn matmul = nullptr;
  croq_matmul_workspace_bytes_fn ws = nullptr;
  croq_kernel_info_fn info = nullptr;
};

std::string json_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') {
      o += '\\';
      o += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      o += ' ';
    } else {
      o += ch;
    }
  }
  return o;
}

void emit(const std::string& json) {
  printf("RESULT %s\n", json.c_str());
  fflush(stdout);
  if (g_out) {
    fprintf(g_out, "%s\n", json.c_str());
    fflush(g_out);
  }
}

// Waits for the stream at most `seconds`; false on timeout.
bool wait_stream(cudaStream_t s, double seconds) {
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    cudaError_t e = cudaStreamQuery(s);
    if (e == cudaSuccess) return true;
    if (e != cudaErrorNotReady) CK(e);
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > seconds) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

struct Buffers {
  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
  float* ref = nullptr;
  void* ws = nullptr;
  size_t ws_bytes = 0;
  void* flush = nullptr;
  ~Buffers() {
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cudaFree(ref);
    cudaFree(ws);
    cudaFree(flush);
  }
};

double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : (v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]));
}

void run_case(const Candidate& cand, cublasHandle_t blas, cudaStream_t stream, const Case& cs, uint64_t seed) {
  DtypeInfo di;
  dtype_info(cs.dtype, di);
  const bool bcol = cs.layout == "col";
  const long long m = cs.m, n = cs.n, k = cs.k;
  char head[512];
  snprintf(head, sizeof head,
           "{\"label\":\"%s\",\"mode\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"dtype\":\"%s\",\"layout\":\"%s\"",
           json_escape(g_label).c_str(), cs.time ? "time" : "check", m, n, k, cs.dtype.c_str(), cs.layout.c_str());

  croq_matmul_problem p;
  memset(&p, 0, sizeof p);
  p.abi_version = CROQ_ABI_VERSION;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = di.in;
  p.b_type = di.in;
  p.c_type = di.out;
  p.compute_type = CROQ_F32;
  p.b_layout = bcol ? CROQ_COL_MAJOR : CROQ_ROW_MAJOR;
  p.lda = k;
  p.ldb = bcol ? k : n;
  p.ldc = n;

  Buffers buf;
  CK(cudaMalloc(&buf.a, m * k * 2));
  CK(cudaMalloc(&buf.b, n * k * 2));
  CK(cudaMalloc(&buf.c, m * n * di.out_bytes));
  CK(cudaMalloc(&buf.ref, m * n * 4));
  buf.ws_bytes = cand.ws ? cand.ws(&p) : 0;
  if (buf.ws_bytes) {
    CK(cudaMalloc(&buf.ws, buf.ws_bytes));
    CK(cudaMemsetAsync(buf.ws, 0xA5, buf.ws_bytes, stream));
  }
  if (di.in == CROQ_F16) {
    fill_random<__half><<<1024, 256, 0, stream>>>(static_cast<__half*>(buf.a), m * k, seed * 2 + 1);
    fill_random<__half><<<1024, 256, 0, stream>>>(static_cast<__half*>(buf.b), n * k, seed * 2 + 2);
  } else {
    fill_random<__nv_bfloat16><<<1024, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(buf.a), m * k, seed * 2 + 1);
    fill_random<__nv_bfloat16><<<1024, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(buf.b), n * k, seed * 2 + 2);
  }
  CK(cudaGetLastError());

  // Reference: C^T = B^T A^T in cuBLAS's column-major view, f32 output, f32 accumulation.
  const float one = 1.f, zero = 0.f;
  const cublasOperation_t op_b = bcol ? CUBLAS_OP_T : CUBLAS_OP_N;
  CB(cublasGemmEx(blas, op_b, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &one, buf.b,
                  di.cin, static_cast<int>(p.ldb), buf.a, di.cin, static_cast<int>(k), &zero, buf.ref, CUDA_R_32F,
                  static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  double* d_sq = nullptr;
  Stats* d_st = nullptr;
  CK(cudaMalloc(&d_sq, sizeof(double)));
  CK(cudaMalloc(&d_st, sizeof(Stats)));
  CK(cudaMemsetAsync(d_sq, 0, sizeof(double), stream));
  sum_sq<<<1024, 256, 0, stream>>>(buf.ref, m, n, n, d_sq);
  CK(cudaGetLastError());
  double h_sq = 0;
  CK(cudaMemcpyAsync(&h_sq, d_sq, sizeof(double), cudaMemcpyDeviceToHost, stream));
  CK(cudaStreamSynchronize(stream));
  const double ref_rms = std::sqrt(h_sq / static_cast<double>(m * n));

  // Checked runs: poisoned output, fresh inputs, every element compared; twice, so that a second
  // call on the workspace the first one left behind is checked too.
  const float rtol = static_cast<float>(di.rtol);
  const float atol = static_cast<float>(di.rtol * ref_rms);
  Stats h;
  memset(&h, 0, sizeof h);
  double first_call_ms = 0;
  bool pass = true;
  int failed_call = 0;
  for (int call = 1; call <= 2 && pass; ++call) {
    CK(cudaMemsetAsync(buf.c, 0xFF, m * n * di.out_bytes, stream));
    CK(cudaStreamSynchronize(stream));
    const double t_wall0 = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    croq_status st = cand.matmul(&p, buf.a, buf.b, buf.c, buf.ws, buf.ws_bytes, stream);
    if (st != CROQ_OK) {
      std::string j = std::string(head) + ",\"verdict\":\"" + (st == CROQ_UNSUPPORTED ? "UNSUPPORTED" : "ERROR") +
                      "\",\"status\":" + std::to_string(static_cast<int>(st)) + "}";
      emit(j);
      cudaFree(d_sq);
      cudaFree(d_st);
      return;
    }
    if (!wait_stream(stream, 20.0)) {
      emit(std::string(head) + ",\"verdict\":\"HANG\",\"call\":" + std::to_string(call) + "}");
      fprintf(stderr, "candidate did not finish within 20 s: exiting\n");
      _exit(3);
    }
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
      emit(std::string(head) + ",\"verdict\":\"ERROR\",\"cuda\":\"" + cudaGetErrorString(err) + "\"}");
      _exit(4);
    }
    const double t_wall1 = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    if (call == 1) first_call_ms = (t_wall1 - t_wall0) * 1e3;
    CK(cudaMemsetAsync(d_st, 0, sizeof(Stats), stream));
    if (di.out == CROQ_F32)
      compare<float><<<1024, 256, 0, stream>>>(static_cast<float*>(buf.c), n, buf.ref, n, m, n, atol, rtol, d_st);
    else if (di.out == CROQ_F16)
      compare<__half><<<1024, 256, 0, stream>>>(static_cast<__half*>(buf.c), n, buf.ref, n, m, n, atol, rtol, d_st);
    else
      compare<__nv_bfloat16><<<1024, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(buf.c), n, buf.ref, n, m, n,
                                                       atol, rtol, d_st);
    CK(cudaGetLastError());
    CK(cudaMemcpyAsync(&h, d_st, sizeof h, cudaMemcpyDeviceToHost, stream));
    CK(cudaStreamSynchronize(stream));
    pass = h.nan_count == 0 && h.bad_count == 0;
    if (!pass) failed_call = call;
  }
  float max_abs;
  memcpy(&max_abs, &h.max_abs_bits, 4);
  const double rel = std::sqrt(h.sum_sq_diff / std::max(h_sq, 1e-30));
  char body[1024];
  long long fb = static_cast<long long>(h.first_bad) - 1;
  snprintf(body, sizeof body,
           ",\"verdict\":\"%s\",\"max_abs_err\":%.4g,\"rel_err\":%.4g,\"ref_rms\":%.4g,\"nan\":%llu,\"bad\":%llu,"
           "\"first_bad_row\":%lld,\"first_bad_col\":%lld,\"failed_call\":%d,\"ws_bytes\":%zu,\"first_call_ms\":%.3f",
           pass ? "PASS" : "FAIL", max_abs, rel, ref_rms, h.nan_count, h.bad_count, fb >= 0 ? fb / n : -1,
           fb >= 0 ? fb % n : -1, failed_call, buf.ws_bytes, first_call_ms);
  std::string j = std::string(head) + body;

  if (cs.time && pass) {
    // Timing: flush L2 (a 256 MiB memset) before each repetition, events around the launch only;
    // cuBLAS and the candidate alternate repetition by repetition.
    const size_t flush_bytes = 256u << 20;
    if (g_flush) CK(cudaMalloc(&buf.flush, flush_bytes));
    const double flops = 2.0 * m * n * k;
    auto cublas_launch = [&] {
      CB(cublasGemmEx(blas, op_b, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &one,
                      buf.b, di.cin, static_cast<int>(p.ldb), buf.a, di.cin, static_cast<int>(k), &zero, buf.c,
                      di.cout, static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };
    auto cand_launch = [&] {
      if (cand.matmul(&p, buf.a, buf.b, buf.c, buf.ws, buf.ws_bytes, stream) != CROQ_OK)
        throw std::runtime_error("candidate launch failed while timing");
    };
    // Warm-up (also sizes the repetition count: short kernels get more repetitions).
    cudaEvent_t w0, w1;
    CK(cudaEventCreate(&w0));
    CK(cudaEventCreate(&w1));
    for (int w = 0; w < 3; ++w) {
      cublas_launch();
      cand_launch();
    }
    CK(cudaEventRecord(w0, stream));
    cand_launch();
    CK(cudaEventRecord(w1, stream));
    if (!wait_stream(stream, 60.0)) {
      emit(std::string(head) + ",\"verdict\":\"HANG\"}");
      _exit(3);
    }
    float warm_ms = 0;
    CK(cudaEventElapsedTime(&warm_ms, w0, w1));
    cudaEventDestroy(w0);
    cudaEventDestroy(w1);
    const int reps = warm_ms < 0.1f ? std::max(g_reps, 60) : warm_ms < 1.0f ? std::max(g_reps, 30) : g_reps;
    std::vector<cudaEvent_t> ev(4 * reps);
    for (auto& e : ev) CK(cudaEventCreate(&e));
    for (int r = 0; r < reps; ++r) {
      for (int which = 0; which < 2; ++which) {
        if (g_flush) CK(cudaMemsetAsync(buf.flush, (2 * r + which) & 0xFF, flush_bytes, stream));
        CK(cudaEventRecord(ev[4 * r + 2 * which], stream));
        if (which == 0) cublas_launch(); else cand_launch();
        CK(cudaEventRecord(ev[4 * r + 2 * which + 1], stream));
      }
    }
    if (!wait_stream(stream, 60.0)) {
      emit(std::string(head) + ",\"verdict\":\"HANG\"}");
      _exit(3);
    }
    CK(cudaGetLastError());
    std::vector<float> cub_ms(reps), cand_ms(reps);
    for (int r = 0; r < reps; ++r) {
      CK(cudaEventElapsedTime(&cub_ms[r], ev[4 * r], ev[4 * r + 1]));
      CK(cudaEventElapsedTime(&cand_ms[r], ev[4 * r + 2], ev[4 * r + 3]));
    }
    for (auto& e : ev) cudaEventDestroy(e);
    auto half_spread = [&](const std::vector<float>& v) {  // first half vs second half of the run
      std::vector<float> a(v.begin(), v.begin() + v.size() / 2), b(v.begin() + v.size() / 2, v.end());
      return std::fabs(median(a) - median(b)) / std::max(median(v), 1e-9);
    };
    const double cand_med = median(cand_ms), cublas_ms = median(cub_ms);
    const double cand_min = *std::min_element(cand_ms.begin(), cand_ms.end());
    // The output of the timed runs is checked again.
    CK(cudaMemsetAsync(buf.c, 0xFF, m * n * di.out_bytes, stream));
    cand_launch();
    CK(cudaMemsetAsync(d_st, 0, sizeof(Stats), stream));
    if (di.out == CROQ_F32)
      compare<float><<<1024, 256, 0, stream>>>(static_cast<float*>(buf.c), n, buf.ref, n, m, n, atol, rtol, d_st);
    else if (di.out == CROQ_F16)
      compare<__half><<<1024, 256, 0, stream>>>(static_cast<__half*>(buf.c), n, buf.ref, n, m, n, atol, rtol, d_st);
    else
      compare<__nv_bfloat16><<<1024, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(buf.c), n, buf.ref, n, m, n,
                                                       atol, rtol, d_st);
    CK(cudaMemcpyAsync(&h, d_st, sizeof h, cudaMemcpyDeviceToHost, stream));
    CK(cudaStreamSynchronize(stream));
    const bool pass2 = h.nan_count == 0 && h.bad_count == 0;
    char tb[512];
    snprintf(tb, sizeof tb,
             ",\"ms\":%.5f,\"min_ms\":%.5f,\"tflops\":%.1f,\"cublas_ms\":%.5f,\"cublas_tflops\":%.1f,"
             "\"cublas_spread\":%.3f,\"spread\":%.3f,\"ratio\":%.3f,\"recheck\":\"%s\",\"l2_flush\":%s,"
             "\"reps\":%d,\"interleaved\":true",
             cand_med, cand_min, flops / cand_med * 1e-9, cublas_ms, flops / cublas_ms * 1e-9, half_spread(cub_ms),
             half_spread(cand_ms), cublas_ms / cand_med, pass2 ? "PASS" : "FAIL", g_flush ? "true" : "false", reps);
    j += tb;
  }
  j += "}";
  emit(j);
  cudaFree(d_sq);
  cudaFree(d_st);
}

}  // namespace

int main(int argc, char** argv) {
  std::string so;
  std::vector<Case> cases;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        fprintf(stderr, "%s needs a value\n", a.c_str());
        exit(2);
      }
      return argv[++i];
    };
    if (a == "--so") so = next();
    else if (a == "--label") g_label = next();
    else if (a == "--reps") g_reps = atoi(next());
    else if (a == "--no-flush") g_flush = false;
    else if (a == "--out") {
      g_out = fopen(next(), "a");
    } else if (a == "--check" || a == "--time") {
      Case c;
      const char* v = next();
      if (!parse_case(v, c)) {
        fprintf(stderr, "bad case %s (want M,N,K,DTYPE,LAYOUT)\n", v);
        return 2;
      }
      c.time = a == "--time";
      cases.push_back(c);
    } else {
      fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (so.empty() || cases.empty() || g_reps < 1) {
    fprintf(stderr, "usage: gemm_probe --so X.so --label NAME (--check|--time M,N,K,DTYPE,LAYOUT)...\n");
    return 2;
  }
  if (g_label.empty()) g_label = so;
  Candidate cand;
  cand.handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!cand.handle) {
    emit("{\"label\":\"" + json_escape(g_label) + "\",\"verdict\":\"ERROR\",\"error\":\"dlopen: " +
         json_escape(dlerror()) + "\"}");
    return 1;
  }
  cand.matmul = reinterpret_cast<croq_matmul_fn>(dlsym(cand.handle, CROQ_MATMUL_SYMBOL));
  cand.ws = reinterpret_cast<croq_matmul_workspace_bytes_fn>(dlsym(cand.handle, CROQ_MATMUL_WORKSPACE_SYMBOL));
  cand.info = reinterpret_cast<croq_kernel_info_fn>(dlsym(cand.handle, CROQ_KERNEL_INFO_SYMBOL));
  if (!cand.matmul) {
    emit("{\"label\":\"" + json_escape(g_label) + "\",\"verdict\":\"ERROR\",\"error\":\"no croq_matmul\"}");
    return 1;
  }
  if (cand.info) fprintf(stderr, "[%s] info: %s\n", g_label.c_str(), cand.info());
  try {
    cublasHandle_t blas;
    cudaStream_t stream;
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CB(cublasCreate(&blas));
    CB(cublasSetStream(blas, stream));
    uint64_t seed = static_cast<uint64_t>(time(nullptr)) ^ (static_cast<uint64_t>(getpid()) << 20);
    for (const auto& c : cases) {
      fprintf(stderr, "[%s] %s %lldx%lldx%lld %s B=%s seed=%llu\n", g_label.c_str(), c.time ? "time" : "check", c.m,
              c.n, c.k, c.dtype.c_str(), c.layout.c_str(), static_cast<unsigned long long>(seed));
      run_case(cand, blas, stream, c, seed++);
    }
    cublasDestroy(blas);
  } catch (const std::exception& e) {
    emit("{\"label\":\"" + json_escape(g_label) + "\",\"verdict\":\"ERROR\",\"error\":\"" + json_escape(e.what()) +
         "\"}");
    return 1;
  }
  return 0;
}
