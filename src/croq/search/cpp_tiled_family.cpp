// The cpp_tiled family (kernels/cpp/matmul/tiled/tiled_gemm.cpp): a cache-blocked f32 GEMM for
// the CPU backend, with block sizes, register tile, SIMD width, packing, unrolling and threads.
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

class CppTiledFamily : public KernelFamily {
 public:
  std::string name() const override { return "cpp_tiled"; }
  std::string dsl() const override { return "cpp"; }
  bool supports(const FamilyProblem& p) const override {
    return p.op == "matmul" && p.dtype.input == ScalarType::f32 && p.dtype.output == ScalarType::f32;
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
        {"BM", {"16", "32", "64", "128", "256"}, true, "tiling", "rows of A per cache block"},
        {"BN", {"64", "128", "256", "512"}, true, "tiling", "columns of B per cache block"},
        {"BK", {"32", "64", "128", "256", "512"}, true, "tiling", "depth of a cache block"},
        {"PACK_B", {"0", "1"}, true, "memory", "copy each B panel into a contiguous buffer before use"},
        {"MR", {"1", "2", "4", "6", "8"}, false, "compute", "rows of the register tile"},
        {"NR", {"8", "16", "32", "48", "64"}, false, "compute", "columns of the register tile"},
        {"VEC", vec, false, "compute", "SIMD width (floats) of the register tile's vectors"},
        {"UNROLL", {"1", "2", "4"}, false, "pipeline", "unrolling of the depth loop"},
        {"THREADS", threads, false, "misc", "worker threads over row blocks"},
    };
  }
  FamilyConfig default_config(const FamilyProblem&) const override {
    // A plain starting point: one row per register tile, 8-wide vectors, no packing, one thread.
    return {{"BM", "64"}, {"BN", "128"}, {"BK", "64"}, {"PACK_B", "0"}, {"MR", "1"},
            {"NR", "16"}, {"VEC", "8"},  {"UNROLL", "1"}, {"THREADS", "1"}};
  }
  std::optional<std::string> violation(const FamilyConfig& c, const FamilyProblem& p) const override {
    if (!supports(p)) return std::string("cpp_tiled computes f32 matmul only");
    if (auto why = gemm::check_listed_values(c, params())) return why;
    const int bm = to_int(c, "BM"), bn = to_int(c, "BN"), mr = to_int(c, "MR"), nr = to_int(c, "NR"),
              vec = to_int(c, "VEC");
    if (bm % mr != 0) return fmt::format("BM={} is not a multiple of MR={}", bm, mr);
    if (bn % nr != 0) return fmt::format("BN={} is not a multiple of NR={}", bn, nr);
    if (nr % vec != 0) return fmt::format("NR={} is not a multiple of VEC={}", nr, vec);
    // Accumulators plus one B row of vectors must fit the 32 (AVX-512) / 16 (AVX2) vector registers.
    const int regs = vec == 16 ? 32 : 16;
    const int need = mr * (nr / vec) + nr / vec;
    if (need > regs) return fmt::format("the register tile needs {} vector registers, more than {}", need, regs);
    return std::nullopt;
  }
  std::string render_source(const FamilyConfig& c, const FamilyProblem&) const override {
    std::string out = "// cpp_tiled configuration chosen by croq's search\n";
    for (const auto& [k, v] : c) out += fmt::format("#define CROQ_{} {}\n", k, v);
    out += read_file_or_throw(find_project_dir("kernels") / "cpp/matmul/tiled/tiled_gemm.cpp");
    return out;
  }
  std::vector<std::string> build_flags(const FamilyConfig&, const FamilyProblem&) const override { return {}; }
  std::vector<std::string> params_for_bottleneck(const std::string& b) const override {
    // The CPU profile's memory_bound means "far below the machine's peak" (docs/classifier.md,
    // section 7): first the machine's SIMD width, then reuse (packing, register and cache tiles).
    if (b == "memory_bound") return {"VEC", "PACK_B", "MR", "NR", "BK", "BN", "BM"};
    if (b == "compute_bound") return {"VEC", "MR", "NR", "UNROLL", "THREADS"};
    if (b == "latency_bound") return {"UNROLL", "MR", "VEC", "NR", "BK"};
    if (b == "launch_bound") return {"THREADS", "BM", "BK"};
    return {"VEC", "PACK_B", "MR", "BK", "NR", "THREADS"};
  }
};

}  // namespace

std::shared_ptr<KernelFamily> make_cpp_tiled_family() { return std::make_shared<CppTiledFamily>(); }

}  // namespace croq
