// croq-cpu-runner: the MeasureBackend of the cpp dsl. Candidates are C++ shared objects that
// implement the kernel ABI on host pointers (stream == NULL) and finish before returning. The
// reference is OpenBLAS's sgemm on the inputs converted to f32 (exact for every input type; for
// the 2:4 sparse operator, A with the positions outside its pattern set to zero), the timer is
// steady_clock, and "flushing the cache" writes a buffer twice the size of the last-level cache.
// The library baseline (`--library openblas`) is cblas_sgemm: directly for f32 problems, and for
// the other dtypes on the inputs converted to f32 inside the timed call, the f32 result rounded to
// the output type (a sparse problem's baseline is this dense product of the pruned A). With scales
// (e4m3 matmul: per tensor; the block-scaled operator: per block), the reference and the library
// multiply the f32 inputs by their scales before sgemm (per tensor: the f32 product by a_scale *
// b_scale), i.e. they apply the scales in f32.
#include <cblas.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "croq/gpu/device_key.hpp"
#include "croq/measure/confine.hpp"
#include "croq/measure/numeric.hpp"
#include "croq/measure/peak.hpp"
#include "croq/measure/portable.hpp"
#include "croq/measure/runner_main.hpp"
#include "croq/measure/tolerance.hpp"

namespace croq::cpu_runner {

namespace {

// Copies bytes with stores that bypass the caches where the CPU has them (x86's streaming
// stores), plain ones elsewhere; stream_fence() orders them before what follows.
void stream_bytes(uint8_t* dst, const uint8_t* src, size_t n) {
  size_t i = 0;
#if defined(__SSE2__)
  for (; i < n && (reinterpret_cast<uintptr_t>(dst + i) & 15) != 0; ++i) dst[i] = src[i];
  for (; i + 16 <= n; i += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
  }
#endif
  std::memcpy(dst + i, src + i, n - i);
}

void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}


constexpr size_t k_guard_bytes = 64 * 1024;
constexpr unsigned char k_guard_byte = 0xA5;

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// This thread's time on a CPU and time waiting for one while runnable (run-queue delay), in ns,
// from Linux's /proc/thread-self/schedstat; false where the kernel does not keep them.
bool thread_schedstat(uint64_t& run_ns, uint64_t& wait_ns) {
  const int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[128];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  unsigned long long run = 0, wait = 0;
  if (std::sscanf(buf, "%llu %llu", &run, &wait) != 2) return false;
  run_ns = run;
  wait_ns = wait;
  return true;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string v = line.substr(colon + 1);
        while (!v.empty() && v.front() == ' ') v.erase(v.begin());
        return v;
      }
    }
  }
  return "unknown CPU";
}

DeviceFacts cpu_facts(const DtypePair& dtype, const std::string& op) {
  DeviceFacts d;
  d.name = cpu_model_name();
  d.key = cpu_device_key();
  d.driver = openblas_get_config();
  d.sm_count = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  long l3 = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
  d.l2_bytes = l3 > 0 ? l3 : 0;
  PeakFigure peak = peak_for_operator(cpu_peak_tflops(d.sm_count, dtype), op);
  d.peak_tflops = peak.tflops;
  d.peak_source = peak.source;
  return d;
}

class CpuBackend : public MeasureBackend {
 public:
  CpuBackend(const ProblemSetup& p, CandidateLibrary* candidate, std::string library)
      : m_p(p), m_candidate(candidate), m_library(std::move(library)) {
    m_facts = cpu_facts(p.dtype, p.desc.op);
  }

  DeviceFacts facts() override {
    DeviceFacts d = m_facts;
    // Under 10 ms of launches in all the share says little (the counters move in scheduler ticks).
    if (m_sched_ok && m_run_ns + m_wait_ns >= 10'000'000ull) {
      d.cpu_wait_share = static_cast<double>(m_wait_ns) / static_cast<double>(m_run_ns + m_wait_ns);
    }
    return d;
  }
  double host_now_ms() override { return now_ms(); }

