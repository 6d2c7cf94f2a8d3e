// Starting-kernel discovery (discover.hpp).
#include "croq/build/discover.hpp"

#include <algorithm>
#include <cctype>
#include <regex>

#include <fmt/format.h>

#include "croq/build/builder.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/text.hpp"
#include "croq/workspace/dtype.hpp"
#include "croq/workspace/ids.hpp"
#include "croq/workspace/operators.hpp"

namespace croq {

namespace {

std::string canonical_or_empty(const std::string& token) {
  if (token.empty()) return {};
  if (auto d = parse_dtype_pair(token)) return d->canonical;
  return token;
}

bool defines_entry_point(const std::string& dsl, const std::string& text) {
  if (dsl == "triton") return text.find("def croq_matmul") != std::string::npos;
  if (dsl == "croqtile") return text.find("__co__") != std::string::npos;
  return text.find("croq_matmul") != std::string::npos || text.find("croq_gemm") != std::string::npos;
}

// The dtypes a bundled kernel declares for `op` (its croq-kernel line: "dtypes" a list for the
// operator of its folder, or an object from operator to list for a kernel that serves several), or
// nothing when it declares none for that operator.
std::optional<std::vector<std::string>> declared_dtypes(const json& meta, const std::string& op) {
  if (!meta.contains("dtypes")) return std::nullopt;
  const json& d = meta["dtypes"];
  const json* list = d.is_array() ? &d : (d.is_object() && d.contains(op) ? &d[op] : nullptr);
  if (!list || !list->is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& x : *list) {
    if (x.is_string()) out.push_back(canonical_or_empty(x.get<std::string>()));
  }
  return out;
}

// Tier A: the bundled kernels of the dsl that serve the operator (those in kernels/<dsl>/<op>/,
// and those elsewhere whose croq-kernel line names the operator), and, when a dtype is asked,
// only those that declare it: a kernel that declares no dtypes is not offered for one, since
// nothing says it can run it.
std::vector<StartingKernel> tier_a(const DiscoverRequest& req) {
  std::vector<StartingKernel> out;
  fs::path root;
  try {
    root = find_project_dir("kernels") / req.dsl;
  } catch (const Error&) {
    return out;
  }
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  const auto& exts = source_extensions(req.dsl);
  const std::string& primary = exts.front();
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(root, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->is_regular_file() && it->path().extension() == primary) files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& p : files) {
    std::string stem = p.stem().string();
    if (stem.find("_aitune_") != std::string::npos) continue;
    auto text = read_file(p).value_or("");
    if (!defines_entry_point(req.dsl, text)) continue;
    StartingKernel k;
    k.tier = "A";
    k.name = stem;
    k.path = p;
    if (auto meta = read_kernel_metadata(text)) k.meta = *meta;
    k.rank = k.meta.value("rank", 0);
    const fs::path folder = p.lexically_relative(root);
    const bool in_op_folder = !folder.empty() && folder.begin()->string() == req.op;
    const bool names_op = k.meta.contains("dtypes") && k.meta["dtypes"].is_object() && k.meta["dtypes"].contains(req.op);
    if (!in_op_folder && !names_op) continue;
    if (!req.dtype.empty()) {
      const auto dtypes = declared_dtypes(k.meta, req.op);
      if (!dtypes || std::find(dtypes->begin(), dtypes->end(), req.dtype) == dtypes->end()) continue;
    }
    for (const auto& ext : exts) {
      fs::path comp = fs::path(p).replace_extension(ext);
      if (ext != primary && fs::is_regular_file(comp, ec)) k.companions.push_back(comp);
    }
    out.push_back(std::move(k));
  }
  std::stable_sort(out.begin(), out.end(), [](const StartingKernel& a, const StartingKernel& b) { return a.rank > b.rank; });
  return out;
}

std::vector<StartingKernel> tier_b(const Workspace& ws, const DiscoverRequest& req) {
  std::vector<StartingKernel> out;
  std::error_code ec;
  for (const TaskRef& t : ws.list_tasks("", req.dsl)) {
    if (operator_name(t.shape) != req.op) continue;
    if (req.exclude && req.exclude->id() == t.id()) continue;
    if (!req.dtype.empty() && canonical_or_empty(t.shape.dtype_token) != req.dtype) continue;
    LedgerIndex idx;
    try {
      idx = Ledger(ws, t).index();
    } catch (const Error&) {
      continue;  // an unreadable ledger offers nothing
    }
    if (!idx.best) continue;
    const RecordBrief& best = *idx.best;
    fs::path srcs = ws.kind_dir(t, ArtifactKind::srcs);
    std::optional<fs::path> primary;
    std::vector<fs::path> companions;
    for (const auto& ext : source_extensions(req.dsl)) {
      fs::path p = srcs / (best.kernel + ext);
      if (!fs::is_regular_file(p, ec)) continue;
      if (!primary) primary = p;
      else companions.push_back(p);
    }
    if (!primary) continue;  // the best KEEP's source is gone: nothing to start from
    StartingKernel k;
    k.tier = "B";
    k.name = best.kernel;
    k.path = *primary;
    k.companions = companions;
    k.tflops = best.tflops;
    k.same_gpu = !req.gpu.empty() && t.gpu == req.gpu;
    k.meta = {{"task", t.id()}, {"gpu", t.gpu}, {"shape_key", t.shape.text}, {"model", t.model},
              {"kernel", best.kernel}, {"iter", best.iter}, {"decision", best.decision}};
    if (best.tflops) k.meta["tflops"] = *best.tflops;
    out.push_back(std::move(k));
  }
  std::stable_sort(out.begin(), out.end(), [](const StartingKernel& a, const StartingKernel& b) {
    if (a.same_gpu != b.same_gpu) return a.same_gpu;
    return a.tflops.value_or(0) > b.tflops.value_or(0);
  });
  return out;
}

json tier_c_for(const DiscoverRequest& req, const EnvLookup& env) {
  json refs = json::array();
  auto add_project = [&refs](const std::string& rel) {
    try {
      fs::path p = find_project_dir(fs::path(rel).parent_path().string()) / fs::path(rel).filename();
      std::error_code ec;
      if (fs::exists(p, ec)) refs.push_back(p.string());
    } catch (const Error&) {
      // An installed croq without its source tree: that reference is left out of the list.
    }
  };
  add_project("include/croq/kernel_abi.h");
  add_project("docs/dsl.md");
  std::string approach, bar;
  if (req.dsl == "cuda") {
    approach = "Implement the operator from scratch on tensor cores: WMMA or mma.sync (sm_80+), or wgmma with TMA "
               "and warp specialisation on sm_90a; tile through shared memory and pipeline the global loads.";
    bar = "uses MMA instructions (wmma/mma.sync/wgmma), passes verification, beats a scalar kernel";
    add_project("kernels/cuda/matmul/wmma_tc.cu");
  } else if (req.dsl == "croqtile") {
    approach = "Write the .co from scratch with mma.op / mma.row.row and tma.copy (sm_90a) or dma.copy (sm_80); "
               "the compiler's own end-to-end tests are the models that compile with today's choreo.";
    bar = "uses mma.* primitives, passes verification, beats a scalar kernel";
    if (auto home = env("CHOREO_HOME")) {
      for (const char* t : {"wgmma_ss", "wgmma_rs", "hopper_mma", "ampere_mma", "wmma", "gemm_sp"}) {
        fs::path p = fs::path(*home) / "tests" / "gpu" / "end2end" / (std::string(t) + ".co");
        std::error_code ec;
        if (fs::exists(p, ec)) refs.push_back(p.string());
      }
    }
  } else if (req.dsl == "triton") {
    approach = "Write a @triton.jit kernel with tl.dot over BLOCK_M x BLOCK_N tiles, masked edges, grouped "
               "program ids for L2 reuse, and a fixed configuration (no autotune after iter000).";
    bar = "uses tl.dot, passes verification, beats a scalar kernel";
    add_project("kernels/triton/matmul/tiled.py");
  } else {
    approach = "Write a cache-blocked kernel with packed panels and an inner loop the compiler vectorises "
               "(-O3 -march=native), then a register-blocked micro-kernel.";
    bar = "passes verification, beats the naive triple loop";
    add_project("kernels/cpp/matmul/blocked.cpp");
  }
  return json{{"tier", "C"}, {"approach", approach}, {"minimum_bar", bar}, {"references", refs}};
}

}  // namespace

