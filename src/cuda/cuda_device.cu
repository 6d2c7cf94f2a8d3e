// CUDA implementation of the GPU runner's device work (cuda_device.hpp). Every CUDA, cuBLAS and
// cuBLASLt call is checked and reported with the file, line and call text.
#include "cuda_device.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>

#include "croq/measure/portable.hpp"
#include "cusparselt_api.hpp"

namespace croq::gpu_runner {

size_t elem_bytes(Elem e) {
  switch (e) {
    case Elem::f16:
    case Elem::bf16: return 2;
    case Elem::f32: return 4;
    case Elem::e4m3: return 1;
  }
  return 4;
}

namespace {

constexpr size_t k_guard_bytes = 256 * 1024;
constexpr unsigned char k_guard_byte = 0xA5;
constexpr size_t k_library_workspace = 64ull << 20;

bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
    case cudaErrorUnknown: return true;
    default: return false;
  }
}

CudaStatus check_cuda(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess) return {};
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s: %s (%s at %s:%d)", cudaGetErrorName(e), cudaGetErrorString(e), call, file, line);
  return {false, is_sticky(e), buf};
}

CudaStatus check_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return {};
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s: %s (%s at %s:%d)", cublasGetStatusName(s), cublasGetStatusString(s), call, file,
                line);
  return {false, false, buf};
}

#define CK(call)                                                        \
  do {                                                                  \
    CudaStatus st_ = check_cuda((call), #call, __FILE__, __LINE__);     \
    if (!st_.ok) return st_;                                            \
  } while (0)
#define CKB(call)                                                       \
  do {                                                                  \
    CudaStatus st_ = check_cublas((call), #call, __FILE__, __LINE__);   \
    if (!st_.ok) return st_;                                            \
  } while (0)

// ---- kernels ----

template <typename T>
__device__ T from_float(float x);
template <>
__device__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <>
__device__ float from_float<float>(float x) { return x; }
template <>
__device__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float x) { return __nv_fp8_e4m3(x); }

template <typename T>
__device__ float to_float(T x);
template <>
__device__ float to_float<__half>(__half x) { return __half2float(x); }
template <>
__device__ float to_float<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <>
__device__ float to_float<float>(float x) { return x; }

template <typename T>
__global__ void fill_kernel(T* p, size_t count, uint64_t seed, uint64_t stream) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    p[i] = from_float<T>(random_uniform(seed, stream, i));
  }
}

// 2:4 sparse A (portable.hpp): the pattern's values, and poison (a candidate) or zeros (a library)
// outside the pattern.
template <typename T>
__global__ void fill_sparse_a_kernel(T* p, size_t count, uint64_t k, uint64_t seed, bool poison) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    const float v = random_uniform(seed, k_stream_a, i);
    p[i] = from_float<T>(sparse24_value(seed, i / k, i % k, k, v, poison));
  }
}

__global__ void fill_meta_kernel(unsigned char* meta, size_t count, uint64_t k, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    meta[i] = sparse24_meta_byte(seed, i, k);
  }
}

// Whether element i of A [., k] is inside the pattern its metadata names.
__device__ __forceinline__ bool kept_by_meta(const unsigned char* meta, size_t i, uint64_t k) {
  const uint64_t row = i / k, col = i % k;
  const unsigned nibble = (meta[row * (k / 8) + col / 8] >> (4 * ((col / 4) & 1))) & 0xFu;
  const unsigned pos = static_cast<unsigned>(col & 3);
  return pos == (nibble & 3u) || pos == (nibble >> 2);
}

// The reference's A: the positions outside the pattern set to zero.
template <typename T>
__global__ void prune_kernel(const T* a, const unsigned char* meta, T* out, size_t count, uint64_t k) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    out[i] = kept_by_meta(meta, i, k) ? a[i] : from_float<T>(0.0f);
  }
}

__global__ void upcast_prune_e4m3_kernel(const __nv_fp8_e4m3* in, const unsigned char* meta, __half* out, size_t count,
                                         uint64_t k) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    out[i] = kept_by_meta(meta, i, k) ? __float2half_rn(static_cast<float>(in[i])) : __float2half_rn(0.0f);
  }
}

// Bytes of `x` that differ from `y` (n bytes), added to *out: the inputs a target got against the
// runner's copy of them (a target that wrote into its const inputs).
__global__ void count_differences_kernel(const unsigned char* x, const unsigned char* y, size_t n,
                                         unsigned long long* out) {
  unsigned long long local = 0;
  const size_t words = n / 4;
  const auto* xw = reinterpret_cast<const uint32_t*>(x);
  const auto* yw = reinterpret_cast<const uint32_t*>(y);
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += size_t(gridDim.x) * blockDim.x) {
    local += xw[i] != yw[i];
  }
  if (blockIdx.x == 0 && threadIdx.x < n % 4) local += x[words * 4 + threadIdx.x] != y[words * 4 + threadIdx.x];
  if (local) atomicAdd(out, local);
}


// Scaled fp8 inputs (portable.hpp): magnitudes log-uniform over e4m3's range.
__global__ void fill_fp8_scaled_kernel(__nv_fp8_e4m3* p, size_t count, uint64_t seed, uint64_t stream) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    p[i] = __nv_fp8_e4m3(fp8_scaled_value(seed, stream, i));
  }
}

// The block-scaled reference's f32 operand: element i of a [rows, k] e4m3 matrix times the scale
// of its block, scale[(row / rows_per_block) * kb + col / bk] (A: rows_per_block 1; B stored
// [N,K]: rows_per_block = the N block).
// The f32 value of each e4m3 element (rows of k) times its block's scale: with m_major (A's scales,
// [kb, rows]) the scale of row r, k block q is scale[q * rows + r], else (B's, [rows / rows_per_block,
// kb]) scale[(r / rows_per_block) * kb + q].
__global__ void scale_upcast_kernel(const __nv_fp8_e4m3* in, const float* scale, float* out, size_t count, uint64_t k,
                                    uint64_t kb, uint64_t bk, uint64_t rows_per_block, bool m_major) {
  const uint64_t rows = count / k;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    const uint64_t row = i / k, col = i % k;
    const uint64_t at = m_major ? (col / bk) * rows + row : (row / rows_per_block) * kb + col / bk;
    out[i] = static_cast<float>(in[i]) * scale[at];
  }
}

__global__ void abs_kernel(float* p, size_t count) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    p[i] = fabsf(p[i]);
  }
}

__global__ void f32_to_bf16_kernel(const float* in, __nv_bfloat16* out, size_t count) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    out[i] = __float2bfloat16_rn(in[i]);
  }
}

__global__ void upcast_e4m3_kernel(const __nv_fp8_e4m3* in, __half* out, size_t count) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    out[i] = __float2half_rn(static_cast<float>(in[i]));
  }
}

struct CompareAcc {
  unsigned long long mismatches;
  unsigned long long excused;
  unsigned long long nan_count;
  unsigned int max_abs_bits;  // non-negative floats compare as their bit patterns
  unsigned int max_rel_bits;
  double sum_d2;
  double sum_w2;
};

template <typename T>
__global__ void compare_kernel(const T* got, const float* want, const float* mag, double mag_tol, size_t count,
                               double base, double rel, CompareAcc* acc) {
  unsigned long long mism = 0, nans = 0, excused = 0;
  float max_abs = 0.f, max_rel = 0.f;
  double d2 = 0, w2 = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    const float g = to_float<T>(got[i]);
    const float w = want[i];
    if (element_fails(g, w, base, rel, mag ? mag_tol * mag[i] : 0.0)) ++mism;
    else if (mag && element_fails(g, w, base, rel)) ++excused;
    if (!isfinite(g)) {
      ++nans;
    } else {
      const float d = fabsf(g - w);
      max_abs = fmaxf(max_abs, d);
      if (fabsf(w) >= base) max_rel = fmaxf(max_rel, d / fabsf(w));
      d2 += double(d) * double(d);
    }
    w2 += double(w) * double(w);
  }
  for (int off = 16; off > 0; off >>= 1) {
    mism += __shfl_down_sync(0xffffffffu, mism, off);
    nans += __shfl_down_sync(0xffffffffu, nans, off);
    excused += __shfl_down_sync(0xffffffffu, excused, off);
    max_abs = fmaxf(max_abs, __shfl_down_sync(0xffffffffu, max_abs, off));
    max_rel = fmaxf(max_rel, __shfl_down_sync(0xffffffffu, max_rel, off));
    d2 += __shfl_down_sync(0xffffffffu, d2, off);
    w2 += __shfl_down_sync(0xffffffffu, w2, off);
  }
  if ((threadIdx.x & 31) == 0) {
    if (mism) atomicAdd(&acc->mismatches, mism);
    if (nans) atomicAdd(&acc->nan_count, nans);
    if (excused) atomicAdd(&acc->excused, excused);
    atomicMax(&acc->max_abs_bits, __float_as_uint(max_abs));
    atomicMax(&acc->max_rel_bits, __float_as_uint(max_rel));
    atomicAdd(&acc->sum_d2, d2);
    atomicAdd(&acc->sum_w2, w2);
  }
}

