// The device work of croq-gpu-runner, behind a plain C++ interface (no CUDA type appears here, so
// the measurement logic in gpu_backend.cpp is ordinary host code): buffers, random inputs, the
// cuBLAS reference, the candidate or library launch, the device-side comparison, the L2 flush,
// the stream blocker, CUDA events, NVTX and the NVML clock readings. cuda_device.cu implements it.
//
// Buffers: `sets` pairs (A, B) of input storage type, with their f32 scales where the problem has
// them (and, for a block-scaled library baseline, the scales transposed); C of the output type inside a 256 KiB
// guard region on each side filled with 0xA5; the f32 reference of each set; for fp8 inputs, f16 copies of A
// and B for the reference; the candidate's workspace; a flush buffer of twice the L2 size. For the
// 2:4 sparse operator also, per set, A's metadata [M, K/8] and the candidate's prepared A (or
// cuSPARSELt's compressed A), and a pruned copy of A for the reference.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <croq/kernel_abi.h>

#include "cusparselt.hpp"

namespace croq::gpu_runner {

enum class Elem { f16, bf16, f32, e4m3 };
size_t elem_bytes(Elem e);

struct CudaStatus {
  bool ok = true;
  bool fatal = false;   // a sticky error: the context is lost
  std::string error;
};

// NVML clock event reasons that mean a limit held the clocks down (power cap, hardware slowdown,
// thermal, power brake); the same set as k_limiting_clock_reasons in croq/measure/measurement.hpp.
inline constexpr unsigned long long k_nvml_limiting_reasons = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

struct CudaFacts {
  std::string name;
  std::string uuid;     // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it
  std::string driver;   // NVML's driver version, else the CUDA driver API version
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int64_t l2_bytes = 0;
  int max_sm_clock_mhz = 0;
  std::optional<int> sm_clock_mhz;  // median of the samples taken so far
  std::optional<int> min_sm_clock_mhz;
  std::optional<unsigned long long> clock_limit_reasons;  // NVML clock event reasons, OR-ed
  int clock_samples = 0;
  int limited_samples = 0;  // samples with a limiting reason (power cap, thermal, slowdown)
  std::optional<int> other_processes;  // most compute processes besides the runner at one sample
};

struct CudaProblem {
  int64_t m = 0, n = 0, k = 0;
  Elem in = Elem::f16;
  Elem out = Elem::f32;
  bool tf32 = false;    // f32 inputs multiplied in tf32
  bool b_col = false;   // B stored N x K
  bool sparse = false;  // A 2:4 structured sparse (metadata per set; poison outside the pattern
                        // for a candidate, zeros for a library)
  // Scales (croq_scale_mode): 1 per tensor (dense e4m3), 2 per block (the block-scaled operator:
  // A per 1 x scale_bk, scales [ceil(K/bk), M]; B per scale_bn x scale_bk, B stored [N,K]). The e4m3 inputs then span
  // the format's range and the scales come from portable.hpp (fp8_scaled_value and the scales).
  int scale_mode = 0;
  int64_t scale_bk = 128, scale_bn = 128;
};

// The candidate's entry points and the problem in both ABI forms.
struct CandidateEntry {
  croq_gemm_fn gemm = nullptr;               // version 2, when exported
  croq_gemm_prepare_fn prepare = nullptr;    // version 2, optional
  croq_matmul_fn matmul = nullptr;           // version 1 otherwise
  croq_gemm_desc desc{};
  croq_matmul_problem problem{};
};

// What the runner knows about a library it was asked for (cuSPARSELt: where it came from, its
// version, why it offers no variant).
struct LibraryStatus {
  std::string library;
  bool loaded = false;
  std::string path;
  int version = 0;
  int variants = 0;
  std::string error;
};

struct CompareResult {
  int64_t mismatches = 0;
  int64_t nan_count = 0;
  double max_abs = 0;
  double max_rel = 0;    // over elements with |want| >= base_tol
  double sum_d2 = 0;     // sum of (got - want)^2 over finite got
  double sum_w2 = 0;     // sum of want^2
  int64_t guard_bytes_changed = 0;
  int64_t magnitude_excused = 0;  // within the limit only through its magnitude term
};

// One way a library computes the problem.
struct LibVariant {
  std::string library;   // "cublas", "cublasLt" or "cusparseLt"
  std::string api;       // "cublasGemmEx" / "cublasLtMatmul" / "cusparseLtMatmul"
  int heuristic_rank = -1;
  int algo_id = -1, tile = -1, stages = -1, splitk = -1, reduction = -1, swizzle = -1, custom = -1, cluster = -1;
  bool fast_accum = false;
  size_t workspace_bytes = 0;
  float waves = 0;
  // cuSPARSELt: the plan's algorithm (alg_id above) and split-K settings; `searched` for the plan
  // cusparseLtMatmulSearch chose (made at the first preparation of set 0).
  int split_k_mode = -1, split_k_buffers = -1;
  bool searched = false;
  // cuBLASLt with scales: "per-tensor" (A/B_SCALE_POINTER), or for the block-scaled operator the
  // scale modes and the layout of each scale tensor handed to it (scale_layout bit 0: A's scales
  // [M, ceil(K/128)] instead of the operator's [ceil(K/128), M]; bit 1: B's [ceil(K/128),
  // ceil(N/128)] instead of [ceil(N/128), ceil(K/128)]). Variant 0 hands both as the operator has them.
  std::string scales;
  int scale_layout = -1;
};

class CudaDevice {
 public:
  // `device`: "" (the first visible), an ordinal, or a GPU UUID.
  static std::unique_ptr<CudaDevice> open(const std::string& device, std::string& error, bool& no_device);
  ~CudaDevice();
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  CudaFacts facts();
  CudaStatus prepare(const CudaProblem& p, int sets, size_t workspace_bytes, size_t prepared_bytes);
  CudaStatus fill(int set, uint64_t seed);
  // The inputs of `set` against the runner's copy of them, made by fill and perturb: the names of
  // those a target changed ("A", "B", "A's metadata", "A's scales", "B's scales").
  CudaStatus check_inputs(int set, std::vector<std::string>& changed);
  // After a fill: the candidate's croq_gemm_prepare (its croq_status; `st` a CUDA error), or
  // cuSPARSELt's compression of A (a failure makes its launches fail, the status stays 0).
  int prepare_set(int set, CudaStatus& st);
  CudaStatus reference(int set);   // into that set's reference
  // Column `column` of B of `set` gets fresh values (on the stream, before the next launch).
  CudaStatus perturb(int set, int64_t column, uint64_t seed);
  CudaStatus poison();