std::optional<json> read_kernel_metadata(const std::string& text) {
  static const std::regex re(R"((?://|#)\s*croq-kernel:\s*(\{.*\})\s*$)");
  int n = 0;
  for (const auto& line : split_lines(text)) {
    if (++n > 60) break;
    std::smatch m;
    if (line.find("croq-kernel:") != std::string::npos && std::regex_search(line, m, re)) {
      if (auto j = try_parse_json(m[1].str()); j && j->is_object()) return *j;
    }
  }
  return std::nullopt;
}

std::string tag_from_stem(const std::string& stem) {
  std::string s = stem;
  if (auto it = try_parse_iter_id(s)) s = it->tag;
  else if (auto at = try_parse_attempt_id(s)) s = at->tag;
  std::string out;
  for (char c : to_lower(s)) out += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  while (!out.empty() && !std::isalpha(static_cast<unsigned char>(out.front()))) out.erase(out.begin());
  if (out.size() > 31) out.resize(31);
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (out.size() < 2) out = "draft";
  return out;
}

Discovery discover_starting_kernels(const Workspace* ws, const DiscoverRequest& request, const EnvLookup& env) {
  DiscoverRequest req = request;
  req.dtype = canonical_or_empty(req.dtype);
  Discovery d;
  auto a = tier_a(req);
  std::vector<StartingKernel> b;
  if (ws) b = tier_b(*ws, req);
  d.candidates.insert(d.candidates.end(), b.begin(), b.end());
  d.candidates.insert(d.candidates.end(), a.begin(), a.end());
  for (size_t i = 0; i < d.candidates.size(); ++i) d.candidates[i].index = int(i + 1);
  // Same-GPU tier B first (its kernels were measured here), then tier A, then tier B elsewhere.
  for (size_t i = 0; i < d.candidates.size() && !d.recommended; ++i) {
    if (d.candidates[i].tier == "B" && d.candidates[i].same_gpu) d.recommended = i;
  }
  for (size_t i = 0; i < d.candidates.size() && !d.recommended; ++i) {
    if (d.candidates[i].tier == "A") d.recommended = i;
  }
  if (!d.recommended && !d.candidates.empty()) d.recommended = 0;
  d.tier_c = tier_c_for(req, env);
  return d;
}

