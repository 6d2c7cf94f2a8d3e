// croq-gpu-runner: the MeasureBackend over the CUDA device work (cuda_device.hpp), and main().
// All measurement logic is the shared procedure (src/croq/measure/procedure.cpp); this file only
// translates between its interface and the device's.
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "croq/gpu/device_key.hpp"
#include "croq/measure/confine.hpp"
#include "croq/measure/numeric.hpp"
#include "croq/measure/peak.hpp"
#include "croq/measure/runner_main.hpp"
#include "croq/measure/tolerance.hpp"
#include "croq/util/process.hpp"
#include "cuda_device.hpp"

namespace croq::gpu_runner {

namespace {

Elem elem_of(ScalarType t) {
  switch (t) {
    case ScalarType::f16: return Elem::f16;
    case ScalarType::bf16: return Elem::bf16;
    case ScalarType::e4m3: return Elem::e4m3;
    case ScalarType::f32:
    case ScalarType::tf32: return Elem::f32;
  }
  return Elem::f32;
}

DeviceStatus to_status(const CudaStatus& s) { return {s.ok, s.fatal, s.error}; }

static_assert(k_nvml_limiting_reasons == k_limiting_clock_reasons, "one set of limiting clock reasons");

DeviceFacts device_facts(const CudaFacts& f, const DtypePair& dtype, const std::string& op) {
  DeviceFacts d;
  d.name = f.name;
  d.uuid = f.uuid;
  d.compute_cap = fmt::format("{}.{}", f.cc_major, f.cc_minor);
  d.key = make_gpu_key(f.name, d.compute_cap);
  d.driver = f.driver;
  d.sm_clock_mhz = f.sm_clock_mhz;
  d.min_sm_clock_mhz = f.min_sm_clock_mhz;
  if (f.clock_limit_reasons) d.clock_limit_reasons = static_cast<uint64_t>(*f.clock_limit_reasons);
  d.clock_samples = f.clock_samples;
  d.limited_samples = f.limited_samples;
  d.other_processes = f.other_processes;
  if (f.max_sm_clock_mhz > 0) d.max_sm_clock_mhz = f.max_sm_clock_mhz;
  d.sm_count = f.sm_count;
  d.l2_bytes = f.l2_bytes;
  PeakFigure peak =
      peak_for_operator(gpu_peak_tflops(f.name, f.cc_major, f.cc_minor, f.sm_count, f.max_sm_clock_mhz, dtype), op);
  d.peak_tflops = peak.tflops;
  d.peak_source = peak.source;
  return d;
}

class GpuBackend : public MeasureBackend {
 public:
  GpuBackend(std::unique_ptr<CudaDevice> dev, const ProblemSetup& p, CandidateLibrary* candidate, std::string library)
      : m_dev(std::move(dev)), m_p(p), m_candidate(candidate), m_library(std::move(library)) {}

  DeviceFacts facts() override { return device_facts(m_dev->facts(), m_p.dtype, m_p.desc.op); }

