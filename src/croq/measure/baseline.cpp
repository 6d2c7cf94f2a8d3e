// The library baseline's documents (baseline.hpp).
#include "croq/measure/baseline.hpp"

#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "croq/ledger/records.hpp"
#include "croq/util/error.hpp"
#include "croq/util/units.hpp"
#include "croq/workspace/operators.hpp"

namespace croq {

namespace {

json library_of(const Measurement& m) { return m.library.is_object() ? m.library : json::object(); }

// Each library's fastest variant on these inputs (cuSPARSELt and the dense libraries for a sparse
// problem), as the measurement records them.
json libraries_of(const json& lib) {
  json libraries = json::object();
  if (lib.contains("libraries") && lib["libraries"].is_object()) {
    for (auto it = lib["libraries"].begin(); it != lib["libraries"].end(); ++it) {
      libraries[it.key()] = {{"tflops", it->value("tflops", 0.0)}, {"median_ms", it->value("median_ms", 0.0)},
                             {"algo", it->value("algo", json(nullptr))}};
    }
  }
  return libraries;
}

const Timing& passed_timing(const Measurement& m) {
  if (!m.passed() || !m.timing) {
    throw Error(ExitCode::candidate_failed, fmt::format("not a passed baseline measurement ({})", verdict_name(m.verdict)),
                "measure again with `croq baseline --force`");
  }
  return *m.timing;
}

}  // namespace

BaselineLibrary baseline_library(const std::string& dsl, const ShapeKey& shape, const std::string& library_flag) {
  const bool cpp = dsl == "cpp";
  const bool sparse = is_sparse_operator(shape_operator(shape));
  if (cpp && library_flag != "auto" && library_flag != "openblas") {
    throw_usage(fmt::format("the cpp dsl's library baseline is openblas, not {}", library_flag), "drop --library");
  }
  if (!cpp && library_flag == "openblas") throw_usage("openblas is the cpp dsl's baseline", "use --library auto");
  if (!sparse && library_flag == "cusparselt") {
    throw_usage(fmt::format("cuSPARSELt computes 2:4 sparse GEMM, and {} is dense", shape.text),
                "use --library auto, cublas or cublaslt");
  }
  // For a sparse problem the libraries are cuSPARSELt and the dense ones on the same pruned A; the
  // faster one is iter000.
  BaselineLibrary b;
  b.runner_library = cpp ? "openblas" : library_flag;
  b.tag = cpp ? "openblas" : library_flag != "auto" ? library_flag : sparse ? "cusparselt" : "cublas";
  return b;
}

StoreRequest baseline_store_request(const MeasurementFile& mf, const std::string& lib_tag, const std::string& task_uid,
                                    const std::string& measurement_display) {
  const Measurement& m = mf.measurement;
  const Timing& tm = passed_timing(m);
  const json lib = library_of(m);
  const std::string library = lib.value("name", lib_tag);
  StoreRequest req;
  req.iter = "iter000";
  req.kernel = "iter000_" + lib_tag;
  req.decision = "BASELINE";
  req.tflops = m.tflops;
  req.round = 0;
  req.bottleneck = k_no_bottleneck;
  req.idea = fmt::format("library baseline: {} ({}), {:.2f} TFLOPS, median {:.4f} ms", library,
                         lib.value("chosen", "default"), m.tflops.value_or(0), tm.median_ms);
  const json libraries = libraries_of(lib);
  if (libraries.size() > 1) {
    std::vector<std::string> each;
    for (auto it = libraries.begin(); it != libraries.end(); ++it) {
      each.push_back(fmt::format("{} {:.2f}", it.key(), it->value("tflops", 0.0)));
    }
    req.idea += fmt::format(" (fastest of: {} TFLOPS)", fmt::join(each, ", "));
  }
  req.source = "measured";
  req.extra["measurement"] = measurement_provenance(mf, measurement_display);
  req.extra["task_uid"] = task_uid;
  return req;
}

json baseline_result_document(const MeasurementFile& mf, const ShapeKey& shape, const std::string& lib_tag,
                              const std::string& task_uid, const std::string& measurement_display) {
  const Measurement& m = mf.measurement;
  const Timing& tm = passed_timing(m);
  const json lib = library_of(m);
  // The seeds' cublas_result.json fields, then croq's.
  json result;
  result["dtype"] = shape.dtype_token;
  result["m"] = shape.m();
  result["n"] = shape.n();
  result["k"] = shape.k();
  result["tflops"] = m.tflops.value_or(0);
  result["time_ms"] = tm.median_ms;
  result["library"] = lib.value("name", lib_tag);
  result["schema"] = "croq-baseline-v1";
  result["dtype_canonical"] = m.problem.dtype;
  result["operator"] = m.problem.op;
  result["libraries"] = libraries_of(lib);
  if (lib.contains("library_status")) result["library_status"] = lib["library_status"];
  result["c_type"] = m.problem.c_type;
  result["b_layout"] = m.problem.b_layout;
  result["algo"] = lib.contains("algo") ? lib["algo"] : json(nullptr);
  result["chosen"] = lib.value("chosen", "default");
  result["default"] = lib.contains("default") ? lib["default"] : json(nullptr);
  result["best_screened"] = lib.contains("best_screened") ? lib["best_screened"] : json(nullptr);
  result["note"] = lib.value("note", "");
  result["statistics"] = {{"median_ms", tm.median_ms}, {"mean_ms", tm.mean_ms}, {"min_ms", tm.min_ms},
                          {"p90_ms", tm.p90_ms},       {"max_ms", tm.max_ms},   {"cv", tm.cv},
                          {"reps", tm.reps},           {"warmup", tm.warmup},   {"stop_reason", tm.stop_reason},
                          {"l2_flush", tm.l2_flush},   {"method", tm.method}};
  result["device"] = {{"name", m.device.name}, {"uuid", m.device.uuid}, {"key", m.device.key},
                      {"sm_clock_mhz", m.device.sm_clock_mhz ? json(*m.device.sm_clock_mhz) : json(nullptr)},
                      {"driver", m.device.driver}, {"peak_tflops", m.device.peak_tflops}};
  result["seed"] = m.seed ? json(*m.seed) : json(nullptr);
  result["task_uid"] = task_uid;
  result["measurement"] = measurement_display;
  result["measurement_sha256"] = mf.sha256;
  result["source"] = "measured";
  result["created_at"] = m.created_at;
  return result;
}

json baseline_warnings(const Measurement& m, double cv_target) {
  json warnings = json::array();
  // The spread the decisions use: the robust one (a few stray repetitions do not move the median,
  // and every baseline was flagged on a busy CPU by its plain CV).
  const double spread = m.timing ? m.timing->robust_cv.value_or(m.timing->cv) : 0;
  if (m.timing && spread > cv_target) {
    warnings.push_back({{"flag", "noisy"},
                        {"message", fmt::format("the baseline's robust spread ({:.2f}%) is above the target {:.2f}%: "
                                                "ratios against it move by as much; measure it again on a quieter "
                                                "machine (croq baseline --force)",
                                                spread * 100, cv_target * 100)}});
  }
  if (m.cpu_shared()) {
    warnings.push_back({{"flag", k_cpu_shared_flag}, {"message", "measuring the baseline, " + cpu_shared_warning(*m.device.cpu_wait_share)}});
  }
  if (m.device.peak_tflops > 0 && m.tflops && *m.tflops < 0.01 * m.device.peak_tflops) {
    warnings.push_back({{"flag", "implausible"},
                        {"message", fmt::format("the baseline reaches {} of the device's {} peak ({:.2f}%): a library "
                                                "should do far better on this device; check the device is idle and "
                                                "the shape is what you meant",
                                                format_rate(*m.tflops), format_rate(m.device.peak_tflops),
                                                *m.tflops / m.device.peak_tflops * 100)}});
  }
  return warnings;
}

}  // namespace croq
