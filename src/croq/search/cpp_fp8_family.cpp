// The cpp_fp8 family (kernels/cpp/blockscaled/tiled/tiled_fp8.cpp): FP8 GEMM with scales for the
// CPU backend, so the loop of the block-scaled operator and of dense e4m3 matmul (per-tensor
// scales) runs end to end without a GPU. Its parameters: the cache block, the partial sums of the
// dot products, the e4m3 decoding (table or arithmetic), threads.
#include <algorithm>
#include <fmt/format.h>
#include <thread>

#include "croq/search/family.hpp"
#include "croq/search/gemm_family_common.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"

namespace croq {

namespace {

class CppFp8Family : public KernelFamily {
 public:
  std::string name() const override { return "cpp_fp8"; }
  std::string dsl() const override { return "cpp"; }
  bool supports(const FamilyProblem& p) const override {
    if (p.dtype.input != ScalarType::e4m3) return false;
    return p.op == "matmul" || p.op == "blockscaled";
  }
  std::vector<ParamSpec> params() const override {
    static const std::vector<ParamSpec> specs = make_params();
    return specs;
  }
  static std::vector<ParamSpec> make_params() {
    unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::string> threads = {"1"};
    for (unsigned t = 2; t <= std::min(hw, 16u); t *= 2) threads.push_back(std::to_string(t));
    return {
        {"BM", {"4", "8", "16", "32", "64"}, true, "tiling", "rows of A per cache block"},
        {"BN", {"8", "16", "32", "64", "128"}, true, "tiling", "columns of C per cache block (rows of decoded B reused)"},
        {"DECODE", {"0", "1"}, true, "memory", "e4m3 to f32 by arithmetic on the bits (0) or a 256-entry table (1)"},
        {"LANES", {"1", "4", "8", "16"}, false, "compute", "partial sums per dot product (vectorisable when > 1)"},
        {"THREADS", threads, false, "misc", "worker threads over row blocks"},
    };
  }
  FamilyConfig default_config(const FamilyProblem&) const override {
    return {{"BM", "16"}, {"BN", "32"}, {"DECODE", "0"}, {"LANES", "1"}, {"THREADS", "1"}};
  }
  std::optional<std::string> violation(const FamilyConfig& c, const FamilyProblem& p) const override {
    if (!supports(p)) return std::string("cpp_fp8 computes e4m3 matmul (per-tensor scales) and the block-scaled operator only");
    if (auto why = gemm::check_listed_values(c, params())) return why;
    return std::nullopt;
  }
  std::string render_source(const FamilyConfig& c, const FamilyProblem&) const override {
    std::string out = "// cpp_fp8 configuration chosen by croq's search\n";
    for (const auto& [k, v] : c) out += fmt::format("#define CROQ_{} {}\n", k, v);
    out += read_file_or_throw(find_project_dir("kernels") / "cpp/blockscaled/tiled/tiled_fp8.cpp");
    return out;
  }
  std::vector<std::string> build_flags(const FamilyConfig&, const FamilyProblem&) const override { return {}; }
  std::vector<std::string> params_for_bottleneck(const std::string& b) const override {
    if (b == "memory_bound") return {"DECODE", "LANES", "BN", "BM"};
    if (b == "compute_bound") return {"LANES", "THREADS", "DECODE"};
    if (b == "latency_bound") return {"LANES", "BN", "BM"};
    if (b == "launch_bound") return {"THREADS", "BM"};
    return {"LANES", "DECODE", "THREADS", "BN", "BM"};
  }
  std::vector<Alternative> alternatives(const FamilyProblem& p) const override {
    FamilyConfig c = default_config(p);
    c["LANES"] = "8";
    c["DECODE"] = "1";
    if (violation(c, p)) return {};
    return {{"table decoding, 8 partial sums", "tbl_l8", c}};
  }
};

}  // namespace

std::shared_ptr<KernelFamily> make_cpp_fp8_family() { return std::make_shared<CppFp8Family>(); }

}  // namespace croq