  double host_now_ms() override {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  DeviceStatus prepare(int input_sets) override {
    CudaProblem cp;
    cp.m = m_p.desc.m;
    cp.n = m_p.desc.n;
    cp.k = m_p.desc.k;
    cp.in = elem_of(m_p.dtype.input);
    cp.out = elem_of(m_p.dtype.output);
    cp.tf32 = m_p.dtype.compute == ScalarType::tf32;
    cp.b_col = m_p.desc.b_layout == "col";
    cp.sparse = m_p.sparse;
    cp.scale_mode = static_cast<int>(m_p.scale_mode);
    if (m_p.scale_mode == CROQ_SCALE_BLOCK) {
      cp.scale_bk = m_p.gemm.scale_block_k;
      cp.scale_bn = m_p.gemm.scale_block_n;
    }
    const size_t ws = m_candidate ? m_candidate->workspace_for(m_p) : 0;
    const size_t prepared = m_candidate ? m_candidate->prepared_bytes_for(m_p) : 0;
    if (auto st = m_dev->prepare(cp, input_sets, ws, prepared); !st.ok) return to_status(st);
    if (m_candidate) {
      CandidateEntry e;
      e.gemm = m_candidate->gemm;
      e.prepare = m_candidate->gemm_prepare;
      e.matmul = m_candidate->matmul;
      e.desc = m_p.gemm;
      e.problem = m_p.abi;
      m_dev->set_candidate(e);
      m_variants.assign(1, LibVariant{});
    } else {
      if (auto st = m_dev->open_library(m_library, m_variants); !st.ok) return to_status(st);
    }
    return {};
  }

  DeviceStatus fill_inputs(int set, uint64_t seed) override { return to_status(m_dev->fill(set, seed)); }
  LaunchOutcome prepare_operands(int set) override {
    CudaStatus st;
    int r = m_dev->prepare_set(set, st);
    if (!m_candidate) return {};  // a library's failure shows in its launches
    return {r, to_status(st)};
  }
  json library_status() override {
    json out = json::object();
    for (const LibraryStatus& s : m_dev->library_status()) {
      json j = {{"loaded", s.loaded}, {"path", s.path}, {"plans", s.variants}};
      if (s.version) j["version"] = s.version;
      if (!s.error.empty()) j["error"] = s.error;
      out[s.library] = j;
    }
    return out.empty() ? json(nullptr) : out;
  }
  DeviceStatus compute_reference(int set) override { return to_status(m_dev->reference(set)); }
  DeviceStatus check_inputs(int set, std::vector<std::string>& changed) override {
    return to_status(m_dev->check_inputs(set, changed));
  }
  DeviceStatus perturb_inputs(int set, int64_t column, uint64_t seed) override {
    return to_status(m_dev->perturb(set, column, seed));
  }
  DeviceStatus poison_output() override { return to_status(m_dev->poison()); }

  LaunchOutcome launch(int set) override {
    CudaStatus st;
    int r = m_dev->launch(set, st);
    return {r, to_status(st)};
  }

  DeviceStatus synchronize() override { return to_status(m_dev->synchronize()); }

  DeviceStatus compare(int set, const ToleranceSpec& tol, Verification& v) override {
    CompareResult r;
    if (auto st = m_dev->compare(set, tol.base_tol, tol.rel_tol, tol.mag_tol, r); !st.ok) return to_status(st);
    v.tolerance = tol;
    v.elements = m_p.desc.m * m_p.desc.n;
    v.mismatches = r.mismatches;
    v.nan_count = r.nan_count;
    v.magnitude_excused = r.magnitude_excused;
    v.max_abs_err = r.max_abs;
    v.max_rel_err = r.max_rel;
    v.normwise_rel_err = r.sum_w2 > 0 ? std::sqrt(r.sum_d2 / r.sum_w2) : 0.0;
    v.guard_bytes_changed = r.guard_bytes_changed;
    decide_passed(v);
    if (!*v.passed && m_failure_details) {
      // The details (worst elements) come from the host comparison of the same data.
      std::vector<uint8_t> c;
      std::vector<float> ref, mag;
      if (auto st = m_dev->download(set, c, ref, mag); !st.ok) return to_status(st);
      Verification host;
      compare_host(c.data(), m_p.dtype.output, ref.data(), m_p.desc.m, m_p.desc.n, tol, host, 8,
                   mag.empty() ? nullptr : mag.data());
      v.worst = host.worst;
      v.mismatches = host.mismatches;
      v.nan_count = host.nan_count;
      v.magnitude_excused = host.magnitude_excused;
      v.max_abs_err = host.max_abs_err;
      v.max_rel_err = host.max_rel_err;
      v.normwise_rel_err = host.normwise_rel_err;
      decide_passed(v);
    }
    return {};
  }

  DeviceStatus flush_cache() override { return to_status(m_dev->flush_l2()); }
  bool can_hold_stream() const override { return true; }
  DeviceStatus hold_stream() override { return to_status(m_dev->hold()); }
  DeviceStatus release_stream() override { return to_status(m_dev->release()); }
  bool hold_timed_out() override { return m_dev->hold_timed_out(); }
  DeviceStatus start_timer() override { return to_status(m_dev->start_timer()); }
  DeviceStatus stop_timer() override { return to_status(m_dev->stop_timer()); }
  DeviceStatus read_timer(double& ms) override { return to_status(m_dev->read_timer(ms)); }
  std::string timer_method() const override { return "cuda_events"; }
  bool asynchronous() const override { return true; }
  void sample_clock() override { m_dev->sample_clock(); }
  void set_failure_details(bool on) override { m_failure_details = on; }

  LaunchOutcome profile_launch(int set, const std::string& name) override {
    CudaStatus st;
    int r = m_dev->launch_in_range(set, name.c_str(), st);
    return {r, to_status(st)};
  }

  int variant_count() override { return static_cast<int>(m_variants.size()); }

  json variant_description(int index) override {
    if (index < 0 || index >= static_cast<int>(m_variants.size())) return nullptr;
    const LibVariant& v = m_variants[index];
    if (m_candidate) return {{"library", "candidate"}};
    json j = {{"library", v.library}, {"api", v.api}};
    if (v.library == "cusparseLt") {
      j["alg_id"] = v.algo_id;
      j["split_k"] = v.splitk;
      j["split_k_mode"] = v.split_k_mode;
      j["split_k_buffers"] = v.split_k_buffers;
      j["searched"] = v.searched;
      j["workspace_bytes"] = v.workspace_bytes;
      j["compression"] = "cusparseLtSpMMACompress2 once per input set, untimed";
    } else if (v.library == "cublasLt") {
      j["heuristic_rank"] = v.heuristic_rank;
      j["algo_id"] = v.algo_id;
      j["tile_id"] = v.tile;
      j["stages_id"] = v.stages;
      j["splitk"] = v.splitk;
      j["reduction_scheme"] = v.reduction;
      j["cta_swizzling"] = v.swizzle;
      j["custom_option"] = v.custom;
      j["cluster_shape_id"] = v.cluster;
      j["fast_accum"] = v.fast_accum;
      j["workspace_bytes"] = v.workspace_bytes;
      j["waves"] = v.waves;
      if (!v.scales.empty()) j["scales"] = v.scales;
      if (v.scale_layout >= 0) j["scale_layout"] = v.scale_layout;
    } else if (v.library == "croq_reference") {
      j["not_library_grade"] = true;
    } else {
      j["algo"] = "CUBLAS_GEMM_DEFAULT";
    }
    return j;
  }

  DeviceStatus select_variant(int index) override {
    if (m_candidate) return index == 0 ? DeviceStatus::good() : DeviceStatus::fail("a candidate has one variant");
    return to_status(m_dev->select_variant(index));
  }

 private:
  std::unique_ptr<CudaDevice> m_dev;
  bool m_failure_details = true;
  ProblemSetup m_p;
  CandidateLibrary* m_candidate;
  std::string m_library;
  std::vector<LibVariant> m_variants;
};

class GpuPlatform : public RunnerPlatform {
 public:
  std::string program() const override { return "croq-gpu-runner"; }
  std::string libraries() const override { return "cublas|cublaslt|cusparselt|auto"; }
  // The candidate starts no process (confine.hpp); the driver's own threads stay allowed.
  std::string confine_before_loading() override { return forbid_new_processes(); }

