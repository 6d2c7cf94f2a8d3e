// The measurement record (croq-measurement-v1): one verification and timing of one candidate or
// library baseline on one device, with its provenance. Written by the runners (croq-gpu-runner,
// croq-cpu-runner, the Python runner) and by croq itself when the runner could not write one
// (crash, hang, refusal before running); read by `croq store-round --measurement`, `croq baseline`
// and the decision logic. The field list is documented in docs/measurement.md.
//
//   {"schema":"croq-measurement-v1","croq":{"version","git"},"created_at",
//    "kind":"candidate|baseline|legacy","verdict":"PASS|...","reason":"<code>","detail":"...",
//    "candidate":{"path","sha256","info","abi_version"},
//    "problem":{"op","m","n","k","dtype","a_type","b_type","c_type","compute_type","b_layout","sparsity"},
//    "device":{"name","uuid","key","compute_cap","driver","sm_clock_mhz","max_sm_clock_mhz",
//              "sm_count","l2_bytes","peak_tflops"},
//    "seed", "second_seed",
//    "verification":{"passed","elements","mismatches","max_abs_err","max_rel_err",
//                    "normwise_rel_err","tolerance":{"base_tol","rel_tol","normwise","rule",
//                    "mag_tol","magnitude_excused" (block-scaled only)},
//                    "worst":[{"i","j","got","want"}],"nan_count","guard_bytes_changed",
//                    "rechecked_after_timing","second_seed_passed"},
//    "timing":{"method","l2_flush","stream_held","rotation_sets","warmup","reps","median_ms",
//              "mean_ms","min_ms","p90_ms","max_ms","cv","stop_reason","warmup_ms","timed_ms","wall_check_ms",
//              "rest_ratio","rest_ms","samples_ms":[...]},
//    "tflops", "library":{...} (baseline only), "flags":[...], "warnings":[...],
//    "source":"measured|reported", "process":{...} (set by croq), "phases":[{"phase","ms"}],
//    "runs":[{"tflops","median_ms","cv","reps","seed","chosen"}] (a short kernel, several processes)}
// Numbers that do not apply are null.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "croq/measure/verdict.hpp"
#include "croq/util/json.hpp"

namespace croq {

inline constexpr const char* k_measurement_schema = "croq-measurement-v1";

struct ToleranceSpec {
  double base_tol = 1.0;
  double rel_tol = 0.01;
  double normwise = 1e-3;   // limit of ||got - want||_F / ||want||_F
  std::string rule;         // which row of the table ("f16/bf16 in, f32 accumulate")
  // The block-scaled operator only (tolerance.hpp): a third term of the element limit, mag_tol
  // times sum_k |a_ik b_kj| with the scales applied (the reference's magnitude); 0 elsewhere.
  double mag_tol = 0;

  // {"base_tol","rel_tol","normwise","rule"}, plus "mag_tol" where it is not 0.
  json to_json() const;
};

struct WorstElement {
  int64_t i = 0, j = 0;
  double got = 0, want = 0;  // got may be NaN/inf: written as null / a string
};

struct Verification {
  std::optional<bool> passed;    // null: not performed (or a legacy binary skipped it)
  int64_t elements = 0;
  int64_t mismatches = 0;
  int64_t nan_count = 0;          // non-finite outputs (poison left or NaN computed)
  // Elements within the limit only through its magnitude term (a rule with mag_tol > 0: the
  // block-scaled operator), i.e. those the fixed terms alone would refuse.
  int64_t magnitude_excused = 0;
  double max_abs_err = 0;
  double max_rel_err = 0;
  double normwise_rel_err = 0;
  ToleranceSpec tolerance;
  std::vector<WorstElement> worst;
  int64_t guard_bytes_changed = 0;  // bytes written outside C
  std::optional<bool> rechecked_after_timing;
  std::optional<bool> second_seed_passed;
  int timed_checked = 0;          // timed launches whose output was compared (chosen at random)
  std::string reported;           // legacy: what the binary printed about its own check
};

struct Timing {
  std::string method;   // cuda_events | steady_clock | reported
  bool l2_flush = true;
  bool stream_held = false;
  int rotation_sets = 1;
  int warmup = 0;
  int reps = 0;
  double median_ms = 0, mean_ms = 0, min_ms = 0, p90_ms = 0, max_ms = 0, cv = 0;
  // 1.4826 * MAD / median of the samples (statistics.hpp). Records from before it lack the key; a
  // reader computes it from their samples_ms.
  std::optional<double> robust_cv;
  std::string stop_reason;
  std::optional<double> warmup_ms;      // host time the warm-up lasted
  std::optional<double> timed_ms;       // host time of the timed repetitions
  std::optional<double> wall_check_ms;  // host clock per launch, device synchronised
  std::optional<double> rest_ratio;     // idle time per busy time between repetitions (0: none)
  std::optional<double> rest_ms;        // idle time taken during this timing (not in timed_ms)
  std::vector<double> samples_ms;
};

// Names of the bits of NVML's clock event reasons (nvmlClocksEventReason*), lowest bit first.
std::vector<std::string> clock_reason_names(uint64_t mask);
// The reasons that mean the GPU's clocks were held down by a limit (not idle or a clock setting).
inline constexpr uint64_t k_limiting_clock_reasons = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

struct DeviceFacts {
  std::string name;
  std::string uuid;
  std::string key;
  std::string compute_cap;
  std::string driver;
  std::optional<int> sm_clock_mhz;      // sampled during the timed section
  std::optional<int> min_sm_clock_mhz;  // the lowest of those samples
  std::optional<int> max_sm_clock_mhz;
  // NVML's clock event (throttle) reasons seen during the timed section, OR-ed over the samples,
  // and how many samples saw a limiting one (power cap, thermal, hardware slowdown): a timing taken
  // while the GPU held its clocks down is not comparable with one taken at full clock.
  std::optional<uint64_t> clock_limit_reasons;
  int clock_samples = 0;
  int limited_samples = 0;
  // The most compute processes besides the runner that NVML listed on the device at one clock
  // sample during the timed section (null when it could not tell): another process running while
  // the timing ran, even one that came and went between croq's checks before and after.
  std::optional<int> other_processes;
  // The cpp backend: the share of its launches' time that the runner's thread spent waiting for a
  // CPU while runnable (Linux schedstat: run-queue delay against run time plus delay), null where
  // the launches took under 10 ms in all or the kernel does not keep the figures. Another process
  // on the CPU the candidate runs on shows here; above k_cpu_shared_share it flags cpu_shared.
  std::optional<double> cpu_wait_share;
  int sm_count = 0;
  int64_t l2_bytes = 0;
  double peak_tflops = 0;               // for this problem's dtype (0: unknown)
  std::string peak_source;              // "table: NVIDIA H200" or "estimate: ..."
};

struct ProblemDesc {
  std::string op = "matmul";  // "matmul" or "gemm_sp" (A 2:4 structured sparse)
  int64_t m = 0, n = 0, k = 0;
  std::string dtype;       // canonical token (f16f32, ...)
  std::string a_type, b_type, c_type, compute_type;
  std::string b_layout = "row";
  std::string sparsity;    // "2:4" for gemm_sp, else empty (not written)
  std::string scaling;     // "tensor" (e4m3 matmul), "block ..." (blockscaled), else empty (not written)

