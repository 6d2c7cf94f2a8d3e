// The kernel `croq export` takes from a task (plan.hpp).
#include "croq/export/plan.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "croq/build/symbols.hpp"
#include "croq/build/toolchain.hpp"
#include "croq/ledger/documents.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/measure/problem.hpp"
#include "croq/protocol/evidence.hpp"
#include "croq/util/hash.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/workspace/dtype.hpp"
#include "croq/workspace/operators.hpp"
#include "croq/workspace/sources.hpp"

namespace croq {

namespace {

const char* dtype_name(croq_dtype t) {
  switch (t) {
    case CROQ_F16: return "f16";
    case CROQ_BF16: return "bf16";
    case CROQ_F32: return "f32";
    case CROQ_TF32: return "tf32";
    case CROQ_E4M3: return "e4m3";
  }
  return "?";
}

// B's layout as it was measured (the measurement file of the record); nullopt when unknown.
std::optional<std::string> measured_layout(const Workspace& ws, const RoundRecord& r) {
  const json* m = r.extra.contains("measurement") ? &r.extra["measurement"] : nullptr;
  if (!m || !m->is_object()) return std::nullopt;
  auto file = get_string(*m, "file");
  if (!file) return std::nullopt;
  fs::path p = fs::path(*file).is_absolute() ? fs::path(*file) : ws.root() / *file;
  try {
    auto text = read_file(p);
    if (!text) return std::nullopt;
    auto doc = try_parse_json(*text);
    if (!doc || !doc->is_object() || !doc->contains("problem")) return std::nullopt;
    const std::string layout = (*doc)["problem"].value("b_layout", "");
    if (layout == "row" || layout == "col") return layout;
    return std::nullopt;
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace

std::vector<std::string> object_flags_from_build(const std::vector<std::string>& recorded) {
  std::vector<std::string> out;
  for (size_t i = 0; i < recorded.size(); ++i) {
    const std::string& f = recorded[i];
    if (f == "--shared" || f == "-shared" || f == "-c") continue;
    if (f == "-o") {
      ++i;
      continue;
    }
    if (f == "-Xptxas" && i + 1 < recorded.size() && recorded[i + 1] == "-v") {
      ++i;
      continue;
    }
    if (f.rfind("-I", 0) == 0) {
      std::string dir = f.size() > 2 ? f.substr(2) : (i + 1 < recorded.size() ? recorded[i + 1] : "");
      std::error_code ec;
      // croq's include folder, or one that does not exist here (croq's, on the machine that tuned
      // the kernel): the export's own copy of the ABI header is used.
      if (fs::exists(fs::path(dir) / "croq" / "kernel_abi.h", ec) || !fs::is_directory(dir, ec)) {
        if (f.size() == 2) ++i;
        continue;
      }
    }
    out.push_back(f);
  }
  // Repeated words (nvcc records the gencode twice in some builds) are kept once when they stand
  // alone; pairs such as "-Xcompiler X" are left as they are.
  std::vector<std::string> dedup;
  for (size_t i = 0; i < out.size(); ++i) {
    const bool paired = i > 0 && (out[i - 1] == "-Xcompiler" || out[i - 1] == "-Xptxas" || out[i - 1] == "-Xlinker");
    if (!paired && out[i] != "-Xcompiler" && std::find(dedup.begin(), dedup.end(), out[i]) != dedup.end()) continue;
    dedup.push_back(out[i]);
  }
  return dedup;
}

json ExportKernel::to_json() const {
  json j;
  j["task"] = task.id();
  j["task_uid"] = task_uid;
  j["gpu"] = task.gpu;
  j["dsl"] = task.dsl;
  j["shape_key"] = task.shape.text;
  j["model"] = task.model;
  j["round"] = record.round;
  j["iter"] = record.iter;
  j["kernel"] = record.kernel;
  j["tflops"] = record.tflops ? json(*record.tflops) : json(nullptr);
  j["timestamp"] = record.timestamp;
  j["source_kind"] = record.source();
  j["problem"] = {{"op", op_name}, {"abi_op", static_cast<int>(op)}, {"m", m}, {"n", n}, {"k", k}, {"dtype", dtype},
                  {"a_type", dtype_name(a_type)}, {"c_type", dtype_name(c_type)},
                  {"compute_type", dtype_name(compute_type)}, {"b_layout", b_layout == CROQ_ROW_MAJOR ? "row" : "col"}};
  j["language"] = language;
  j["flags"] = flags;
  j["flags_origin"] = flags_origin;
  if (!arch.empty()) j["arch"] = arch;
  return j;
}

namespace {

// What the export ships is what croq built and measured: the source still hashes as it did at the
// kernel's last build, and a measured record's figure is its measurement file's (still there with
// the hash the record names, verdict PASS, the same TFLOPS). Throws Error (usage) on a mismatch.
void check_export_evidence(const Workspace& ws, const TaskRef& task, const ExportKernel& k) {
  std::optional<std::string> built;
  for (const Evidence& e : read_evidence(ws, task)) {
    if (e.kind == EvidenceKind::build && e.kernel == k.record.kernel) built = get_string(e.summary, "source_sha256");
  }
  if (built && !built->empty() && *built != sha256_file(k.source)) {
    throw_usage(fmt::format("task {}: {} changed after {} was last built (and measured): the export would ship a "
                            "kernel nobody measured",
                            task.id(), ws.display(k.source), k.record.kernel),
                "restore the source as it was built, or build, measure and store it as a new round");
  }
  const FigureBacking b = figure_backing(ws, k.record);
  const double recorded = k.record.tflops.value_or(0);
  if (b.kind == FigureBacking::edited_block) {
    throw_usage(fmt::format("task {}: the record of {} says {:.6g} TFLOPS, its own measurement block {:.6g}: the "
                            "ledger was edited",
                            task.id(), k.record.kernel, recorded, *b.other),
                "croq session validate finds the record; export another task or store the kernel again");
  }
  if (b.kind == FigureBacking::file_replaced || b.kind == FigureBacking::not_pass ||
      b.kind == FigureBacking::other_figure) {
    throw_usage(fmt::format("task {}: the measurement of {} ({}) is not the one its record was stored with{}", task.id(),
                            k.record.kernel, ws.display(b.file),
                            b.kind == FigureBacking::file_replaced ? " (its hash changed)"
                            : b.kind == FigureBacking::not_pass    ? " (its verdict is not PASS)"
                                                                   : " (another figure)"),
                "measure and store the kernel again, or export another task");
  }
}

}  // namespace

ExportKernel plan_export_kernel(const Workspace& ws, const TaskRef& task) {
  if (task.dsl != "cuda" && task.dsl != "cpp") {
    throw_usage(fmt::format("task {}: croq exports kernels of dsl cuda and cpp (C ABI shared objects), not {}",
                            task.id(), task.dsl),
                task.dsl == "croqtile" ? "export the task's .cu bound to the ABI by tuning it as a cuda task"
                                       : "leave this task out of the export");
  }
  ExportKernel k;
  k.task = task;
  std::string why;
  auto op = try_shape_operator(task.shape, &why);
  if (!op || task.shape.dims.size() != 3) {
    throw_usage(fmt::format("task {}: the shape key names no operator the export has an entry for: {}", task.id(), why));
  }
  k.op_name = *op;
  k.op = is_sparse_operator(*op) ? CROQ_OP_MATMUL_SPARSE24 : CROQ_OP_MATMUL;
  Ledger ledger(ws, task);
  if (!ledger.exists()) throw_not_found(fmt::format("task {} has no ledger", task.id()), "tune it first");
  JsonlParse all = ledger.read_all();
  // A figure croq measured itself outranks any typed or imported one (results.tsv, --tflops): a
  // reported KEEP is exported only when the task has no measured KEEP at all.
  std::optional<RoundRecord> best, best_reported;
  for (const auto& r : all.records) {
    if (r.decision != Decision::KEEP || !r.tflops) continue;
    auto num = r.iter_number();
    if (!num || *num < 1) continue;
    auto& slot = r.source() == "measured" ? best : best_reported;
    if (!slot || *r.tflops > *slot->tflops) slot = r;
  }
  if (!best) best = best_reported;
  if (!best) {
    throw_usage(fmt::format("task {} has no KEEP of a kernel (iteration >= 1) to export", task.id()),
                "tune it (croq tune) or store a measured KEEP first");
  }
  k.record = *best;
  if (auto cfg = read_task_config(ws, task)) k.task_uid = cfg->value("task_uid", "");
  auto src = find_primary_source(ws, task, k.record.kernel);
  if (!src) {
    throw_not_found(fmt::format("task {}: the source of {} is not in {}", task.id(), k.record.kernel,
                                ws.display(ws.kind_dir(task, ArtifactKind::srcs))),
                    "the export builds from sources; restore the file or export another task");
  }
  k.source = *src;
  k.language = task.dsl;
  check_export_evidence(ws, task, k);

  // The flags it was built with, from its build record.
  fs::path rec = ws.kind_dir(task, ArtifactKind::perf) / ("build_" + k.record.kernel + ".json");
  if (auto text = read_file(rec)) {
    auto doc = try_parse_json(*text);
    if (doc && doc->is_object() && (*doc)["flags"].is_array()) {
      std::vector<std::string> recorded;
      for (const auto& f : (*doc)["flags"]) {
        if (f.is_string()) recorded.push_back(f.get<std::string>());
      }
      k.flags = object_flags_from_build(recorded);
      k.flags_origin = ws.display(rec);
      if (doc->contains("arch") && (*doc)["arch"].is_string()) k.arch = (*doc)["arch"].get<std::string>();
    }
  }
  if (k.flags_origin.empty()) {
    k.flags_origin = "defaults";
    if (k.language == "cuda") {
      auto arch = arch_from_device_key(task.gpu);
      if (!arch) {
        throw_usage(fmt::format("task {}: no build record and no architecture in the device key", task.id()),
                    "build the kernel once with croq build so that its flags are recorded");
      }
      k.arch = *arch;
      k.flags = {"-O3", "-std=c++17", gencode_flag(*arch)};
    } else {
      k.flags = {"-O3", "-march=native", "-std=c++20"};
    }
  }

  const std::string layout =
      measured_layout(ws, k.record).value_or(layout_order("auto", *parse_dtype_pair(task.shape.dtype_token), *op).front());
  ProblemSetup p = make_problem(*op, task.shape.dims[0], task.shape.dims[1], task.shape.dims[2],
                                task.shape.dtype_token, layout);
  k.op = p.gemm.op;  // the ABI's operator: matmul, 2:4 sparse or block-scaled
  k.m = p.gemm.m;
  k.n = p.gemm.n;
  k.k = p.gemm.k;
  k.a_type = p.gemm.a_type;
  k.c_type = p.gemm.c_type;
  k.compute_type = p.gemm.compute_type;
  k.b_layout = p.gemm.b_layout;
  k.dtype = p.dtype.canonical;
  return k;
}

}  // namespace croq