__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Holds the stream until the host sets *release (nvbench's blocking kernel), so that the start
// event, the launch and the stop event are all enqueued before any of them runs: the host's
// launch overhead stays out of the measured interval. Gives up after `timeout_ns` (a launch
// function that synchronises would otherwise wait forever) and says so in *timed_out.
__global__ void hold_kernel(volatile int* release, volatile int* timed_out, unsigned long long timeout_ns) {
  const unsigned long long start = global_timer_ns();
  while (*release == 0) {
    if (global_timer_ns() - start > timeout_ns) {
      *timed_out = 1;
      break;
    }
    __nanosleep(1000);
  }
}

unsigned grid_for(size_t count) {
  size_t blocks = (count + 255) / 256;
  return static_cast<unsigned>(std::min<size_t>(std::max<size_t>(blocks, 1), 65535u * 8));
}

// ---- NVML, loaded at run time (the driver's library; absent on machines without a driver) ----

struct Nvml {
  using Device = void*;
  using InitFn = int (*)();
  using HandleByUuidFn = int (*)(const char*, Device*);
  using ClockFn = int (*)(Device, int, unsigned*);
  using DriverFn = int (*)(char*, unsigned);
  using ReasonsFn = int (*)(Device, unsigned long long*);
  using ProcessesFn = int (*)(Device, unsigned*, void*);
  void* lib = nullptr;
  Device dev = nullptr;
  ReasonsFn reasons = nullptr;
  ProcessesFn processes = nullptr;
  ClockFn clock = nullptr;
  ClockFn max_clock = nullptr;
  DriverFn driver = nullptr;

  void open(const std::string& uuid) {
    lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    auto init = reinterpret_cast<InitFn>(::dlsym(lib, "nvmlInit_v2"));
    auto by_uuid = reinterpret_cast<HandleByUuidFn>(::dlsym(lib, "nvmlDeviceGetHandleByUUID"));
    clock = reinterpret_cast<ClockFn>(::dlsym(lib, "nvmlDeviceGetClockInfo"));
    max_clock = reinterpret_cast<ClockFn>(::dlsym(lib, "nvmlDeviceGetMaxClockInfo"));
    driver = reinterpret_cast<DriverFn>(::dlsym(lib, "nvmlSystemGetDriverVersion"));
    // The clock event reasons (renamed from "throttle reasons" in newer drivers; same values).
    reasons = reinterpret_cast<ReasonsFn>(::dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons"));
    if (!reasons) reasons = reinterpret_cast<ReasonsFn>(::dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons"));
    processes = reinterpret_cast<ProcessesFn>(::dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3"));
    if (!processes) processes = reinterpret_cast<ProcessesFn>(::dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v2"));
    if (!init || !by_uuid || init() != 0 || by_uuid(uuid.c_str(), &dev) != 0) dev = nullptr;
  }
  std::optional<int> sm_clock() {
    unsigned v = 0;
    if (dev && clock && clock(dev, 1 /* NVML_CLOCK_SM */, &v) == 0) return static_cast<int>(v);
    return std::nullopt;
  }
  std::optional<unsigned long long> clock_reasons() {
    unsigned long long v = 0;
    if (dev && reasons && reasons(dev, &v) == 0) return v;
    return std::nullopt;
  }
  // How many compute processes are on the device (this one included). Asked with an empty array:
  // NVML answers NVML_SUCCESS (0) when there is none, else NVML_ERROR_INSUFFICIENT_SIZE (7) with
  // the count.
  std::optional<int> compute_processes() {
    if (!dev || !processes) return std::nullopt;
    unsigned count = 0;
    const int r = processes(dev, &count, nullptr);
    if (r == 0 || r == 7) return static_cast<int>(count);
    return std::nullopt;
  }
  std::optional<int> sm_max_clock() {
    unsigned v = 0;
    if (dev && max_clock && max_clock(dev, 1, &v) == 0) return static_cast<int>(v);
    return std::nullopt;
  }
  std::string driver_version() {
    char buf[96] = {0};
    if (lib && driver && driver(buf, sizeof buf) == 0) return buf;
    return {};
  }
};

std::string format_uuid(const cudaUUID_t& u) {
  const unsigned char* b = reinterpret_cast<const unsigned char*>(u.bytes);
  char buf[64];
  std::snprintf(buf, sizeof buf, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return buf;
}

cudaDataType_t cuda_type(Elem e) {
  switch (e) {
    case Elem::f16: return CUDA_R_16F;
    case Elem::bf16: return CUDA_R_16BF;
    case Elem::f32: return CUDA_R_32F;
    case Elem::e4m3: return CUDA_R_8F_E4M3;
  }
  return CUDA_R_32F;
}

}  // namespace

struct CudaDevice::Impl {
  int ordinal = 0;
  CudaFacts facts;
  Nvml nvml;
  std::vector<int> clock_samples;
  std::optional<unsigned long long> reasons_seen;  // OR of the clock event reasons sampled
  int limited_samples = 0;
  std::optional<int> other_processes;  // most compute processes besides this one at a sample
  cudaStream_t stream = nullptr;
  cudaEvent_t ev_start = nullptr, ev_stop = nullptr;
  int* host_flags = nullptr;  // [0] release, [1] timed out; mapped pinned memory
  int* dev_flags = nullptr;

  CudaProblem p;
  int sets = 0;
  std::vector<void*> a, b;
  unsigned char* c_alloc = nullptr;
  void* c = nullptr;
  size_t c_bytes = 0;
  std::vector<float*> refs;  // the f32 reference of each input set
  std::vector<float*> mags;  // block-scaled: sum_k |a_ik sa| |b_kj sb| of each input set (tolerance.hpp)
  __half* a16 = nullptr;
  __half* b16 = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  std::vector<unsigned char*> meta;  // sparse: per set, [M, K/8]
  // The runner's copy of each set's inputs (A, B, the metadata, the scales) as it wrote them, and
  // the counters of bytes a target changed (check_inputs).
  std::vector<void*> a0, b0, meta0, as0, bs0;
  unsigned long long* differences = nullptr;  // one counter per input
  // The inputs of a set and the runner's copies of them, with their sizes (0: the problem has none).
  struct Input {
    const char* name;
    void* live;
    void* copy;
    size_t bytes;
  };
  // The inputs' sizes in bytes, in inputs()'s order (prepare allocates the runner's copies by it).
  std::array<size_t, 5> input_bytes() const {
    return {in_count_a() * elem_bytes(p.in), in_count_b() * elem_bytes(p.in), p.sparse ? meta_count() : 0,
            a_scale_count() * sizeof(float), b_scale_count() * sizeof(float)};
  }
  std::array<Input, 5> inputs(int set) const {
    const auto bytes = input_bytes();
    return {{{"A", a[set], a0[set], bytes[0]},
             {"B", b[set], b0[set], bytes[1]},
             {"A's metadata", p.sparse ? meta[set] : nullptr, meta0[set], bytes[2]},
             {"A's scales", p.scale_mode != 0 ? a_scale[set] : nullptr, as0[set], bytes[3]},
             {"B's scales", p.scale_mode != 0 ? b_scale[set] : nullptr, bs0[set], bytes[4]}}};
  }
  std::vector<void*> prepared;       // the candidate's prepared A, per set
  size_t prepared_bytes = 0;
  void* a_pruned = nullptr;          // sparse, not fp8: the reference's A
  // Scales, per set: on the device (what the candidate and the library read) and on the host
  // (where they are computed, portable.hpp); the transposed copies for cuBLASLt's layouts.
  std::vector<float*> a_scale, b_scale, a_scale_t, b_scale_t;
  std::vector<std::vector<float>> h_as, h_bs, h_as_t, h_bs_t;
  float* a32 = nullptr;              // block-scaled reference: the scaled f32 operands
  float* b32 = nullptr;
  float* c32 = nullptr;              // block-scaled library fallback: its f32 product
  void* flush = nullptr;
  size_t flush_bytes = 0;
  int flush_count = 0;
  CompareAcc* acc = nullptr;

  // candidate
  CandidateEntry cand;
  bool has_candidate() const { return cand.gemm || cand.matmul; }

  // cuSPARSELt (a sparse problem's library baseline)
  struct CsPlan {
    cslt::AlgSelection sel{};
    cslt::Plan plan{};
    bool sel_ok = false, plan_ok = false;
  };
  std::shared_ptr<CusparseLtApi> cs_api;
  cslt::Handle cs_handle{};
  cslt::MatDescriptor cs_a{}, cs_b{}, cs_c{};
  cslt::MatmulDescriptor cs_mm{};
  bool cs_handle_ok = false, cs_a_ok = false, cs_b_ok = false, cs_c_ok = false;
  std::vector<std::unique_ptr<CsPlan>> cs_plans;
  std::vector<int> plan_of;  // per variant: index in cs_plans, or -1
  std::vector<void*> cs_compressed;
  size_t cs_compressed_bytes = 0;
  void* cs_buffer = nullptr;
  void* cs_ws = nullptr;
  size_t cs_ws_bytes = 0;
  int* cs_valid = nullptr;
  std::string cs_error;   // why cuSPARSELt cannot run these inputs (its launches fail with it)
  int cs_searched = -1;   // the variant of the searched plan
  bool cs_search_done = false;
  LibraryStatus cs_status;

  // libraries
  cublasHandle_t ref_handle = nullptr;
  cublasHandle_t lib_handle = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* lib_ws = nullptr;
  struct LtPlan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  };
  LtPlan lt_plain, lt_fast;
  std::vector<LibVariant> variants;
  std::vector<cublasLtMatmulHeuristicResult_t> lt_results;  // per variant (unused for cublas)
  int selected = -1;

  ~Impl() {
    // Errors are ignored here: on a lost context the process exits right after anyway.
    if (cs_api) {
      for (auto& pl : cs_plans) {
        if (pl->plan_ok) cs_api->plan_destroy(&pl->plan);
      }
      for (auto [ok, d] : {std::pair{cs_a_ok, &cs_a}, std::pair{cs_b_ok, &cs_b}, std::pair{cs_c_ok, &cs_c}}) {
        if (ok) cs_api->mat_descriptor_destroy(d);
      }
      if (cs_handle_ok) cs_api->destroy(&cs_handle);
    }
    for (void* ptr : cs_compressed) cudaFree(ptr);
    for (void* ptr : {cs_buffer, cs_ws, static_cast<void*>(cs_valid)}) {
      if (ptr) cudaFree(ptr);
    }
    for (void* ptr : meta) cudaFree(ptr);
    for (auto* v : {&a0, &b0, &meta0, &as0, &bs0}) {
      for (void* ptr : *v) cudaFree(ptr);
    }
    if (differences) cudaFree(differences);
    for (const std::vector<float*>* v : {&a_scale, &b_scale, &a_scale_t, &b_scale_t}) {
      for (float* ptr : *v) cudaFree(ptr);
    }
    if (a32) cudaFree(a32);
    if (c32) cudaFree(c32);
    if (b32) cudaFree(b32);
    for (void* ptr : prepared) cudaFree(ptr);
    if (a_pruned) cudaFree(a_pruned);
    for (void* ptr : a) cudaFree(ptr);
    for (void* ptr : b) cudaFree(ptr);
    for (float* ptr : refs) cudaFree(ptr);
    for (float* ptr : mags) cudaFree(ptr);
    for (void* ptr : {static_cast<void*>(c_alloc), static_cast<void*>(a16),
                      static_cast<void*>(b16), workspace, flush, static_cast<void*>(acc), lib_ws}) {
      if (ptr) cudaFree(ptr);
    }
    if (host_flags) cudaFreeHost(host_flags);
    if (ev_start) cudaEventDestroy(ev_start);
    if (ev_stop) cudaEventDestroy(ev_stop);
    for (LtPlan* pl : {&lt_plain, &lt_fast}) {
      if (pl->desc) cublasLtMatmulDescDestroy(pl->desc);
      if (pl->a) cublasLtMatrixLayoutDestroy(pl->a);
      if (pl->b) cublasLtMatrixLayoutDestroy(pl->b);
      if (pl->c) cublasLtMatrixLayoutDestroy(pl->c);
    }
    if (lt) cublasLtDestroy(lt);
    if (lib_handle) cublasDestroy(lib_handle);
    if (ref_handle) cublasDestroy(ref_handle);
    if (stream) cudaStreamDestroy(stream);
  }

  size_t in_count_a() const { return size_t(p.m) * p.k; }
  size_t in_count_b() const { return size_t(p.k) * p.n; }
  size_t out_count() const { return size_t(p.m) * p.n; }
  size_t meta_count() const { return size_t(p.m) * size_t(p.k / 8); }
  int64_t k_blocks() const { return (p.k + p.scale_bk - 1) / p.scale_bk; }
  int64_t n_blocks() const { return (p.n + p.scale_bn - 1) / p.scale_bn; }
  size_t a_scale_count() const { return p.scale_mode == 1 ? 1 : p.scale_mode == 2 ? size_t(p.m) * k_blocks() : 0; }
  size_t b_scale_count() const { return p.scale_mode == 1 ? 1 : p.scale_mode == 2 ? size_t(n_blocks()) * k_blocks() : 0; }

  croq_gemm_operands operands(int set) const {
    croq_gemm_operands ops{};
    ops.a = a[set];
    ops.a_meta = p.sparse ? meta[set] : nullptr;
    ops.b = b[set];
    ops.c = c;
    if (p.scale_mode != 0) {
      ops.a_scale = a_scale[set];
      ops.b_scale = b_scale[set];
    }
    if (!prepared.empty()) {
      ops.a_prepared = prepared[set];
      ops.a_prepared_bytes = prepared_bytes;
    }
    ops.workspace = workspace;
    ops.workspace_bytes = workspace_bytes;
    return ops;
  }

  CudaStatus check_cslt(cusparseStatus_t st, const char* call) const {
    if (st == CUSPARSE_STATUS_SUCCESS) return {};
    return {false, false, std::string(call) + ": " + cs_api->status_text(st)};
  }

  // cuSPARSELt's descriptors, the default plan, one plan per algorithm id and one for its own
  // search; `variants` gets one entry per plan that initialises.
  CudaStatus open_cusparselt() {
    cs_status.library = "cusparselt";
    cs_status.path = cusparselt_origin(*cs_api);
    if (auto st = check_cslt(cs_api->init(&cs_handle), "cusparseLtInit"); !st.ok) return st;
    cs_handle_ok = true;
    cs_status.loaded = true;
    cs_api->get_version(&cs_handle, &cs_status.version);
    const cudaDataType in = cuda_type(p.in), out = cuda_type(p.out);
    constexpr uint32_t align = 16;
    auto fail = [&](CudaStatus st) {
      cs_status.error = "cuSPARSELt offers nothing for this problem: " + st.error;
      return CudaStatus{};
    };
    if (auto st = check_cslt(cs_api->structured_descriptor_init(&cs_handle, &cs_a, p.m, p.k, p.k, align, in,
                                                              CUSPARSE_ORDER_ROW, cslt::SPARSITY_50_PERCENT),
                             "cusparseLtStructuredDescriptorInit(A)");
        !st.ok) {
      return fail(st);
    }
    cs_a_ok = true;
    // B row-major K x N (op N), or stored N x K row-major and transposed (op T), as cuBLAS's view.
    const int64_t b_rows = p.b_col ? p.n : p.k, b_cols = p.b_col ? p.k : p.n;
    if (auto st = check_cslt(cs_api->dense_descriptor_init(&cs_handle, &cs_b, b_rows, b_cols, b_cols, align, in,
                                                         CUSPARSE_ORDER_ROW),
                             "cusparseLtDenseDescriptorInit(B)");
        !st.ok) {
      return fail(st);
    }
    cs_b_ok = true;
    if (auto st = check_cslt(cs_api->dense_descriptor_init(&cs_handle, &cs_c, p.m, p.n, p.n, align, out, CUSPARSE_ORDER_ROW),
                             "cusparseLtDenseDescriptorInit(C)");
        !st.ok) {
      return fail(st);
    }
    cs_c_ok = true;
    if (auto st = check_cslt(cs_api->matmul_descriptor_init(&cs_handle, &cs_mm, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                          p.b_col ? CUSPARSE_OPERATION_TRANSPOSE
                                                                  : CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                          &cs_a, &cs_b, &cs_c, &cs_c, cslt::COMPUTE_32F),
                             "cusparseLtMatmulDescriptorInit");
        !st.ok) {
      return fail(st);
    }
    // The pruned A of set 0, for the library's own checks (cuSPARSELt reads it only through the
    // compressed copy at run time).
    void* a0 = a[0];
    (void)cs_api->matmul_desc_set_attribute(&cs_handle, &cs_mm, cslt::MATMUL_SPARSE_MAT_POINTER, &a0, sizeof a0);
    int max_id = 0;
    {
      auto def = std::make_unique<CsPlan>();
      if (auto st = check_cslt(cs_api->alg_selection_init(&cs_handle, &def->sel, &cs_mm, cslt::MATMUL_ALG_DEFAULT),
                               "cusparseLtMatmulAlgSelectionInit");
          !st.ok) {
        return fail(st);
      }
      (void)cs_api->alg_get_attribute(&cs_handle, &def->sel, cslt::ALG_CONFIG_MAX_ID, &max_id, sizeof max_id);
    }
    cs_status.error.clear();
    std::string first_error;
    auto add_plan = [&](int id, bool search) {
      auto pl = std::make_unique<CsPlan>();
      CudaStatus st = check_cslt(cs_api->alg_selection_init(&cs_handle, &pl->sel, &cs_mm, cslt::MATMUL_ALG_DEFAULT),
                                 "cusparseLtMatmulAlgSelectionInit");
      pl->sel_ok = st.ok;
      if (st.ok && id > 0) {
        st = check_cslt(cs_api->alg_set_attribute(&cs_handle, &pl->sel, cslt::ALG_CONFIG_ID, &id, sizeof id),
                        "cusparseLtMatmulAlgSetAttribute(CONFIG_ID)");
      }
      if (st.ok) st = check_cslt(cs_api->plan_init(&cs_handle, &pl->plan, &cs_mm, &pl->sel), "cusparseLtMatmulPlanInit");
      if (!st.ok) {
        if (first_error.empty()) first_error = st.error;
        return;
      }
      pl->plan_ok = true;
      size_t ws = 0;
      (void)cs_api->get_workspace(&cs_handle, &pl->plan, &ws);
      LibVariant v;
      v.library = "cusparseLt";
      v.api = "cusparseLtMatmul";
      v.searched = search;
      v.workspace_bytes = ws;
      read_cs_config(*pl, v);
      cs_ws_bytes = std::max(cs_ws_bytes, ws);
      if (search) cs_searched = static_cast<int>(variants.size());
      plan_of.push_back(static_cast<int>(cs_plans.size()));
      cs_plans.push_back(std::move(pl));
      variants.push_back(v);
      lt_results.push_back({});
    };
    // Variant 0 is the library's default plan; then every other algorithm id; then the plan of
    // cuSPARSELt's own search (made once set 0 is compressed).
    for (int id = 0; id <= std::max(0, max_id) && id < 256; ++id) add_plan(id, false);
    add_plan(0, true);
    cs_status.variants = static_cast<int>(cs_plans.size());
    if (cs_plans.empty()) {
      cs_status.error = "cuSPARSELt offers no plan for this problem: " + first_error;
      return {};
    }
    size_t buffer_bytes = 0;
    if (auto st = check_cslt(cs_api->compressed_size2(&cs_handle, &cs_a, &cs_compressed_bytes, &buffer_bytes),
                             "cusparseLtSpMMACompressedSize2");
        !st.ok) {
      cs_error = st.error;
      cs_status.error = st.error;
      return {};
    }
    cs_compressed.assign(sets, nullptr);
    for (int s = 0; s < sets; ++s) CK(cudaMalloc(&cs_compressed[s], std::max<size_t>(cs_compressed_bytes, 256)));
    CK(cudaMalloc(&cs_buffer, std::max<size_t>(buffer_bytes, 256)));
    CK(cudaMalloc(&cs_ws, std::max<size_t>(cs_ws_bytes, 256)));
    CK(cudaMalloc(reinterpret_cast<void**>(&cs_valid), sizeof(int)));
    return {};
  }

  void read_cs_config(const CsPlan& pl, LibVariant& v) const {
    auto get = [&](cslt::AlgAttribute a, int& out) {
      int x = -1;
      if (cs_api->alg_get_attribute(&cs_handle, &pl.sel, a, &x, sizeof x) == CUSPARSE_STATUS_SUCCESS) out = x;
    };
    get(cslt::ALG_CONFIG_ID, v.algo_id);
    get(cslt::SPLIT_K, v.splitk);
    get(cslt::SPLIT_K_MODE, v.split_k_mode);
    get(cslt::SPLIT_K_BUFFERS, v.split_k_buffers);
  }

  // cuSPARSELt's compression of the set's (pruned) A, untimed; the first time on set 0, also the
  // library's own algorithm search for the `searched` plan.
  CudaStatus compress_set(int set) {
    if (!cs_error.empty() || cs_plans.empty() || cs_compressed.empty()) return {};
    CK(cudaMemsetAsync(cs_valid, 0, sizeof(int), stream));
    CudaStatus st = check_cslt(cs_api->prune_check2(&cs_handle, &cs_a, 1, CUSPARSE_OPERATION_NON_TRANSPOSE, a[set],
                                                  cs_valid, stream),
                               "cusparseLtSpMMAPruneCheck2");
    int valid = 0;
    if (st.ok) {
      CK(cudaMemcpyAsync(&valid, cs_valid, sizeof valid, cudaMemcpyDeviceToHost, stream));
      CK(cudaStreamSynchronize(stream));
      if (valid != 0) st = {false, false, "cusparseLtSpMMAPruneCheck2: A is not a valid 2:4 pattern for cuSPARSELt"};
    }
    if (st.ok) {
      st = check_cslt(cs_api->compress2(&cs_handle, &cs_a, 1, CUSPARSE_OPERATION_NON_TRANSPOSE, a[set],
                                      cs_compressed[set], cs_buffer, stream),
                      "cusparseLtSpMMACompress2");
    }
    CK(cudaStreamSynchronize(stream));
    if (!st.ok) {
      cs_error = st.error;
      cs_status.error = st.error;
      return {};
    }
    if (set == 0 && !cs_search_done && cs_searched >= 0) {
      cs_search_done = true;
      CsPlan& pl = *cs_plans[plan_of[cs_searched]];
      const float one = 1.0f, zero = 0.0f;
      cudaStream_t streams[1] = {stream};
      CudaStatus ss = check_cslt(cs_api->matmul_search(&cs_handle, &pl.plan, &one, cs_compressed[0], b[0], &zero, c, c,
                                                     cs_ws, streams, 1),
                                 "cusparseLtMatmulSearch");
      CK(cudaStreamSynchronize(stream));
      LibVariant& v = variants[cs_searched];
      if (!ss.ok) {
        v.api = "cusparseLtMatmul (search failed: " + ss.error + ")";
      } else {
        read_cs_config(pl, v);
        size_t ws = 0;
        (void)cs_api->get_workspace(&cs_handle, &pl.plan, &ws);
        v.workspace_bytes = ws;
        if (ws > cs_ws_bytes) {
          CK(cudaFree(cs_ws));
          cs_ws = nullptr;
          CK(cudaMalloc(&cs_ws, ws));
          cs_ws_bytes = ws;
        }
      }
    }
    return {};
  }

  CudaStatus fill_typed(void* ptr, Elem e, size_t count, uint64_t seed, uint64_t stream_id) {
    const unsigned grid = grid_for(count);
    switch (e) {
      case Elem::f16: fill_kernel<<<grid, 256, 0, stream>>>(static_cast<__half*>(ptr), count, seed, stream_id); break;
      case Elem::bf16:
        fill_kernel<<<grid, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(ptr), count, seed, stream_id);
        break;
      case Elem::f32: fill_kernel<<<grid, 256, 0, stream>>>(static_cast<float*>(ptr), count, seed, stream_id); break;
      case Elem::e4m3:
        fill_kernel<<<grid, 256, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(ptr), count, seed, stream_id);
        break;
    }
    CK(cudaGetLastError());
    return {};
  }

  // Column-major view of the row-major problem: C^T (n x m) = op(B) (n x k) * A^T (k x m).
  CudaStatus gemm_ex(cublasHandle_t h, const void* A, const void* B, cudaDataType_t in_type, void* C,
                     cudaDataType_t c_type, cublasComputeType_t compute, float alpha = 1.0f) {
    const float one = alpha, zero = 0.0f;
    const cublasOperation_t op_b = p.b_col ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int ldb = static_cast<int>(p.b_col ? p.k : p.n);
    CKB(cublasGemmEx(h, op_b, CUBLAS_OP_N, static_cast<int>(p.n), static_cast<int>(p.m), static_cast<int>(p.k), &one,
                     B, in_type, ldb, A, in_type, static_cast<int>(p.k), &zero, C, c_type, static_cast<int>(p.n),
                     compute, CUBLAS_GEMM_DEFAULT));
    return {};
  }

  CudaStatus make_lt_plan(LtPlan& plan, bool fast_accum) {
    const cublasComputeType_t compute = p.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    CKB(cublasLtMatmulDescCreate(&plan.desc, compute, CUDA_R_32F));
    cublasOperation_t ta = p.b_col ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
    CKB(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CKB(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (p.in == Elem::e4m3) {
      int8_t fa = fast_accum ? 1 : 0;
      CKB(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fa, sizeof fa));
    }
    if (p.scale_mode == 2) {
      // cuBLASLt's A is croq's B ([N,K], 128x128 blocks) and its B croq's A (1x128 blocks).
      int32_t mode_a = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, mode_b = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
      CKB(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode_a, sizeof mode_a));
      CKB(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode_b, sizeof mode_b));
    }
    if (p.scale_mode != 0) {
      const void* sa = b_scale[0];
      const void* sb = a_scale[0];
      CKB(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa));
      CKB(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb));
    }
    const cudaDataType_t in = cuda_type(p.in), out = cuda_type(p.out);
    if (p.b_col) CKB(cublasLtMatrixLayoutCreate(&plan.a, in, p.k, p.n, p.k));
    else CKB(cublasLtMatrixLayoutCreate(&plan.a, in, p.n, p.k, p.n));
    CKB(cublasLtMatrixLayoutCreate(&plan.b, in, p.k, p.m, p.k));
    CKB(cublasLtMatrixLayoutCreate(&plan.c, out, p.n, p.m, p.n));
    return {};
  }

  CudaStatus lt_heuristics(LtPlan& plan, bool fast_accum, int top) {
    cublasLtMatmulPreference_t pref = nullptr;
    CKB(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = k_library_workspace;
    cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    std::vector<cublasLtMatmulHeuristicResult_t> res(top);
    int returned = 0;
    if (s == CUBLAS_STATUS_SUCCESS) {
      s = cublasLtMatmulAlgoGetHeuristic(lt, plan.desc, plan.a, plan.b, plan.c, plan.c, pref, top, res.data(), &returned);
    }
    cublasLtMatmulPreferenceDestroy(pref);
    if (s == CUBLAS_STATUS_NOT_SUPPORTED) return {};  // no algorithm for this problem: no variants
    CKB(s);
    for (int i = 0; i < returned; ++i) {
      if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
      LibVariant v;
      v.library = "cublasLt";
      v.api = "cublasLtMatmul";
      v.heuristic_rank = i;
      v.fast_accum = fast_accum;
      v.workspace_bytes = res[i].workspaceSize;
      v.waves = res[i].wavesCount;
      auto attr = [&](cublasLtMatmulAlgoConfigAttributes_t a, int& out, size_t size) {
        uint64_t value = 0;
        size_t written = 0;
        if (cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, a, &value, size, &written) == CUBLAS_STATUS_SUCCESS) {
          out = static_cast<int>(size == 2 ? static_cast<uint16_t>(value) : static_cast<uint32_t>(value));
        }
      };
      attr(CUBLASLT_ALGO_CONFIG_ID, v.algo_id, 4);
      attr(CUBLASLT_ALGO_CONFIG_TILE_ID, v.tile, 4);
      attr(CUBLASLT_ALGO_CONFIG_STAGES_ID, v.stages, 4);
      attr(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, v.splitk, 4);
      attr(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, v.reduction, 4);
      attr(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, v.swizzle, 4);
      attr(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, v.custom, 4);
      attr(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, v.cluster, 2);
      if (p.scale_mode == 1) v.scales = "per-tensor f32 (A_SCALE_POINTER, B_SCALE_POINTER)";
      if (p.scale_mode == 2) {
        // The layout of the scale tensors cuBLASLt expects is tried both ways for each: a variant
        // whose layout is wrong fails its check and is reported as such.
        for (int layout = 0; layout < 4; ++layout) {
          v.scale_layout = layout;
          v.scales = std::string("A (croq's B): BLK128x128_32F ") + (layout & 2 ? "[K/128, N/128]" : "[N/128, K/128]") +
                     "; B (croq's A): VEC128_32F " + (layout & 1 ? "[M, K/128]" : "[K/128, M]");
          variants.push_back(v);
          lt_results.push_back(res[i]);
        }
        continue;
      }
      variants.push_back(v);
      lt_results.push_back(res[i]);
    }
    return {};
  }
};