  // Dense-equivalent work, 2 M N K, for the sparse operator too (as cuSPARSELt and the sparse
  // peaks count it).
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k); }
};

struct Measurement {
  std::string schema = k_measurement_schema;
  std::string croq_version;
  std::string croq_git;
  std::string created_at;
  std::string kind = "candidate";   // candidate | baseline | legacy
  Verdict verdict = Verdict::RUNTIME_FAIL;
  std::string reason;
  std::string detail;
  std::string candidate_path;
  std::string candidate_sha256;
  json candidate_info;              // the candidate's croq_kernel_info() document, or null
  int candidate_abi_version = 0;    // 1 (croq_matmul) or 2 (croq_gemm); 0: not loaded
  ProblemDesc problem;
  DeviceFacts device;
  std::optional<uint64_t> seed;
  std::optional<uint64_t> second_seed;
  Verification verification;
  std::optional<Timing> timing;
  std::optional<double> tflops;
  json library;                     // baseline only
  std::vector<std::string> flags;   // near_peak, wall_clock_disagrees, ...
  std::vector<std::string> warnings;
  std::string source = "measured";  // measured | reported
  json process;                     // how the runner ended (set by croq)
  // Where the runner's time went: [{"phase": "check (first seed)", "ms": 12.5}, ...] in order,
  // each phase's host time from its start to the next one's.
  json phases = json::array();
  // A short kernel measured in several runner processes (invoke.hpp, run_measure_repeated): one
  // row per process, {"tflops","median_ms","cv","reps","seed","chosen"}; null for one process.
  json runs;
  std::vector<std::string> argv;    // the runner's command line
  // Whether the GPU was shared while this was measured (set by croq around the runner,
  // gpu/contention.hpp): {contended, reasons, before, after, waited_ms}; null when not checked (the
  // CPU, a record from before the check). A contended measurement may be shown, never stored as
  // a decision's evidence.
  json contention;

  json to_json() const;
  // nullopt with `why` when the document is not a croq-measurement-v1 record.
  static std::optional<Measurement> from_json(const json& doc, std::string* why = nullptr);
  bool passed() const { return verdict == Verdict::PASS; }
  // The GPU was shared while this was measured (the flag, or the contention object says so).
  bool contended() const;
  // The cpp runner waited for a CPU above k_cpu_shared_share of its launches' time (flag cpu_shared).
  bool cpu_shared() const;
  // Why (the contention's reasons, joined), "" when not contended.
  std::string contention_reason() const;
};

// The flag a contended measurement carries.
inline constexpr const char* k_contended_flag = "contended";
// The flag of a cpp-backend measurement whose runner waited for a CPU more than
// k_cpu_shared_share of its launches' time (device.cpu_wait_share): other work shared the CPU, so
// its figures may be low. A flag and a warning only: on a CI machine that runs tests side by side
// every measurement would be refused, and the cpp backend's figures are the loop's, not evidence.
inline constexpr const char* k_cpu_shared_flag = "cpu_shared";
inline constexpr double k_cpu_shared_share = 0.10;
// What the flag means, with the share: "the runner waited for a CPU 43 % of its launches' time ...".
std::string cpu_shared_warning(double share);
// The flag of a measurement whose launch waited for the stream the runner held (the candidate
// synchronises inside croq_matmul): timed without holding the stream; refused in an enforced task.
inline constexpr const char* k_launch_waits_flag = "launch_waits";
// The flag of a candidate whose shared object calls a synchronising or host-reading CUDA function
// (PurityReport::synchronising); refused before it runs in an enforced task.
inline constexpr const char* k_synchronising_call_flag = "synchronising_call";

// The robust_cv of a record's "timing" object: its field when the key is there, else (a record from
// before it) computed from its samples_ms; nullopt when neither gives one.
std::optional<double> timing_robust_cv(const json& timing);

// TFLOPS of `flops` floating-point operations done in `ms` milliseconds.
double tflops_of(double flops, double ms);

}  // namespace croq
