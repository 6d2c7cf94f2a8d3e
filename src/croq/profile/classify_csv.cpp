// classify_csv.hpp: file -> parsed CSV -> chosen row -> figures -> classification document.
#include "croq/profile/classify_csv.hpp"

#include <fmt/format.h>

#include "croq/profile/kernel_select.hpp"
#include "croq/profile/ncu_csv.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/workspace/dtype.hpp"
#include "croq/workspace/ids.hpp"
#include "croq/workspace/operators.hpp"

namespace croq::profile {

ShapeWork shape_work(const std::string& shape_key) {
  ShapeKey key = parse_shape_key(shape_key);
  ShapeWork w;
  if (auto d = parse_dtype_pair(key.dtype_token)) w.dtype = d->canonical;
  const auto op = try_shape_operator(key);
  if (op && key.dims.size() == 3) {
    // A 2:4 sparse product does half the multiply-adds of the dense one: against the dense peak,
    // its tensor work is M N K FLOPs (its TFLOPS, 2 M N K, are measured against twice the peak).
    const double per = is_sparse_operator(*op) ? 1.0 : 2.0;
    w.flops = per * static_cast<double>(key.m()) * static_cast<double>(key.n()) * static_cast<double>(key.k());
  }
  return w;
}

json classify_csv(const ClassifyRequest& req) {
  std::error_code ec;
  if (!fs::exists(req.csv, ec)) {
    throw Error(ExitCode::not_found, fmt::format("no CSV at {}", req.csv.string()),
                "give the CSV written by `croq profile` (perf/<key>/<model>/ncu_<kernel>_round<R>.csv)");
  }
  std::string text = read_file_or_throw(req.csv);
  NcuCsv csv = parse_ncu_csv(text, req.csv.filename().string());
  KernelSelection sel = select_kernel(csv, req.kernel_pattern);
  ProfileMetrics m = extract_metrics(csv.kernels[sel.index]);
  Classification c = classify(m, req.options);
  json doc;
  if (!req.iter.empty()) doc["iter"] = req.iter;
  json body = classification_json(m, c);
  for (auto it = body.begin(); it != body.end(); ++it) doc[it.key()] = it.value();
  std::optional<fs::path> rep = req.ncu_rep;
  if (!rep) {
    fs::path sibling = req.csv;
    sibling.replace_extension(".ncu-rep");
    if (fs::exists(sibling, ec)) rep = sibling;
  }
  doc["evidence"]["ncu_rep"] = rep ? json(rep->string()) : json(nullptr);
  doc["evidence"]["csv"] = req.csv.string();
  doc["evidence"]["csv_form"] = csv_form_name(csv.form);
  doc["evidence"]["kernel_selection"] = {{"reason", sel.reason},
                                         {"origin", kernel_origin_name(kernel_origin(m.kernel))},
                                         {"rows", sel.rows}};
  doc["dsl"] = req.options.dsl;
  // The seeds' contract: a `hint` field when the classification is not sure, pointing at the deeper
  // analyses (the details page of the report, the SASS comparison).
  if (doc["confidence"] != "high") {
    doc["hint"] = fmt::format("confidence is {}: read the warp-stall and memory tables with `ncu --import {} --page "
                              "details`, and compare the SASS with the baseline (`croq sass compare`)",
                              doc["confidence"].get<std::string>(), rep ? rep->string() : std::string("<report>.ncu-rep"));
  }
  if (sel.only_non_candidates && csv.kernels.size() > 1) {
    doc["warnings"].push_back("no candidate kernel in the CSV: the row classified is a library or harness kernel");
  }
  return doc;
}

}  // namespace croq::profile