CudaDevice::CudaDevice() : m(std::make_unique<Impl>()) {}
CudaDevice::~CudaDevice() = default;

std::unique_ptr<CudaDevice> CudaDevice::open(const std::string& device, std::string& error, bool& no_device) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    no_device = true;
    error = e != cudaSuccess ? std::string("no CUDA device: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e)
                             : "no CUDA device visible";
    return nullptr;
  }
  int ordinal = -1;
  if (device.empty()) {
    ordinal = 0;
  } else if (device.rfind("GPU-", 0) == 0) {
    for (int i = 0; i < count; ++i) {
      cudaDeviceProp prop{};
      if (cudaGetDeviceProperties(&prop, i) == cudaSuccess && format_uuid(prop.uuid).rfind(device, 0) == 0) ordinal = i;
    }
  } else {
    char* end = nullptr;
    long v = std::strtol(device.c_str(), &end, 10);
    if (end && *end == '\0' && v >= 0 && v < count) ordinal = static_cast<int>(v);
  }
  if (ordinal < 0) {
    no_device = true;
    error = "device '" + device + "' is not among the " + std::to_string(count) + " visible CUDA devices";
    return nullptr;
  }
  std::unique_ptr<CudaDevice> d(new CudaDevice());
  Impl& m = *d->m;
  m.ordinal = ordinal;
  auto fail = [&](cudaError_t err, const char* what) {
    error = std::string(what) + ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
    return nullptr;
  };
  if ((e = cudaSetDevice(ordinal)) != cudaSuccess) return fail(e, "cudaSetDevice");
  cudaDeviceProp prop{};
  if ((e = cudaGetDeviceProperties(&prop, ordinal)) != cudaSuccess) return fail(e, "cudaGetDeviceProperties");
  m.facts.name = prop.name;
  m.facts.uuid = format_uuid(prop.uuid);
  m.facts.cc_major = prop.major;
  m.facts.cc_minor = prop.minor;
  m.facts.sm_count = prop.multiProcessorCount;
  m.facts.l2_bytes = prop.l2CacheSize;
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, ordinal);
  m.facts.max_sm_clock_mhz = clock_khz / 1000;
  m.nvml.open(m.facts.uuid);
  if (auto mx = m.nvml.sm_max_clock()) m.facts.max_sm_clock_mhz = *mx;
  m.facts.driver = m.nvml.driver_version();
  if (m.facts.driver.empty()) {
    int v = 0;
    cudaDriverGetVersion(&v);
    m.facts.driver = "CUDA driver API " + std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
  }
  if ((e = cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking)) != cudaSuccess) return fail(e, "cudaStreamCreate");
  if ((e = cudaEventCreate(&m.ev_start)) != cudaSuccess) return fail(e, "cudaEventCreate");
  if ((e = cudaEventCreate(&m.ev_stop)) != cudaSuccess) return fail(e, "cudaEventCreate");
  if ((e = cudaHostAlloc(reinterpret_cast<void**>(&m.host_flags), 2 * sizeof(int), cudaHostAllocMapped)) != cudaSuccess)
    return fail(e, "cudaHostAlloc");
  m.host_flags[0] = 1;
  m.host_flags[1] = 0;
  if ((e = cudaHostGetDevicePointer(reinterpret_cast<void**>(&m.dev_flags), m.host_flags, 0)) != cudaSuccess)
    return fail(e, "cudaHostGetDevicePointer");
  return d;
}