  DeviceStatus prepare(int input_sets) override {
    const size_t in_bytes = static_cast<size_t>(scalar_type_bytes(m_p.dtype.input));
    m_a.assign(input_sets, std::vector<uint8_t>(count_a() * in_bytes));
    m_b.assign(input_sets, std::vector<uint8_t>(count_b() * in_bytes));
    if (m_p.sparse) m_meta.assign(input_sets, std::vector<uint8_t>(count_meta()));
    m_as.assign(input_sets, std::vector<float>(a_scale_count(m_p), 0.0f));
    m_bs.assign(input_sets, std::vector<float>(b_scale_count(m_p), 0.0f));
    m_c_bytes = count_c() * static_cast<size_t>(scalar_type_bytes(m_p.dtype.output));
    m_c.assign(m_c_bytes + 2 * k_guard_bytes, k_guard_byte);
    m_ref.assign(input_sets, std::vector<float>(count_c(), 0.0f));
    if (m_p.scale_mode == CROQ_SCALE_BLOCK) m_mag.assign(input_sets, std::vector<float>(count_c(), 0.0f));
    if (m_candidate) {
      m_ws.assign(m_candidate->workspace_for(m_p), 0);
      const size_t prepared = m_candidate->prepared_bytes_for(m_p);
      if (prepared > 0) m_prepared.assign(input_sets, std::vector<uint8_t>(prepared));
    }
    long l3 = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
    // Twice the last-level cache, within reason (virtual machines report odd sizes).
    size_t flush = l3 > 0 ? 2 * static_cast<size_t>(l3) : (64u << 20);
    m_flush.assign(std::clamp<size_t>(flush, 8u << 20, 64u << 20), 0);
    if (!m_candidate) {
      if (m_library != "openblas") return DeviceStatus::fail(fmt::format("unknown library '{}' (croq-cpu-runner: openblas)", m_library));
      m_variants = 1;
      if (converts()) {
        m_a32.assign(count_a(), 0.0f);
        m_b32.assign(count_b(), 0.0f);
        m_c32.assign(count_c(), 0.0f);
      }
    }
    return {};
  }

  DeviceStatus fill_inputs(int set, uint64_t seed) override {
    const ScalarType t = input_storage();
    const uint64_t k = static_cast<uint64_t>(m_p.desc.k);
    const bool scaled = m_p.scale_mode != CROQ_SCALE_NONE;
    for (size_t i = 0; i < count_a(); ++i) {
      float v = scaled ? fp8_scaled_value(seed, k_stream_a, i) : random_uniform(seed, k_stream_a, i);
      // A candidate gets poison outside the 2:4 pattern; the library, the pruned A itself.
      if (m_p.sparse) v = sparse24_value(seed, i / k, i % k, k, v, m_candidate != nullptr);
      store_from_f32(m_a[set].data(), t, i, v);
    }
    for (size_t i = 0; i < count_b(); ++i) {
      store_from_f32(m_b[set].data(), t, i, scaled ? fp8_scaled_value(seed, k_stream_b, i) : random_uniform(seed, k_stream_b, i));
    }
    for (size_t i = 0; i < m_as[set].size(); ++i) {
      m_as[set][i] = m_p.scale_mode == CROQ_SCALE_TENSOR ? fp8_tensor_scale(seed, 0) : fp8_block_scale(seed, 0, i);
    }
    for (size_t i = 0; i < m_bs[set].size(); ++i) {
      m_bs[set][i] = m_p.scale_mode == CROQ_SCALE_TENSOR ? fp8_tensor_scale(seed, 1) : fp8_block_scale(seed, 1, i);
    }
    if (m_p.sparse) {
      for (size_t i = 0; i < count_meta(); ++i) m_meta[set][i] = sparse24_meta_byte(seed, i, k);
    }
    keep_pristine(set);
    return {};
  }