  // Target: a candidate, or a library variant.
  void set_candidate(const CandidateEntry& candidate);
  // cuSPARSELt, loaded by the caller, for a sparse problem's "auto" and "cusparselt" libraries.
  void set_cusparselt(std::shared_ptr<CusparseLtApi> api);
  CudaStatus open_library(const std::string& name, std::vector<LibVariant>& variants);
  std::vector<LibraryStatus> library_status() const;
  CudaStatus select_variant(int index);

  // Returns the croq_status of the launch (libraries: 0, or 3 with `st` set).
  int launch(int set, CudaStatus& st);
  int launch_in_range(int set, const char* range, CudaStatus& st);
  CudaStatus synchronize();
  // C against set's reference; mag_tol: the block-scaled rule's factor of sum |a b| (tolerance.hpp)
  CudaStatus compare(int set, double base_tol, double rel_tol, double mag_tol, CompareResult& out);
  // C, the reference and (block-scaled only, else empty) the reference's magnitude
  CudaStatus download(int set, std::vector<uint8_t>& c, std::vector<float>& ref, std::vector<float>& mag);

  CudaStatus flush_l2();
  CudaStatus hold();
  CudaStatus release();
  bool hold_timed_out();
  CudaStatus start_timer();
  CudaStatus stop_timer();
  CudaStatus read_timer(double& ms);
  void sample_clock();

 private:
  CudaStatus fill_body(int set, uint64_t seed);  // fill without the runner's copy
  CudaDevice();
  struct Impl;
  std::unique_ptr<Impl> m;
};

}  // namespace croq::gpu_runner