  std::unique_ptr<MeasureBackend> open(const RunnerOptions& o, const ProblemSetup& p, CandidateLibrary* candidate,
                                       std::string& error, bool& no_device) override {
    if (!candidate && o.library != "cublas" && o.library != "cublaslt" && o.library != "cusparselt" &&
        o.library != "auto") {
      error = fmt::format("unknown library '{}' (croq-gpu-runner: cublas, cublaslt, cusparselt, auto)", o.library);
      return nullptr;
    }
    if (!candidate && o.library == "cusparselt" && !p.sparse) {
      error = "cuSPARSELt computes the 2:4 sparse operator only (--op gemm_sp); a dense problem's libraries are "
              "cublas, cublaslt, auto";
      return nullptr;
    }
    // A sparse problem's library baseline needs cuSPARSELt: loaded once per process, before the
    // device is touched, and its absence is said plainly (the runner exits 7: a tool it needs is missing).
    std::shared_ptr<CusparseLtApi> cslt;
    if (!candidate && p.sparse && (o.library == "auto" || o.library == "cusparselt")) {
      if (!m_cslt) m_cslt = load_cusparselt(cusparselt_candidates(o.cusparselt, process_runner()), error);
      if (!m_cslt) {
        no_device = true;
        return nullptr;
      }
      cslt = m_cslt;
    }
    auto dev = CudaDevice::open(o.device, error, no_device);
    if (!dev) return nullptr;
    if (cslt) dev->set_cusparselt(cslt);
    return std::make_unique<GpuBackend>(std::move(dev), p, candidate, o.library);
  }

  DeviceFacts describe_device(const RunnerOptions& o, const ProblemSetup& p) override {
    std::string error;
    bool no_device = false;
    auto dev = CudaDevice::open(o.device, error, no_device);
    if (!dev) return {};
    return device_facts(dev->facts(), p.dtype, p.desc.op);
  }

 private:
  std::shared_ptr<CusparseLtApi> m_cslt;
};

}  // namespace

}  // namespace croq::gpu_runner

int main(int argc, char** argv) {
  croq::gpu_runner::GpuPlatform platform;
  return croq::runner_main(argc, argv, platform);
}