json Discovery::to_json(const Workspace* ws) const {
  auto show = [ws](const fs::path& p) { return ws ? ws->display(p) : p.string(); };
  json list = json::array();
  for (const auto& k : candidates) {
    json companions = json::array();
    for (const auto& c : k.companions) companions.push_back(show(c));
    json j{{"index", k.index}, {"tier", k.tier}, {"name", k.name}, {"path", show(k.path)}, {"companions", companions},
           {"rank", k.rank}, {"meta", k.meta}};
    if (k.tflops) j["tflops"] = *k.tflops;
    if (k.tier == "B") j["same_gpu"] = k.same_gpu;
    list.push_back(j);
  }
  json rec;
  if (recommended) {
    const auto& k = candidates[*recommended];
    std::string why = k.tier == "B"
                          ? fmt::format("the best KEEP of {} ({} TFLOPS){}", k.meta.value("task", ""),
                                        k.tflops ? fmt::format("{:.1f}", *k.tflops) : "?",
                                        k.same_gpu ? ", measured on this GPU" : ", measured on another GPU")
                          : fmt::format("croq's bundled {} kernel{}", k.name,
                                        k.meta.contains("summary") ? ": " + k.meta.value("summary", "") : "");
    rec = {{"tier", k.tier}, {"pick", k.index}, {"path", show(k.path)}, {"why", why},
           {"advice", "build and measure the top two or three at the target shape (croq prepare --pick N, "
                      "croq build, croq measure) and keep the best as iter001"}};
  } else {
    rec = tier_c;
    rec["pick"] = nullptr;
  }
  std::string tier = recommended ? candidates[*recommended].tier : "C";
  return json{{"tier", tier}, {"candidates", list}, {"recommendation", rec}, {"scratch", tier_c}};
}

}  // namespace croq