CudaFacts CudaDevice::facts() {
  CudaFacts f = m->facts;
  if (!m->clock_samples.empty()) {
    std::vector<int> s = m->clock_samples;
    std::sort(s.begin(), s.end());
    f.sm_clock_mhz = s[s.size() / 2];
    f.min_sm_clock_mhz = s.front();
  } else {
    f.sm_clock_mhz = m->nvml.sm_clock();
  }
  f.clock_limit_reasons = m->reasons_seen;
  f.clock_samples = static_cast<int>(m->clock_samples.size());
  f.limited_samples = m->limited_samples;
  f.other_processes = m->other_processes;
  return f;
}

void CudaDevice::sample_clock() {
  if (auto c = m->nvml.sm_clock()) m->clock_samples.push_back(*c);
  if (auto r = m->nvml.clock_reasons()) {
    m->reasons_seen = m->reasons_seen.value_or(0) | *r;
    if (*r & k_nvml_limiting_reasons) ++m->limited_samples;
  }
  if (auto n = m->nvml.compute_processes()) {
    const int others = std::max(0, *n - 1);
    m->other_processes = std::max(m->other_processes.value_or(0), others);
  }
}

CudaStatus CudaDevice::prepare(const CudaProblem& p, int sets, size_t workspace_bytes, size_t prepared_bytes) {
  Impl& s = *m;
  s.p = p;
  s.sets = sets;
  for (int i = 0; i < sets; ++i) {
    void* a = nullptr;
    void* b = nullptr;
    CK(cudaMalloc(&a, s.in_count_a() * elem_bytes(p.in)));
    CK(cudaMalloc(&b, s.in_count_b() * elem_bytes(p.in)));
    s.a.push_back(a);
    s.b.push_back(b);
  }
  s.c_bytes = s.out_count() * elem_bytes(p.out);
  CK(cudaMalloc(reinterpret_cast<void**>(&s.c_alloc), s.c_bytes + 2 * k_guard_bytes));
  s.c = s.c_alloc + k_guard_bytes;
  CK(cudaMemset(s.c_alloc, k_guard_byte, k_guard_bytes));
  CK(cudaMemset(s.c_alloc + k_guard_bytes + s.c_bytes, k_guard_byte, k_guard_bytes));
  for (int i = 0; i < sets; ++i) {
    float* r = nullptr;
    CK(cudaMalloc(reinterpret_cast<void**>(&r), s.out_count() * sizeof(float)));
    s.refs.push_back(r);
  }
  if (p.in == Elem::e4m3 && p.scale_mode != 2) {
    CK(cudaMalloc(reinterpret_cast<void**>(&s.a16), s.in_count_a() * sizeof(__half)));
    CK(cudaMalloc(reinterpret_cast<void**>(&s.b16), s.in_count_b() * sizeof(__half)));
  }
  if (p.scale_mode == 2) {
    CK(cudaMalloc(reinterpret_cast<void**>(&s.a32), s.in_count_a() * sizeof(float)));
    CK(cudaMalloc(reinterpret_cast<void**>(&s.b32), s.in_count_b() * sizeof(float)));
    for (int i = 0; i < sets; ++i) {
      float* r = nullptr;
      CK(cudaMalloc(reinterpret_cast<void**>(&r), s.out_count() * sizeof(float)));
      s.mags.push_back(r);
    }
  }
  if (p.scale_mode != 0) {
    std::vector<float*>* lists[4] = {&s.a_scale, &s.b_scale, &s.a_scale_t, &s.b_scale_t};
    const size_t counts[4] = {s.a_scale_count(), s.b_scale_count(), s.a_scale_count(), s.b_scale_count()};
    for (int i = 0; i < sets; ++i) {
      for (int l = 0; l < 4; ++l) {
        float* ptr = nullptr;
        CK(cudaMalloc(reinterpret_cast<void**>(&ptr), counts[l] * sizeof(float)));
        lists[l]->push_back(ptr);
      }
    }
    s.h_as.resize(sets);
    s.h_bs.resize(sets);
    s.h_as_t.resize(sets);
    s.h_bs_t.resize(sets);
  }
  if (p.sparse) {
    for (int i = 0; i < sets; ++i) {
      unsigned char* mp = nullptr;
      CK(cudaMalloc(reinterpret_cast<void**>(&mp), std::max<size_t>(s.meta_count(), 1)));
      s.meta.push_back(mp);
    }
    if (p.in != Elem::e4m3) CK(cudaMalloc(&s.a_pruned, s.in_count_a() * elem_bytes(p.in)));
  }
  if (prepared_bytes > 0) {
    s.prepared_bytes = prepared_bytes;
    for (int i = 0; i < sets; ++i) {
      void* pp = nullptr;
      CK(cudaMalloc(&pp, prepared_bytes));
      s.prepared.push_back(pp);
    }
  }
  if (workspace_bytes > 0) {
    CK(cudaMalloc(&s.workspace, workspace_bytes));
    s.workspace_bytes = workspace_bytes;
  }
  const auto bytes = s.input_bytes();
  for (int i = 0; i < sets; ++i) {
    std::vector<void*>* lists[5] = {&s.a0, &s.b0, &s.meta0, &s.as0, &s.bs0};
    for (int l = 0; l < 5; ++l) {
      void* ptr = nullptr;
      if (bytes[l] > 0) CK(cudaMalloc(&ptr, bytes[l]));
      lists[l]->push_back(ptr);
    }
  }
  CK(cudaMalloc(reinterpret_cast<void**>(&s.differences), 5 * sizeof(unsigned long long)));
  s.flush_bytes = std::max<size_t>(2 * static_cast<size_t>(s.facts.l2_bytes), 64ull << 20);
  CK(cudaMalloc(&s.flush, s.flush_bytes));
  CK(cudaMalloc(reinterpret_cast<void**>(&s.acc), sizeof(CompareAcc)));
  CKB(cublasCreate(&s.ref_handle));
  CKB(cublasSetStream(s.ref_handle, s.stream));
  // The reference: f32 accumulation, no reduced-precision split-K reductions; f32 inputs in
  // full f32 (never tf32, whatever NVIDIA_TF32_OVERRIDE says).
  CKB(cublasSetMathMode(s.ref_handle, p.in == Elem::f32 ? CUBLAS_PEDANTIC_MATH
                                                         : CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
  CK(cudaDeviceSynchronize());
  return {};
}

CudaStatus CudaDevice::fill(int set, uint64_t seed) {
  if (auto st = fill_body(set, seed); !st.ok) return st;
  // The runner's copy of what it wrote (check_inputs compares the inputs with it).
  Impl& s = *m;
  for (const auto& in : s.inputs(set)) {
    if (in.bytes > 0 && in.live && in.copy) {
      CK(cudaMemcpyAsync(in.copy, in.live, in.bytes, cudaMemcpyDeviceToDevice, s.stream));
    }
  }
  CK(cudaStreamSynchronize(s.stream));
  return {};
}

CudaStatus CudaDevice::check_inputs(int set, std::vector<std::string>& changed) {
  Impl& s = *m;
  const auto ins = s.inputs(set);
  CK(cudaMemsetAsync(s.differences, 0, ins.size() * sizeof(unsigned long long), s.stream));
  for (size_t l = 0; l < ins.size(); ++l) {
    if (ins[l].bytes == 0 || !ins[l].live || !ins[l].copy) continue;
    const unsigned grid = static_cast<unsigned>(std::min<size_t>((ins[l].bytes / 4 + 255) / 256 + 1, 4096));
    count_differences_kernel<<<grid, 256, 0, s.stream>>>(static_cast<const unsigned char*>(ins[l].live),
                                                         static_cast<const unsigned char*>(ins[l].copy), ins[l].bytes,
                                                         s.differences + l);
  }
  CK(cudaGetLastError());
  unsigned long long counts[5] = {};
  CK(cudaMemcpyAsync(counts, s.differences, sizeof counts, cudaMemcpyDeviceToHost, s.stream));
  CK(cudaStreamSynchronize(s.stream));
  for (size_t l = 0; l < ins.size(); ++l) {
    if (counts[l]) changed.emplace_back(ins[l].name);
  }
  return {};
}

CudaStatus CudaDevice::fill_body(int set, uint64_t seed) {
  Impl& s = *m;
  if (s.p.sparse) {
    // A candidate gets poison outside the pattern; a library (trusted) the pruned A itself.
    const bool poison = s.has_candidate();
    const size_t count = s.in_count_a();
    const uint64_t k = static_cast<uint64_t>(s.p.k);
    const unsigned grid = grid_for(count);
    switch (s.p.in) {
      case Elem::f16:
        fill_sparse_a_kernel<<<grid, 256, 0, s.stream>>>(static_cast<__half*>(s.a[set]), count, k, seed, poison);
        break;
      case Elem::bf16:
        fill_sparse_a_kernel<<<grid, 256, 0, s.stream>>>(static_cast<__nv_bfloat16*>(s.a[set]), count, k, seed, poison);
        break;
      case Elem::f32:
        fill_sparse_a_kernel<<<grid, 256, 0, s.stream>>>(static_cast<float*>(s.a[set]), count, k, seed, poison);
        break;
      case Elem::e4m3:
        fill_sparse_a_kernel<<<grid, 256, 0, s.stream>>>(static_cast<__nv_fp8_e4m3*>(s.a[set]), count, k, seed, poison);
        break;
    }
    fill_meta_kernel<<<grid_for(s.meta_count()), 256, 0, s.stream>>>(s.meta[set], s.meta_count(), k, seed);
    CK(cudaGetLastError());
  } else if (s.p.scale_mode != 0) {
    // Scaled fp8: inputs over e4m3's range, scales computed on the host (portable.hpp) and copied.
    fill_fp8_scaled_kernel<<<grid_for(s.in_count_a()), 256, 0, s.stream>>>(static_cast<__nv_fp8_e4m3*>(s.a[set]),
                                                                          s.in_count_a(), seed, k_stream_a);
    fill_fp8_scaled_kernel<<<grid_for(s.in_count_b()), 256, 0, s.stream>>>(static_cast<__nv_fp8_e4m3*>(s.b[set]),
                                                                          s.in_count_b(), seed, k_stream_b);
    CK(cudaGetLastError());
    auto& as = s.h_as[set];
    auto& bs = s.h_bs[set];
    as.resize(s.a_scale_count());
    bs.resize(s.b_scale_count());
    for (size_t i = 0; i < as.size(); ++i) as[i] = s.p.scale_mode == 1 ? fp8_tensor_scale(seed, 0) : fp8_block_scale(seed, 0, i);
    for (size_t i = 0; i < bs.size(); ++i) bs[i] = s.p.scale_mode == 1 ? fp8_tensor_scale(seed, 1) : fp8_block_scale(seed, 1, i);
    // Transposed copies, for cuBLASLt's layout variants: A's [KB, M] as [M, KB], B's [NB, KB] as
    // [KB, NB].
    auto transpose = [](const std::vector<float>& in, size_t rows, size_t cols, std::vector<float>& out) {
      out.resize(in.size());
      for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) out[c * rows + r] = in[r * cols + c];
    };
    const size_t kb = s.p.scale_mode == 2 ? size_t(s.k_blocks()) : 1;
    transpose(as, kb, as.size() / kb, s.h_as_t[set]);
    transpose(bs, bs.size() / kb, kb, s.h_bs_t[set]);
    CK(cudaMemcpyAsync(s.a_scale[set], as.data(), as.size() * sizeof(float), cudaMemcpyHostToDevice, s.stream));
    CK(cudaMemcpyAsync(s.b_scale[set], bs.data(), bs.size() * sizeof(float), cudaMemcpyHostToDevice, s.stream));
    CK(cudaMemcpyAsync(s.a_scale_t[set], s.h_as_t[set].data(), as.size() * sizeof(float), cudaMemcpyHostToDevice,
                       s.stream));
    CK(cudaMemcpyAsync(s.b_scale_t[set], s.h_bs_t[set].data(), bs.size() * sizeof(float), cudaMemcpyHostToDevice,
                       s.stream));
    CK(cudaStreamSynchronize(s.stream));
    return {};
  } else if (auto st = s.fill_typed(s.a[set], s.p.in, s.in_count_a(), seed, k_stream_a); !st.ok) {
    return st;
  }
  if (auto st = s.fill_typed(s.b[set], s.p.in, s.in_count_b(), seed, k_stream_b); !st.ok) return st;
  CK(cudaStreamSynchronize(s.stream));
  return {};
}

CudaStatus CudaDevice::reference(int set) {
  Impl& s = *m;
  const void* A = s.a[set];
  const void* B = s.b[set];
  cudaDataType_t in = cuda_type(s.p.in);
  const uint64_t k = static_cast<uint64_t>(s.p.k);
  if (s.p.sparse && s.p.in != Elem::e4m3) {
    // The reference multiplies A with the positions outside the pattern (as its metadata names
    // them) set to zero.
    const size_t count = s.in_count_a();
    const unsigned grid = grid_for(count);
    switch (s.p.in) {
      case Elem::f16:
        prune_kernel<<<grid, 256, 0, s.stream>>>(static_cast<const __half*>(A), s.meta[set], static_cast<__half*>(s.a_pruned),
                                                 count, k);
        break;
      case Elem::bf16:
        prune_kernel<<<grid, 256, 0, s.stream>>>(static_cast<const __nv_bfloat16*>(A), s.meta[set],
                                                 static_cast<__nv_bfloat16*>(s.a_pruned), count, k);
        break;
      default:
        prune_kernel<<<grid, 256, 0, s.stream>>>(static_cast<const float*>(A), s.meta[set], static_cast<float*>(s.a_pruned),
                                                 count, k);
        break;
    }
    CK(cudaGetLastError());
    A = s.a_pruned;
  }
  if (s.p.scale_mode == 2) {
    // Block scales applied in f32 to each element, then an f32 GEMM of the scaled operands.
    const uint64_t kb = static_cast<uint64_t>(s.k_blocks()), bk = static_cast<uint64_t>(s.p.scale_bk);
    scale_upcast_kernel<<<grid_for(s.in_count_a()), 256, 0, s.stream>>>(
        static_cast<const __nv_fp8_e4m3*>(A), s.a_scale[set], s.a32, s.in_count_a(), k, kb, bk, 1, true);
    scale_upcast_kernel<<<grid_for(s.in_count_b()), 256, 0, s.stream>>>(static_cast<const __nv_fp8_e4m3*>(B),
                                                                       s.b_scale[set], s.b32, s.in_count_b(), k, kb, bk,
                                                                       static_cast<uint64_t>(s.p.scale_bn), false);
    CK(cudaGetLastError());
    if (auto st = s.gemm_ex(s.ref_handle, s.a32, s.b32, CUDA_R_32F, s.refs[set], CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC);
        !st.ok) {
      return st;
    }
    // The rule's magnitude, sum_k |a_ik sa| |b_kj sb|: the same GEMM of the operands' absolute values.
    abs_kernel<<<grid_for(s.in_count_a()), 256, 0, s.stream>>>(s.a32, s.in_count_a());
    abs_kernel<<<grid_for(s.in_count_b()), 256, 0, s.stream>>>(s.b32, s.in_count_b());
    CK(cudaGetLastError());
    if (auto st = s.gemm_ex(s.ref_handle, s.a32, s.b32, CUDA_R_32F, s.mags[set], CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC);
        !st.ok) {
      return st;
    }
    CK(cudaStreamSynchronize(s.stream));
    return {};
  }
  if (s.p.in == Elem::e4m3) {
    if (s.p.sparse) {
      upcast_prune_e4m3_kernel<<<grid_for(s.in_count_a()), 256, 0, s.stream>>>(
          static_cast<const __nv_fp8_e4m3*>(A), s.meta[set], s.a16, s.in_count_a(), k);
    } else {
      upcast_e4m3_kernel<<<grid_for(s.in_count_a()), 256, 0, s.stream>>>(static_cast<const __nv_fp8_e4m3*>(A), s.a16,
                                                                        s.in_count_a());
    }
    upcast_e4m3_kernel<<<grid_for(s.in_count_b()), 256, 0, s.stream>>>(static_cast<const __nv_fp8_e4m3*>(B), s.b16,
                                                                      s.in_count_b());
    CK(cudaGetLastError());
    A = s.a16;
    B = s.b16;
    in = CUDA_R_16F;
  }
  const cublasComputeType_t compute = s.p.in == Elem::f32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F;
  // Per-tensor scales: the f32 product times a_scale * b_scale (f32, as alpha).
  const float alpha = s.p.scale_mode == 1 ? s.h_as[set][0] * s.h_bs[set][0] : 1.0f;
  if (auto st = s.gemm_ex(s.ref_handle, A, B, in, s.refs[set], CUDA_R_32F, compute, alpha); !st.ok) return st;
  CK(cudaStreamSynchronize(s.stream));
  return {};
}

CudaStatus CudaDevice::perturb(int set, int64_t /*column*/, uint64_t seed) {
  Impl& s = *m;
  // All of B gets fresh values (stream k_stream_perturb of `seed`), and the runner's copy of it the
  // same: a cache a candidate keeps of its inputs follows a change of one column at the cost of a
  // rank-1 update, but not this.
  const size_t count = s.in_count_b();
  if (s.p.scale_mode != 0) {
    fill_fp8_scaled_kernel<<<grid_for(count), 256, 0, s.stream>>>(static_cast<__nv_fp8_e4m3*>(s.b[set]), count, seed,
                                                                  k_stream_perturb);
    CK(cudaGetLastError());
  } else if (auto st = s.fill_typed(s.b[set], s.p.in, count, seed, k_stream_perturb); !st.ok) {
    return st;
  }
  if (s.b0[set]) {
    CK(cudaMemcpyAsync(s.b0[set], s.b[set], count * elem_bytes(s.p.in), cudaMemcpyDeviceToDevice, s.stream));
  }
  return {};
}

CudaStatus CudaDevice::poison() {
  CK(cudaMemsetAsync(m->c, 0xFF, m->c_bytes, m->stream));  // all-ones: NaN in f32, f16 and bf16
  return {};
}

void CudaDevice::set_candidate(const CandidateEntry& candidate) { m->cand = candidate; }

void CudaDevice::set_cusparselt(std::shared_ptr<CusparseLtApi> api) { m->cs_api = std::move(api); }

int CudaDevice::prepare_set(int set, CudaStatus& st) {
  Impl& s = *m;
  st = {};
  if (!s.has_candidate()) {
    if (s.cs_api && !s.cs_plans.empty()) st = s.compress_set(set);
    return st.ok ? 0 : 3;
  }
  if (!s.cand.prepare || s.prepared.empty()) return 0;
  croq_gemm_operands in{};
  in.a = s.a[set];
  in.a_meta = s.p.sparse ? s.meta[set] : nullptr;
  if (s.p.scale_mode != 0) {
    in.a_scale = s.a_scale[set];
    in.b_scale = s.b_scale[set];
  }
  croq_status r = s.cand.prepare(&s.cand.desc, &in, s.prepared[set], s.prepared_bytes, s.stream);
  st = check_cuda(cudaStreamSynchronize(s.stream), "after croq_gemm_prepare", __FILE__, __LINE__);
  if (st.ok) st = check_cuda(cudaGetLastError(), "after croq_gemm_prepare", __FILE__, __LINE__);
  return static_cast<int>(r);
}

std::vector<LibraryStatus> CudaDevice::library_status() const {
  std::vector<LibraryStatus> out;
  if (m->cs_status.loaded || !m->cs_status.error.empty()) out.push_back(m->cs_status);
  return out;
}

CudaStatus CudaDevice::open_library(const std::string& name, std::vector<LibVariant>& variants) {
  Impl& s = *m;
  s.variants.clear();
  s.lt_results.clear();
  CK(cudaMalloc(&s.lib_ws, k_library_workspace));
  const bool want_cublas = name == "cublas" || name == "auto";
  // cuBLAS has no e4m3 path (cublasGemmEx): for fp8 inputs "cublas" means its Lt half.
  const bool want_lt = name == "cublaslt" || name == "auto" || (name == "cublas" && s.p.in == Elem::e4m3);
  // A sparse problem's "auto": cuSPARSELt first (its default plan is the library default), then
  // the dense libraries on the same pruned A.
  const bool want_cslt = s.p.sparse && (name == "cusparselt" || name == "auto");
  if (want_cslt) {
    if (!s.cs_api) return {false, false, "cuSPARSELt was asked for but not loaded"};
    if (auto st = s.open_cusparselt(); !st.ok) return st;
  }
  if (want_cublas && s.p.in != Elem::e4m3) {
    CKB(cublasCreate(&s.lib_handle));
    CKB(cublasSetStream(s.lib_handle, s.stream));
    CKB(cublasSetWorkspace(s.lib_handle, s.lib_ws, k_library_workspace));
    LibVariant v;
    v.library = "cublas";
    v.api = "cublasGemmEx";
    s.variants.push_back(v);
    s.lt_results.push_back({});
  }
  if (want_lt) {
    CKB(cublasLtCreate(&s.lt));
    if (auto st = s.make_lt_plan(s.lt_plain, false); !st.ok) return st;
    if (auto st = s.lt_heuristics(s.lt_plain, false, s.p.scale_mode == 2 ? 4 : 8); !st.ok) return st;
    // Block-scaled: cuBLASLt promotes per block itself, and each algorithm comes in four scale
    // layouts, so fewer algorithms (4); no fast-accumulation plan.
    if (s.p.in == Elem::e4m3 && s.p.scale_mode != 2) {
      if (auto st = s.make_lt_plan(s.lt_fast, true); !st.ok) return st;
      if (auto st = s.lt_heuristics(s.lt_fast, true, 8); !st.ok) return st;
    }
  }
  if (want_lt && s.p.scale_mode == 2) {
    // The anchor when cuBLASLt offers no block-scaled algorithm (or none that passes): croq's own
    // reference computation timed as a library, NOT a library-grade GEMM (the scales applied to
    // f32 copies of A and B, an f32 GEMM, the result rounded to bf16).
    LibVariant v;
    v.library = "croq_reference";
    v.api = "scale-upcast to f32 + cublasGemmEx f32 (pedantic) + round to bf16: not a library-grade anchor";
    s.variants.push_back(v);
    s.lt_results.push_back({});
    CK(cudaMalloc(reinterpret_cast<void**>(&s.c32), s.out_count() * sizeof(float)));
    if (!s.lib_handle) {
      CKB(cublasCreate(&s.lib_handle));
      CKB(cublasSetStream(s.lib_handle, s.stream));
      CKB(cublasSetWorkspace(s.lib_handle, s.lib_ws, k_library_workspace));
      CKB(cublasSetMathMode(s.lib_handle, CUBLAS_PEDANTIC_MATH));
    }
  }
  s.plan_of.resize(s.variants.size(), -1);
  variants = s.variants;
  s.selected = s.variants.empty() ? -1 : 0;
  return {};
}

CudaStatus CudaDevice::select_variant(int index) {
  if (index < 0 || index >= static_cast<int>(m->variants.size())) return {false, false, "no such library variant"};
  m->selected = index;
  return {};
}

int CudaDevice::launch(int set, CudaStatus& st) {
  Impl& s = *m;
  st = {};
  if (s.has_candidate()) {
    croq_status r;
    if (s.cand.gemm) {
      const croq_gemm_operands ops = s.operands(set);
      r = s.cand.gemm(&s.cand.desc, &ops, s.stream);
    } else {
      r = s.cand.matmul(&s.cand.problem, s.a[set], s.b[set], s.c, s.workspace, s.workspace_bytes, s.stream);
    }
    st = check_cuda(cudaPeekAtLastError(), s.cand.gemm ? "after croq_gemm" : "after croq_matmul", __FILE__, __LINE__);
    return static_cast<int>(r);
  }
  if (s.selected < 0) {
    st = {false, false, "no target selected"};
    return 3;
  }
  const LibVariant& v = s.variants[s.selected];
  if (v.library == "cusparseLt") {
    if (!s.cs_error.empty()) {
      st = {false, false, s.cs_error};
      return 3;
    }
    const float one = 1.0f, zero = 0.0f;
    cudaStream_t streams[1] = {s.stream};
    st = s.check_cslt(s.cs_api->matmul(&s.cs_handle, &s.cs_plans[s.plan_of[s.selected]]->plan, &one, s.cs_compressed[set],
                                     s.b[set], &zero, s.c, s.c, s.cs_ws, streams, 1),
                      "cusparseLtMatmul");
    return st.ok ? 0 : 3;
  }
  if (v.library == "croq_reference") {
    const uint64_t k = static_cast<uint64_t>(s.p.k), kb = static_cast<uint64_t>(s.k_blocks());
    const uint64_t bk = static_cast<uint64_t>(s.p.scale_bk);
    scale_upcast_kernel<<<grid_for(s.in_count_a()), 256, 0, s.stream>>>(
        static_cast<const __nv_fp8_e4m3*>(s.a[set]), s.a_scale[set], s.a32, s.in_count_a(), k, kb, bk, 1, true);
    scale_upcast_kernel<<<grid_for(s.in_count_b()), 256, 0, s.stream>>>(static_cast<const __nv_fp8_e4m3*>(s.b[set]),
                                                                       s.b_scale[set], s.b32, s.in_count_b(), k, kb, bk,
                                                                       static_cast<uint64_t>(s.p.scale_bn), false);
    st = s.gemm_ex(s.lib_handle, s.a32, s.b32, CUDA_R_32F, s.c32, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC);
    if (st.ok) {
      f32_to_bf16_kernel<<<grid_for(s.out_count()), 256, 0, s.stream>>>(s.c32, static_cast<__nv_bfloat16*>(s.c),
                                                                        s.out_count());
      st = check_cuda(cudaPeekAtLastError(), "croq_reference", __FILE__, __LINE__);
    }
  } else if (v.library == "cublas") {
    const cublasComputeType_t compute = s.p.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    st = s.gemm_ex(s.lib_handle, s.a[set], s.b[set], cuda_type(s.p.in), s.c, cuda_type(s.p.out), compute);
  } else {
    Impl::LtPlan& plan = v.fast_accum ? s.lt_fast : s.lt_plain;
    const float one = 1.0f, zero = 0.0f;
    if (s.p.scale_mode != 0) {
      // This set's scales (cuBLASLt's A is croq's B); for the block-scaled operator in the
      // variant's layout.
      const int layout = std::max(v.scale_layout, 0);
      const void* sa = (layout & 2 ? s.b_scale_t : s.b_scale)[set];
      const void* sb = (layout & 1 ? s.a_scale_t : s.a_scale)[set];
      st = check_cublas(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa),
                        "cublasLtMatmulDescSetAttribute(A_SCALE_POINTER)", __FILE__, __LINE__);
      if (st.ok) {
        st = check_cublas(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb),
                          "cublasLtMatmulDescSetAttribute(B_SCALE_POINTER)", __FILE__, __LINE__);
      }
      if (!st.ok) return 3;
    }
    st = check_cublas(cublasLtMatmul(s.lt, plan.desc, &one, s.b[set], plan.a, s.a[set], plan.b, &zero, s.c, plan.c,
                                     s.c, plan.c, &s.lt_results[s.selected].algo, s.lib_ws, k_library_workspace,
                                     s.stream),
                      "cublasLtMatmul", __FILE__, __LINE__);
  }
  return st.ok ? 0 : 3;
}

