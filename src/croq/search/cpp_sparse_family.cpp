// The cpp_sparse family (kernels/cpp/gemm_sp/tiled/tiled_sparse.cpp): a cache-blocked 2:4 sparse
// GEMM for the CPU backend, so the whole sparse loop (baseline, verify, measure, profile, decide,
// store, resume, tune) runs without a GPU. Its parameters: whether A is compressed once, off the
// clock (croq_gemm_prepare), or its metadata decoded at every launch; the cache block; the
// register tile; the SIMD width; unrolling; threads.
#include <algorithm>
#include <fmt/format.h>
#include <thread>

#include "croq/search/family.hpp"
#include "croq/search/gemm_family_common.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"

namespace croq {

namespace {

using gemm::cpu_has_avx512;

int to_int(const FamilyConfig& c, const std::string& k) { return gemm::int_param(c, k).value_or(-1); }

class CppSparseFamily : public KernelFamily {
 public:
  std::string name() const override { return "cpp_sparse"; }
  std::string dsl() const override { return "cpp"; }
  bool supports(const FamilyProblem& p) const override {
    return p.op == "gemm_sp" && p.k % 8 == 0 && p.dtype.compute != ScalarType::tf32 &&
           p.dtype.output != ScalarType::e4m3;
  }
  std::vector<ParamSpec> params() const override {
    static const std::vector<ParamSpec> specs = make_params();
    return specs;
  }
  static std::vector<ParamSpec> make_params() {
    std::vector<std::string> vec = {"4", "8"};
    if (cpu_has_avx512()) vec.push_back("16");
    unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::string> threads = {"1"};
    for (unsigned t = 2; t <= std::min(hw, 16u); t *= 2) threads.push_back(std::to_string(t));
    return {
        {"PREPARE", {"0", "1"}, true, "memory",
         "compress A once, off the clock, into f32 values and column indexes (1), or decode the metadata and "
         "read A's kept elements at every launch (0)"},
        {"BM", {"8", "16", "32", "64", "128"}, true, "tiling", "rows of A per cache block"},
        {"BN", {"32", "64", "128", "256", "512"}, true, "tiling", "columns of B per cache block"},
        {"MR", {"1", "2", "4"}, false, "compute", "rows of the register tile"},
        {"NR", {"8", "16", "32", "64"}, false, "compute", "columns of the register tile"},
        {"VEC", vec, false, "compute", "SIMD width (floats) of the register tile's vectors"},
        {"UNROLL", {"1", "2", "4"}, false, "pipeline", "unrolling of the loop over A's kept elements"},
        {"THREADS", threads, false, "misc", "worker threads over row blocks"},
    };
  }
  FamilyConfig default_config(const FamilyProblem&) const override {
    // A plain starting point: the metadata decoded at every launch, one row per register tile,
    // one thread.
    return {{"PREPARE", "0"}, {"BM", "32"}, {"BN", "128"}, {"MR", "1"},
            {"NR", "16"},     {"VEC", "8"}, {"UNROLL", "1"}, {"THREADS", "1"}};
  }
  std::optional<std::string> violation(const FamilyConfig& c, const FamilyProblem& p) const override {
    if (!supports(p)) return std::string("cpp_sparse computes 2:4 sparse GEMM (gemm_sp, K a multiple of 8) only");
    if (auto why = gemm::check_listed_values(c, params())) return why;
    const int bm = to_int(c, "BM"), bn = to_int(c, "BN"), mr = to_int(c, "MR"), nr = to_int(c, "NR"),
              vec = to_int(c, "VEC");
    if (bm % mr != 0) return fmt::format("BM={} is not a multiple of MR={}", bm, mr);
    if (bn % nr != 0) return fmt::format("BN={} is not a multiple of NR={}", bn, nr);
    if (nr % vec != 0) return fmt::format("NR={} is not a multiple of VEC={}", nr, vec);
    // Accumulators plus one B vector must fit the 32 (AVX-512) / 16 (AVX2) vector registers.
    const int regs = vec == 16 ? 32 : 16;
    const int need = mr * (nr / vec) + 1;
    if (need > regs) return fmt::format("the register tile needs {} vector registers, more than {}", need, regs);
    return std::nullopt;
  }
  std::string render_source(const FamilyConfig& c, const FamilyProblem&) const override {
    std::string out = "// cpp_sparse configuration chosen by croq's search\n";
    for (const auto& [k, v] : c) out += fmt::format("#define CROQ_{} {}\n", k, v);
    out += read_file_or_throw(find_project_dir("kernels") / "cpp/gemm_sp/tiled/tiled_sparse.cpp");
    return out;
  }
  std::vector<std::string> build_flags(const FamilyConfig&, const FamilyProblem&) const override { return {}; }
  std::vector<std::string> params_for_bottleneck(const std::string& b) const override {
    // The CPU profile's memory_bound means far below the machine's peak: first the data the inner
    // loop touches (A compressed once, SIMD width), then reuse (register and cache tiles).
    if (b == "memory_bound") return {"PREPARE", "VEC", "MR", "NR", "BN", "BM"};
    if (b == "compute_bound") return {"VEC", "MR", "NR", "UNROLL", "THREADS"};
    if (b == "latency_bound") return {"UNROLL", "MR", "VEC", "NR"};
    if (b == "launch_bound") return {"THREADS", "BM", "PREPARE"};
    return {"PREPARE", "VEC", "MR", "NR", "BN", "THREADS"};
  }
  std::vector<Alternative> alternatives(const FamilyProblem& p) const override {
    // The compressed-A form with a wider register tile: the structure a few single steps reach
    // only late (PREPARE is structural, and the register tile moves one parameter at a time).
    FamilyConfig c = default_config(p);
    c["PREPARE"] = "1";
    c["MR"] = "2";
    c["NR"] = "32";
    if (violation(c, p)) return {};
    return {{"compressed A, 2 x 32 register tile", "prep_r2x32", c}};
  }
};

}  // namespace

std::shared_ptr<KernelFamily> make_cpp_sparse_family() { return std::make_shared<CppSparseFamily>(); }

}  // namespace croq