  // What this backend wrote into the inputs of each set, to tell a target that writes into them.
  void keep_pristine(int set) {
    if (m_pristine.size() < m_a.size()) m_pristine.resize(m_a.size());
    Pristine& p = m_pristine[static_cast<size_t>(set)];
    p.a = m_a[set];
    p.b = m_b[set];
    p.meta = m_p.sparse ? m_meta[set] : std::vector<uint8_t>{};
    p.as = m_as[set];
    p.bs = m_bs[set];
  }

  DeviceStatus check_inputs(int set, std::vector<std::string>& changed) override {
    if (static_cast<size_t>(set) >= m_pristine.size()) return {};
    const Pristine& p = m_pristine[static_cast<size_t>(set)];
    if (m_a[set] != p.a) changed.emplace_back("A");
    if (m_b[set] != p.b) changed.emplace_back("B");
    if (m_p.sparse && m_meta[set] != p.meta) changed.emplace_back("A's metadata");
    // Bytes, not floats: a NaN written over a NaN is a change too.
    auto same = [](const std::vector<float>& x, const std::vector<float>& y) {
      return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0);
    };
    if (!same(m_as[set], p.as)) changed.emplace_back("A's scales");
    if (!same(m_bs[set], p.bs)) changed.emplace_back("B's scales");
    return {};
  }

  DeviceStatus compute_reference(int set) override {
    std::vector<float> a(count_a()), b(count_b());
    load_a(set, a.data());
    for (size_t i = 0; i < b.size(); ++i) b[i] = load_as_f32(m_b[set].data(), input_storage(), i);
    apply_block_scales(set, a.data(), b.data());
    sgemm(a.data(), b.data(), m_ref[set].data());
    apply_tensor_scales(set, m_ref[set].data());
    if (!m_mag.empty()) {
      // The block-scaled rule's magnitude, sum_k |a_ik sa| |b_kj sb| (tolerance.hpp).
      for (float& x : a) x = std::fabs(x);
      for (float& x : b) x = std::fabs(x);
      sgemm(a.data(), b.data(), m_mag[set].data());
    }
    return {};
  }

  // All of B gets fresh values (stream k_stream_perturb of `seed`), and the copy of it as well.
  // B's fresh values go out through a small buffer with stores past the caches, into B and into
  // the backend's own copy of it: B is as cold after its refresh as the flush left it, since the
  // procedure refreshes B after the flush on this backend, right before the timer (procedure.cpp).
  DeviceStatus perturb_inputs(int set, int64_t /*column*/, uint64_t seed) override {
    const bool scaled = m_p.scale_mode != CROQ_SCALE_NONE;
    const ScalarType t = input_storage();
    const size_t elem = static_cast<size_t>(scalar_type_bytes(t));
    alignas(16) uint8_t chunk[4096];
    const size_t per = sizeof chunk / elem;
    uint8_t* copy = nullptr;
    if (static_cast<size_t>(set) < m_pristine.size()) {
      std::vector<uint8_t>& p = m_pristine[static_cast<size_t>(set)].b;
      p.resize(m_b[set].size());
      copy = p.data();
    }
    for (size_t first = 0; first < count_b(); first += per) {
      const size_t n = std::min(per, count_b() - first);
      for (size_t i = 0; i < n; ++i) {
        const size_t at = first + i;
        store_from_f32(chunk, t, i,
                       scaled ? fp8_scaled_value(seed, k_stream_perturb, at) : random_uniform(seed, k_stream_perturb, at));
      }
      stream_bytes(m_b[set].data() + first * elem, chunk, n * elem);
      if (copy) stream_bytes(copy + first * elem, chunk, n * elem);
    }
    stream_fence();
    return {};
  }

  LaunchOutcome prepare_operands(int set) override {
    if (!m_candidate || m_prepared.empty()) return {};
    croq_status r = m_candidate->prepare(m_p, operands(set), m_prepared[set].data(), m_prepared[set].size(), nullptr);
    return {static_cast<int>(r), {}};
  }

  DeviceStatus poison_output() override {
    std::memset(c_ptr(), 0xFF, m_c_bytes);  // NaN in f32, f16 and bf16
    m_c_at_stop_valid = false;
    return {};
  }

  LaunchOutcome launch(int set) override {
    if (m_candidate) return {static_cast<int>(m_candidate->launch(m_p, operands(set), nullptr)), {}};
    if (!converts()) {
      sgemm(reinterpret_cast<const float*>(m_a[set].data()), reinterpret_cast<const float*>(m_b[set].data()),
            reinterpret_cast<float*>(c_ptr()));
      return {};
    }
    // A library user with 16-bit or fp8 data converts to f32, multiplies, and rounds the result.
    const ScalarType t = input_storage();
    for (size_t i = 0; i < m_a32.size(); ++i) m_a32[i] = load_as_f32(m_a[set].data(), t, i);
    for (size_t i = 0; i < m_b32.size(); ++i) m_b32[i] = load_as_f32(m_b[set].data(), t, i);
    apply_block_scales(set, m_a32.data(), m_b32.data());
    sgemm(m_a32.data(), m_b32.data(), m_c32.data());
    apply_tensor_scales(set, m_c32.data());
    for (size_t i = 0; i < m_c32.size(); ++i) store_from_f32(c_ptr(), m_p.dtype.output, i, m_c32[i]);
    return {};
  }

  DeviceStatus synchronize() override { return {}; }

  DeviceStatus compare(int set, const ToleranceSpec& tol, Verification& v) override {
    compare_host(m_c_at_stop_valid ? m_c_at_stop.data() : c_ptr(), m_p.dtype.output, m_ref[set].data(), m_p.desc.m,
                 m_p.desc.n, tol, v, 8, m_mag.empty() ? nullptr : m_mag[set].data());
    int64_t changed = 0;
    for (size_t i = 0; i < k_guard_bytes; ++i) {
      changed += m_c[i] != k_guard_byte;
      changed += m_c[k_guard_bytes + m_c_bytes + i] != k_guard_byte;
    }
    v.guard_bytes_changed = changed;
    if (changed) {
      std::memset(m_c.data(), k_guard_byte, k_guard_bytes);
      std::memset(m_c.data() + k_guard_bytes + m_c_bytes, k_guard_byte, k_guard_bytes);
    }
    decide_passed(v);
    return {};
  }

  DeviceStatus flush_cache() override {
    std::memset(m_flush.data(), ++m_flush_count & 0xFF, m_flush.size());
    return {};
  }
  bool can_hold_stream() const override { return false; }
  DeviceStatus hold_stream() override { return {}; }
  DeviceStatus release_stream() override { return {}; }
  bool hold_timed_out() override { return false; }
  DeviceStatus start_timer() override {
    m_sched_at_start = thread_schedstat(m_run0, m_wait0);
    m_t0 = now_ms();
    return {};
  }
  DeviceStatus stop_timer() override {
    m_t1 = now_ms();
    // How long the launch waited for a CPU (read outside the timed interval): another process
    // sharing this CPU shows as run-queue delay (device.cpu_wait_share, the flag cpu_shared).
    uint64_t run1 = 0, wait1 = 0;
    if (m_sched_at_start && thread_schedstat(run1, wait1) && run1 >= m_run0 && wait1 >= m_wait0) {
      m_run_ns += run1 - m_run0;
      m_wait_ns += wait1 - m_wait0;
      m_sched_ok = true;
    }
    // C as the launch left it when it returned: what is compared. Work a candidate leaves to a
    // thread of its own after returning is outside the timed interval, and not in this copy.
    const auto* c = static_cast<const uint8_t*>(c_ptr());
    m_c_at_stop.assign(c, c + m_c_bytes);
    m_c_at_stop_valid = true;
    return {};
  }
  DeviceStatus read_timer(double& ms) override {
    ms = m_t1 - m_t0;
    return {};
  }
  std::string timer_method() const override { return "steady_clock"; }
  bool asynchronous() const override { return false; }
  void sample_clock() override {}

  LaunchOutcome profile_launch(int set, const std::string&) override { return launch(set); }

  int variant_count() override { return m_candidate ? 1 : m_variants; }
  json variant_description(int) override {
    if (m_candidate) return {{"library", "candidate"}};
    json j = {{"library", "openblas"}, {"api", "cblas_sgemm"}, {"threads", openblas_get_num_threads()}};
    if (converts()) j["converts_to_f32"] = true;
    if (m_p.sparse) j["dense_on_pruned_a"] = true;
    if (m_p.scale_mode != CROQ_SCALE_NONE) j["scales_applied_in_f32"] = true;
    return j;
  }
  DeviceStatus select_variant(int index) override {
    return index == 0 ? DeviceStatus::good() : DeviceStatus::fail("openblas has one variant");
  }

 private:
  size_t count_a() const { return static_cast<size_t>(m_p.desc.m * m_p.desc.k); }
  size_t count_b() const { return static_cast<size_t>(m_p.desc.k * m_p.desc.n); }
  size_t count_c() const { return static_cast<size_t>(m_p.desc.m * m_p.desc.n); }
  size_t count_meta() const { return static_cast<size_t>(m_p.desc.m * (m_p.desc.k / 8)); }
  ScalarType input_storage() const { return m_p.dtype.input == ScalarType::tf32 ? ScalarType::f32 : m_p.dtype.input; }
  bool converts() const { return m_p.dtype.input != ScalarType::f32 || m_p.dtype.output != ScalarType::f32; }

  // A of `set` as f32; for the sparse operator with the positions outside its pattern (read from
  // the metadata handed to the candidate) set to zero: the reference's A.
  void load_a(int set, float* out) const {
    const ScalarType t = input_storage();
    const size_t k = static_cast<size_t>(m_p.desc.k);
    for (size_t i = 0; i < count_a(); ++i) {
      float v = load_as_f32(m_a[set].data(), t, i);
      if (m_p.sparse) {
        const size_t row = i / k, col = i % k;
        const unsigned nibble = (m_meta[set][row * (k / 8) + col / 8] >> (4 * ((col / 4) % 2))) & 0xFu;
        const unsigned pos = static_cast<unsigned>(col % 4);
        if (pos != (nibble & 3u) && pos != (nibble >> 2)) v = 0.0f;
      }
      out[i] = v;
    }
  }

  // The block-scaled operator: A (f32, [M,K]) and B (f32, in its storage layout) multiplied by
  // their blocks' scales, so that sgemm's product is sum_k (a_scale A)(b_scale B).
  void apply_block_scales(int set, float* a, float* b) const {
    if (m_p.scale_mode != CROQ_SCALE_BLOCK) return;
    const int64_t m = m_p.desc.m, n = m_p.desc.n, k = m_p.desc.k;
    const int64_t bk = m_p.gemm.scale_block_k, bn = m_p.gemm.scale_block_n, kb = (k + bk - 1) / bk;
    const bool col = m_p.desc.b_layout == "col";
    for (int64_t i = 0; i < m; ++i)
      for (int64_t q = 0; q < k; ++q) a[i * k + q] *= m_as[set][static_cast<size_t>((q / bk) * m + i)];  // [KB, M]
    for (int64_t q = 0; q < k; ++q)
      for (int64_t j = 0; j < n; ++j) {
        b[b_index(static_cast<uint64_t>(q), static_cast<uint64_t>(j), static_cast<uint64_t>(k), static_cast<uint64_t>(n),
                  col)] *= m_bs[set][static_cast<size_t>((j / bn) * kb + q / bk)];
      }
  }
  // Per-tensor scales: the f32 product times a_scale * b_scale.
  void apply_tensor_scales(int set, float* c) const {
    if (m_p.scale_mode != CROQ_SCALE_TENSOR) return;
    const float s = m_as[set][0] * m_bs[set][0];
    for (size_t i = 0; i < count_c(); ++i) c[i] *= s;
  }

  croq_gemm_operands operands(int set) {
    croq_gemm_operands ops{};
    ops.a = m_a[set].data();
    ops.a_meta = m_p.sparse ? m_meta[set].data() : nullptr;
    ops.b = m_b[set].data();
    ops.c = c_ptr();
    if (m_p.scale_mode != CROQ_SCALE_NONE) {
      ops.a_scale = m_as[set].data();
      ops.b_scale = m_bs[set].data();
    }
    if (!m_prepared.empty()) {
      ops.a_prepared = m_prepared[set].data();
      ops.a_prepared_bytes = m_prepared[set].size();
    }
    ops.workspace = m_ws.empty() ? nullptr : m_ws.data();
    ops.workspace_bytes = m_ws.size();
    return ops;
  }

  void* c_ptr() { return m_c.data() + k_guard_bytes; }

  void sgemm(const float* a, const float* b, float* c) {
    const bool col = m_p.desc.b_layout == "col";
    cblas_sgemm(CblasRowMajor, CblasNoTrans, col ? CblasTrans : CblasNoTrans, static_cast<blasint>(m_p.desc.m),
                static_cast<blasint>(m_p.desc.n), static_cast<blasint>(m_p.desc.k), 1.0f, a,
                static_cast<blasint>(m_p.desc.k), b, static_cast<blasint>(col ? m_p.desc.k : m_p.desc.n), 0.0f, c,
                static_cast<blasint>(m_p.desc.n));
  }

  ProblemSetup m_p;
  CandidateLibrary* m_candidate;
  std::string m_library;
  DeviceFacts m_facts;
  std::vector<std::vector<uint8_t>> m_a, m_b, m_meta, m_prepared;
  std::vector<std::vector<float>> m_as, m_bs;  // per set: the scales (empty without)
  std::vector<float> m_a32, m_b32, m_c32;  // the library's f32 copies
  struct Pristine {
    std::vector<uint8_t> a, b, meta;
    std::vector<float> as, bs;
  };
  std::vector<Pristine> m_pristine;  // per set: the inputs as this backend wrote them
  std::vector<uint8_t> m_c;
  std::vector<uint8_t> m_c_at_stop;  // C when the timed launch returned (stop_timer)
  bool m_c_at_stop_valid = false;
  size_t m_c_bytes = 0;
  std::vector<std::vector<float>> m_ref;  // per input set
  std::vector<std::vector<float>> m_mag;  // per input set, the block-scaled operator only: sum |a b| scaled
  std::vector<uint8_t> m_ws;
  std::vector<uint8_t> m_flush;
  int m_flush_count = 0;
  int m_variants = 1;
  double m_t0 = 0, m_t1 = 0;
  // Run-queue figures of the runner's thread over the launches (start_timer to stop_timer).
  uint64_t m_run0 = 0, m_wait0 = 0, m_run_ns = 0, m_wait_ns = 0;
  bool m_sched_at_start = false, m_sched_ok = false;
};

class CpuPlatform : public RunnerPlatform {
 public:
  std::string program() const override { return "croq-cpu-runner"; }
  std::string libraries() const override { return "openblas"; }
  std::unique_ptr<MeasureBackend> open(const RunnerOptions& o, const ProblemSetup& p, CandidateLibrary* candidate,
                                       std::string& error, bool&) override {
    if (!candidate && o.library != "openblas") {
      error = fmt::format("unknown library '{}' (croq-cpu-runner: openblas)", o.library);
      return nullptr;
    }
    return std::make_unique<CpuBackend>(p, candidate, o.library);
  }
  DeviceFacts describe_device(const RunnerOptions&, const ProblemSetup& p) override {
    return cpu_facts(p.dtype, p.desc.op);
  }
  // The candidate starts no process (confine.hpp).
  std::string confine_before_loading() override { return forbid_new_processes(); }
};

}  // namespace

}  // namespace croq::cpu_runner

int main(int argc, char** argv) {
  croq::cpu_runner::CpuPlatform platform;
  return croq::runner_main(argc, argv, platform);
}