int CudaDevice::launch_in_range(int set, const char* range, CudaStatus& st) {
  nvtxRangePushA(range);
  int r = launch(set, st);
  nvtxRangePop();
  return r;
}

CudaStatus CudaDevice::synchronize() {
  CK(cudaDeviceSynchronize());
  CK(cudaGetLastError());
  return {};
}

CudaStatus CudaDevice::compare(int set, double base_tol, double rel_tol, double mag_tol, CompareResult& out) {
  Impl& s = *m;
  const float* ref = s.refs[set];
  const float* mag = s.mags.empty() ? nullptr : s.mags[set];
  CK(cudaMemsetAsync(s.acc, 0, sizeof(CompareAcc), s.stream));
  const size_t n = s.out_count();
  const unsigned grid = grid_for(n);
  switch (s.p.out) {
    case Elem::f16:
      compare_kernel<<<grid, 256, 0, s.stream>>>(static_cast<const __half*>(s.c), ref, mag, mag_tol, n, base_tol, rel_tol,
                                                  s.acc);
      break;
    case Elem::bf16:
      compare_kernel<<<grid, 256, 0, s.stream>>>(static_cast<const __nv_bfloat16*>(s.c), ref, mag, mag_tol, n, base_tol,
                                                  rel_tol, s.acc);
      break;
    default:
      compare_kernel<<<grid, 256, 0, s.stream>>>(static_cast<const float*>(s.c), ref, mag, mag_tol, n, base_tol, rel_tol,
                                                  s.acc);
      break;
  }
  CK(cudaGetLastError());
  CompareAcc acc{};
  CK(cudaMemcpyAsync(&acc, s.acc, sizeof acc, cudaMemcpyDeviceToHost, s.stream));
  std::vector<unsigned char> guards(2 * k_guard_bytes);
  CK(cudaMemcpyAsync(guards.data(), s.c_alloc, k_guard_bytes, cudaMemcpyDeviceToHost, s.stream));
  CK(cudaMemcpyAsync(guards.data() + k_guard_bytes, s.c_alloc + k_guard_bytes + s.c_bytes, k_guard_bytes,
                     cudaMemcpyDeviceToHost, s.stream));
  CK(cudaStreamSynchronize(s.stream));
  out = {};
  out.mismatches = static_cast<int64_t>(acc.mismatches);
  out.nan_count = static_cast<int64_t>(acc.nan_count);
  out.magnitude_excused = static_cast<int64_t>(acc.excused);
  float f;
  std::memcpy(&f, &acc.max_abs_bits, 4);
  out.max_abs = f;
  std::memcpy(&f, &acc.max_rel_bits, 4);
  out.max_rel = f;
  out.sum_d2 = acc.sum_d2;
  out.sum_w2 = acc.sum_w2;
  for (unsigned char g : guards) out.guard_bytes_changed += g != k_guard_byte;
  if (out.guard_bytes_changed > 0) {
    CK(cudaMemset(s.c_alloc, k_guard_byte, k_guard_bytes));
    CK(cudaMemset(s.c_alloc + k_guard_bytes + s.c_bytes, k_guard_byte, k_guard_bytes));
  }
  return {};
}

