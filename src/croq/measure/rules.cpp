// The measurement rules document (rules.hpp).
#include "croq/measure/rules.hpp"

#include "croq/measure/peak.hpp"
#include "croq/measure/runner_options.hpp"
#include "croq/measure/tolerance.hpp"
#include "croq/util/text.hpp"
#include "croq/workspace/dtype.hpp"

namespace croq {

namespace {

json dtypes_json() {
  json out = json::object();
  // Every accepted spelling, in the table's order (known_dtype_spellings lists them all).
  const std::string all = known_dtype_spellings() + ",";
  for (size_t start = 0, comma; (comma = all.find(',', start)) != std::string::npos; start = comma + 1) {
    const std::string name = trim(std::string_view(all).substr(start, comma - start));
    auto d = parse_dtype_pair(name);
    if (!d) continue;
    out[name] = {{"canonical", d->canonical},
                 {"input", scalar_type_name(d->input)},
                 {"output", scalar_type_name(d->output)},
                 {"compute", scalar_type_name(d->compute)},
                 {"peak_column", peak_column(*d)},
                 {"tolerance", tolerance_for(*d).to_json()}};
  }
  return out;
}

json timing_json() {
  const RunnerOptions o;
  return {{"warmup", o.warmup},         {"warmup_ms", o.warmup_ms},     {"min_reps", o.min_reps},
          {"max_reps", o.max_reps},     {"cv_target", o.cv_target},     {"min_time_ms", o.min_time_ms},
          {"time_budget_ms", o.time_budget_ms}, {"rest_ratio", o.rest_ratio}, {"rest_window_ms", o.rest_window_ms},
          {"l2_flush", o.l2_flush},     {"rotation_sets", o.rotation_sets}};
}

json peak_json() {
  json rows = json::array();
  for (const PeakRow& r : peak_rows()) {
    rows.push_back({{"contains", r.contains}, {"excludes", r.excludes}, {"cc_major", r.cc_major},
                    {"cc_minor", r.cc_minor},
                    {"tflops", {{"f16", r.f16}, {"e4m3", r.e4m3}, {"tf32", r.tf32}, {"f32", r.f32}}}});
  }
  // The estimate's FLOP per SM per clock, for every compute capability a device can report.
  json per_clock = json::object();
  for (int major = 5; major <= 13; ++major) {
    for (int minor = 0; minor <= 9; ++minor) {
      per_clock[std::to_string(major) + "." + std::to_string(minor)] = f16_flop_per_sm_clock(major, minor);
    }
  }
  const PeakEstimate e = peak_estimate_constants();
  return {{"rows", rows},
          {"match", "first row whose lowercase name contains `contains`, not `excludes`, and whose compute "
                    "capability is equal"},
          {"f16_flop_per_sm_clock", per_clock},
          {"f16_flop_per_sm_clock_default", f16_flop_per_sm_clock(99, 0)},
          {"estimate",
           {{"default_clock_mhz", e.default_clock_mhz},
            {"f32_flop_per_sm_clock", e.f32_flop_per_sm_clock},
            {"factor", {{"f16", 1.0}, {"e4m3", e.e4m3_factor}, {"tf32", e.tf32_factor}}}}}};
}

}  // namespace

json measurement_rules() {
  return {{"schema", k_rules_schema}, {"dtypes", dtypes_json()}, {"timing", timing_json()}, {"peak", peak_json()}};
}

}  // namespace croq
