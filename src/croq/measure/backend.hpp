// The narrow interface between the measurement procedure (procedure.hpp: what is done, in which
// order, and what it means) and a device (how it is done): the CUDA runner implements it with
// cudaMalloc, kernels, CUDA events and cuBLAS; the CPU runner with host memory, OpenBLAS and
// steady_clock; the unit tests with a recording fake that checks the protocol's order on a machine
// without a GPU.
//
// A backend owns: `input_sets` sets of inputs (A, B), one output C surrounded by guard regions,
// an f32 reference per input set, the target that launch() runs (a candidate or one library variant),
// and a timer. Every method reports failure as a DeviceStatus value; `fatal` means the device
// context is unusable (a sticky CUDA error) and nothing more can run in this process.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "croq/measure/measurement.hpp"

namespace croq {

struct DeviceStatus {
  bool ok = true;
  bool fatal = false;
  std::string error;  // "cudaErrorIllegalAddress: an illegal memory access was encountered"

  static DeviceStatus good() { return {}; }
  static DeviceStatus fail(std::string message, bool fatal_error = false) {
    return {false, fatal_error, std::move(message)};
  }
};

// Outcome of one launch call: the candidate's croq_status (0 = CROQ_OK) and any error the runtime
// reported at enqueue time.
struct LaunchOutcome {
  int status = 0;          // croq_status
  DeviceStatus device;
};

class MeasureBackend {
 public:
  virtual ~MeasureBackend() = default;

  virtual DeviceFacts facts() = 0;
  // Time on the host clock in milliseconds (steady), for budgets and the wall-clock check.
  virtual double host_now_ms() = 0;

  // Allocations for the problem: input sets, C with guards, reference, workspace, flush buffer.
  virtual DeviceStatus prepare(int input_sets) = 0;
  virtual DeviceStatus fill_inputs(int set, uint64_t seed) = 0;
  // After every fill of `set`, before anything is timed on it: the candidate's croq_gemm_prepare
  // (kernel ABI v2), or a library's own preparation (cuSPARSELt's compression of A), then a
  // synchronisation. A candidate's status comes back as for a launch; a library's failure is
  // reported by its launches instead.
  virtual LaunchOutcome prepare_operands(int /*set*/) { return {}; }
  // B of `set` gets fresh values, all of it, from `seed` as the inputs are (stream
  // k_stream_perturb). The procedure does it before every launch, so that no launch sees the inputs
  // of an earlier one; all of B, because a candidate that keeps its own copy of the inputs follows a
  // change of one column (`column`, drawn by the procedure, is what the fakes record) at the cost of
  // a rank-1 update (found by trying it: 40x the honest figure, PASS).
  virtual DeviceStatus perturb_inputs(int set, int64_t column, uint64_t seed) = 0;
  virtual DeviceStatus compute_reference(int set) = 0;   // f32-accumulated, into that set's reference
  // The inputs of `set` against what the backend itself last wrote into them (fill_inputs,
  // perturb_inputs): the names of those that differ ("A", "B", "A's metadata", "A's scales",
  // "B's scales") go into `changed`. The target gets them as const; one that wrote into them would
  // have the reference, made from them, agree with a wrong output. A backend that cannot tell
  // leaves `changed` empty.
  virtual DeviceStatus check_inputs(int /*set*/, std::vector<std::string>& /*changed*/) { return {}; }
  virtual DeviceStatus poison_output() = 0;               // C := NaN
  virtual LaunchOutcome launch(int set) = 0;              // enqueue the target on the stream
  virtual DeviceStatus synchronize() = 0;                 // whole device; returns the first error
  // Compares C with the reference of `set` (and the guard regions); fills the figures and `passed`.
  virtual DeviceStatus compare(int set, const ToleranceSpec& tol, Verification& out) = 0;

  // Timing protocol pieces (procedure.cpp calls them in the documented order).
  virtual DeviceStatus flush_cache() = 0;
  virtual bool can_hold_stream() const = 0;
  virtual DeviceStatus hold_stream() = 0;                 // blocks the stream until release
  virtual DeviceStatus release_stream() = 0;
  virtual bool hold_timed_out() = 0;                      // the blocker gave up (launch synced)
  virtual DeviceStatus start_timer() = 0;
  virtual DeviceStatus stop_timer() = 0;
  virtual DeviceStatus read_timer(double& ms) = 0;        // after synchronize()
  virtual std::string timer_method() const = 0;           // "cuda_events" / "steady_clock"
  // True when launches are asynchronous (a GPU): work can then escape the timer, and the host
  // clock check can refuse a result. A synchronous (CPU) launch cannot hide work that way.
  virtual bool asynchronous() const = 0;
  virtual void sample_clock() = 0;                        // records the SM clock (if it can)
  // Leaves the device idle for `ms` (the procedure's rests between repetitions).
  virtual void rest(double ms) { std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms)); }
  // Whether a failed comparison gathers its details (worst elements) too. The GPU runner finds
  // them on the host, which for a large output costs seconds: a library variant that fails its
  // screening needs only the figures.
  virtual void set_failure_details(bool) {}

  // One launch inside the profiler range `name` (profile mode).
  virtual LaunchOutcome profile_launch(int set, const std::string& name) = 0;

  // Library targets: the variants a library offers for this problem (variant 0 is the library's
  // default); a candidate target has exactly one. select() makes launch() run variant `index`.
  virtual int variant_count() = 0;
  virtual json variant_description(int index) = 0;
  virtual DeviceStatus select_variant(int index) = 0;
  // What the target's libraries said about themselves (cuSPARSELt: where it was loaded from, its
  // version, why it offers nothing for the problem), or null.
  virtual json library_status() { return nullptr; }
};

}  // namespace croq