CudaStatus CudaDevice::download(int set, std::vector<uint8_t>& c, std::vector<float>& ref, std::vector<float>& mag) {
  Impl& s = *m;
  c.resize(s.c_bytes);
  ref.resize(s.out_count());
  CK(cudaMemcpy(c.data(), s.c, s.c_bytes, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(ref.data(), s.refs[set], ref.size() * sizeof(float), cudaMemcpyDeviceToHost));
  mag.clear();
  if (!s.mags.empty()) {
    mag.resize(s.out_count());
    CK(cudaMemcpy(mag.data(), s.mags[set], mag.size() * sizeof(float), cudaMemcpyDeviceToHost));
  }
  return {};
}

CudaStatus CudaDevice::flush_l2() {
  Impl& s = *m;
  CK(cudaMemsetAsync(s.flush, (s.flush_count++) & 0xFF, s.flush_bytes, s.stream));
  return {};
}

CudaStatus CudaDevice::hold() {
  Impl& s = *m;
  s.host_flags[0] = 0;
  s.host_flags[1] = 0;
  hold_kernel<<<1, 1, 0, s.stream>>>(s.dev_flags, s.dev_flags + 1, 500ull * 1000 * 1000);
  CK(cudaGetLastError());
  return {};
}

CudaStatus CudaDevice::release() {
  __atomic_store_n(&m->host_flags[0], 1, __ATOMIC_SEQ_CST);
  return {};
}

bool CudaDevice::hold_timed_out() { return __atomic_load_n(&m->host_flags[1], __ATOMIC_SEQ_CST) != 0; }

CudaStatus CudaDevice::start_timer() {
  CK(cudaEventRecord(m->ev_start, m->stream));
  return {};
}

CudaStatus CudaDevice::stop_timer() {
  CK(cudaEventRecord(m->ev_stop, m->stream));
  return {};
}

CudaStatus CudaDevice::read_timer(double& ms) {
  float f = 0;
  CK(cudaEventSynchronize(m->ev_stop));
  CK(cudaEventElapsedTime(&f, m->ev_start, m->ev_stop));
  ms = f;
  return {};
}

}  // namespace croq::gpu_runner
