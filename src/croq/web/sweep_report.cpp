// The sweep report (sweep_report.hpp).
#include "croq/web/sweep_report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "croq/ledger/ledger.hpp"
#include "croq/sweep/state.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/time.hpp"
#include "croq/web/charts.hpp"
#include "croq/web/report.hpp"

namespace croq::web {

namespace {

const std::vector<std::string> k_classes = {"memory_bound", "compute_bound", "latency_bound", "launch_bound", "mixed",
                                            "other"};

struct Row {
  std::string key, op, dtype, dims, status, mode;
  std::optional<double> baseline, best;
  int rounds = 0, target = 0;
  double gpu_hours = 0;
  std::map<std::string, int> bottlenecks;
  std::vector<std::pair<double, int>> stored;  // (epoch ms, round) of each stored round >= 1
  std::string problem;  // why the shape's ledger could not be read ("" if it could)
};

std::string num(std::optional<double> v, const char* f = "{:.3f}") { return v ? fmt::format(fmt::runtime(f), *v) : ""; }

double epoch_ms(const std::string& iso) {
  auto t = parse_iso8601(iso);
  return t ? std::chrono::duration<double, std::milli>(t->time_since_epoch()).count() : 0;
}

std::string progress_svg(const std::vector<std::pair<double, int>>& rounds_t, const std::vector<double>& done_t) {
  const int w = 880, h = 320, l = 60, r = 60, t = 30, b = 40;
  double t0 = rounds_t.empty() ? 0 : rounds_t.front().first;
  double hours = 0;
  if (!rounds_t.empty()) hours = (rounds_t.back().first - t0) / 3.6e6;
  if (hours <= 0) hours = 1.0 / 60;
  const double max_rounds = std::max<double>(1, static_cast<double>(rounds_t.size()));
  const double max_done = std::max<double>(1, static_cast<double>(done_t.size()));
  auto x = [&](double ms) { return l + (w - l - r) * ((ms - t0) / 3.6e6) / hours; };
  auto y = [&](double v, double max) { return h - b - (h - t - b) * v / max; };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"11\"><title>sweep progress</title>"
      "<text x=\"{}\" y=\"18\" font-size=\"13\">Sweep progress: rounds stored (blue, left) and shapes done (green, right)</text>",
      w, h, w, h, l);
  s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333\"/>", l, h - b, w - r, h - b);
  s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333\"/>", l, t, l, h - b);
  for (double v : nice_ticks(0, hours, 6)) {
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:g}</text>", l + (w - l - r) * v / hours, h - b + 15, v);
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">hours since the first stored round</text>", (l + w - r) / 2,
                   h - 5);
  for (double v : nice_ticks(0, max_rounds, 5, true)) {
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#1f77b4\">{:g}</text>", l - 5, y(v, max_rounds) + 4, v);
  }
  for (double v : nice_ticks(0, max_done, 5, true)) {
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" fill=\"#2ca02c\">{:g}</text>", w - r + 5, y(v, max_done) + 4, v);
  }
  std::string pts;
  for (size_t i = 0; i < rounds_t.size(); ++i) pts += fmt::format("{:.1f},{:.1f} ", x(rounds_t[i].first), y(double(i + 1), max_rounds));
  s += "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"" + pts + "\"/>";
  pts.clear();
  for (size_t i = 0; i < done_t.size(); ++i) {
    pts += fmt::format("{:.1f},{:.1f} {:.1f},{:.1f} ", x(done_t[i]), y(double(i), max_done), x(done_t[i]), y(double(i + 1), max_done));
  }
  if (!done_t.empty()) pts += fmt::format("{:.1f},{:.1f}", x(rounds_t.back().first), y(max_done, max_done));
  s += "<polyline fill=\"none\" stroke=\"#2ca02c\" stroke-width=\"1.5\" points=\"" + pts + "\"/>";
  return s + "</svg>";
}

std::string bottlenecks_svg(const std::vector<Row>& rows) {
  const int bar = 16, gap = 6, l = 250, w = 880, t = 40;
  const int h = t + static_cast<int>(rows.size()) * (bar + gap) + 30;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"11\"><title>bottleneck mix per shape</title>"
      "<text x=\"10\" y=\"18\" font-size=\"13\">Bottleneck mix of each shape's rounds</text>",
      w, h, w, h);
  int lx = l;
  for (const auto& c : k_classes) {
    s += fmt::format("<rect x=\"{}\" y=\"24\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"33\">{}</text>", lx,
                     bottleneck_colour(c), lx + 13, c);
    lx += 100;
  }
  int yy = t;
  for (const auto& r : rows) {
    int total = 0;
    for (const auto& [k, v] : r.bottlenecks) total += v;
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", l - 6, yy + bar - 4, xml_escape(r.key));
    double x = l;
    for (const auto& c : k_classes) {
      auto it = r.bottlenecks.find(c);
      if (it == r.bottlenecks.end() || total == 0) continue;
      double wd = (w - l - 20) * double(it->second) / total;
      s += fmt::format("<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}: {} {} of {} rounds</title></rect>",
                       x, yy, wd, bar, bottleneck_colour(c), xml_escape(r.key), c, it->second, total);
      x += wd;
    }
    if (total == 0) s += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#888\">no rounds yet</text>", l + 4, yy + bar - 4);
    yy += bar + gap;
  }
  return s + "</svg>";
}

}  // namespace

SweepReportResult write_sweep_report(const Workspace& ws, const fs::path& out) {
  json state = sweep::StateFile(ws.root()).read();
  if (state["shapes"].empty()) {
    throw_not_found("no sweep in this workspace: " + (ws.tuning_dir() / "state.json").string() + " lists no shape",
                    "run `croq sweep run` first");
  }
  std::vector<Row> rows;
  for (auto it = state["shapes"].begin(); it != state["shapes"].end(); ++it) {
    const json& e = it.value();
    if (!e.is_object()) continue;
    Row r;
    r.key = it.key();
    r.op = e.value("operator", "");
    r.dtype = e.value("dtype", "");
    if (e.contains("shape") && e["shape"].is_array() && e["shape"].size() == 3) {
      r.dims = fmt::format("{}x{}x{}", e["shape"][0].dump(), e["shape"][1].dump(), e["shape"][2].dump());
    }
    r.status = e.value("status", "");
    r.mode = e.value("mode", "");
    r.target = e.value("target_rounds", 0);
    r.gpu_hours = e.value("worker_seconds", 0.0) / 3600.0;
    // Rounds, baseline and best are the ledger's only (state.json's copies are not evidence).
    const std::string gpu = e.value("gpu", ""), dsl = e.value("dsl", ""), model = e.value("model", "");
    if (!gpu.empty() && !dsl.empty() && !model.empty()) {
      try {
        TaskRef t = make_task(gpu, dsl, r.key, model);
        Ledger l(ws, t);
        if (l.exists()) {
          std::optional<double> best;
          for (const auto& rec : l.read_all().records) {
            const std::string d = decision_name(rec.decision);
            if (d == "BASELINE") {
              if (rec.tflops && !unbacked_figure(ws, rec)) r.baseline = rec.tflops;
              continue;
            }
            r.rounds = std::max(r.rounds, rec.round);
            if (d == "KEEP" && rec.tflops && !unbacked_figure(ws, rec)) best = std::max(best.value_or(0), *rec.tflops);
            if (rec.round >= 1) {
              std::string b = rec.bottleneck;
              if (std::find(k_classes.begin(), k_classes.end(), b) == k_classes.end()) b = "other";
              ++r.bottlenecks[b];
              r.stored.emplace_back(epoch_ms(rec.timestamp), rec.round);
            }
          }
          if (best) r.best = best;
        }
      } catch (const Error& e) {
        r.problem = e.what();  // shown in the report: a damaged ledger is named, not skipped without a word
      }
    }
    rows.push_back(r);
  }
  ensure_dir(out);
  SweepReportResult res;
  res.out = out;
  // sweep.csv
  std::string csv = csv_row({"key", "operator", "dtype", "shape", "status", "mode", "baseline_tflops", "best_tflops",
                             "ratio", "rounds", "target_rounds", "gpu_hours", "memory_bound", "compute_bound",
                             "latency_bound", "launch_bound", "mixed", "other"});
  for (const auto& r : rows) {
    std::optional<double> ratio;
    if (r.best && r.baseline && *r.baseline > 0) ratio = *r.best / *r.baseline;
    std::vector<std::string> f = {r.key, r.op, r.dtype, r.dims, r.status, r.mode, num(r.baseline), num(r.best),
                                  num(ratio, "{:.4f}"), std::to_string(r.rounds), std::to_string(r.target),
                                  fmt::format("{:.3f}", r.gpu_hours)};
    json row = {{"key", r.key}, {"operator", r.op}, {"dtype", r.dtype}, {"shape", r.dims}, {"status", r.status},
                {"baseline_tflops", r.baseline ? json(*r.baseline) : json(nullptr)},
                {"best_tflops", r.best ? json(*r.best) : json(nullptr)},
                {"ratio", ratio ? json(*ratio) : json(nullptr)}, {"rounds", r.rounds}, {"target_rounds", r.target},
                {"gpu_hours", r.gpu_hours}};
    if (!r.problem.empty()) row["problem"] = r.problem;
    for (const auto& c : k_classes) {
      auto it = r.bottlenecks.find(c);
      const int n = it == r.bottlenecks.end() ? 0 : it->second;
      f.push_back(std::to_string(n));
      row["bottlenecks"][c] = n;
    }
    csv += csv_row(f);
    res.rows.push_back(row);
  }
  atomic_write(out / "sweep.csv", csv, false);
  res.files.push_back("sweep.csv");
  // Progress over time: every stored round of every shape, in time order; a shape is done when its
  // round reaches its budget.
  std::vector<std::pair<double, int>> all;
  std::vector<double> done_at;
  for (const auto& r : rows) {
    for (const auto& s : r.stored) {
      all.push_back(s);
      if (r.target > 0 && s.second == r.target) done_at.push_back(s.first);
    }
  }
  std::sort(all.begin(), all.end());
  std::sort(done_at.begin(), done_at.end());
  std::string pcsv = csv_row({"at", "hours", "rounds_stored", "shapes_done"});
  size_t d = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    while (d < done_at.size() && done_at[d] <= all[i].first) ++d;
    auto tp = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double, std::milli>(all[i].first)));
    pcsv += csv_row({to_iso8601(tp), fmt::format("{:.4f}", (all[i].first - all.front().first) / 3.6e6), std::to_string(i + 1),
                     std::to_string(d)});
  }
  atomic_write(out / "progress.csv", pcsv, false);
  res.files.push_back("progress.csv");
  const std::string psvg = progress_svg(all, done_at);
  atomic_write(out / "progress.svg", psvg, false);
  res.files.push_back("progress.svg");
  const std::string bsvg = bottlenecks_svg(rows);
  atomic_write(out / "bottlenecks.svg", bsvg, false);
  res.files.push_back("bottlenecks.svg");
  // index.html: shapes x dtypes, then every shape.
  std::vector<std::string> dtypes, dims;
  for (const auto& r : rows) {
    if (std::find(dtypes.begin(), dtypes.end(), r.dtype) == dtypes.end()) dtypes.push_back(r.dtype);
    if (std::find(dims.begin(), dims.end(), r.dims) == dims.end()) dims.push_back(r.dims);
  }
  std::string html =
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>croq sweep report</title><style>"
      "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
      "padding:3px 8px;text-align:right}th{background:#f3f3f3}td.k{text-align:left}</style></head><body>";
  html += "<h1>croq sweep report</h1><p>" + xml_escape(ws.root().string()) + ", " + xml_escape(now_iso8601()) + "</p>";
  std::string problems;
  for (const auto& r : rows) {
    if (!r.problem.empty()) problems += "<li>" + xml_escape(r.key) + ": " + xml_escape(r.problem) + "</li>";
  }
  if (!problems.empty()) html += "<h2>Ledgers that could not be read</h2><ul>" + problems + "</ul>";
  html += "<h2>Best / baseline by shape and dtype</h2><table><tr><th>M x N x K</th>";
  for (const auto& dt : dtypes) html += "<th>" + xml_escape(dt) + "</th>";
  html += "</tr>";
  for (const auto& dm : dims) {
    html += "<tr><td class=\"k\">" + xml_escape(dm) + "</td>";
    for (const auto& dt : dtypes) {
      std::string cell;
      for (const auto& r : rows) {
        if (r.dims != dm || r.dtype != dt) continue;
        std::string ratio = r.best && r.baseline && *r.baseline > 0 ? fmt::format("{:.3f}", *r.best / *r.baseline) : "-";
        cell += fmt::format("{} <small>({}/{} rounds, {})</small>", ratio, r.rounds, r.target, xml_escape(r.status));
      }
      html += "<td>" + cell + "</td>";
    }
    html += "</tr>";
  }
  html += "</table><h2>Every shape</h2><table><tr><th>key</th><th>status</th><th>baseline TFLOPS</th><th>best TFLOPS</th>"
          "<th>ratio</th><th>rounds</th><th>GPU hours</th></tr>";
  for (const auto& r : rows) {
    std::string ratio = r.best && r.baseline && *r.baseline > 0 ? fmt::format("{:.3f}", *r.best / *r.baseline) : "-";
    html += fmt::format("<tr><td class=\"k\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}/{}</td><td>{:.2f}</td></tr>",
                        xml_escape(r.key), xml_escape(r.status), num(r.baseline, "{:.2f}"), num(r.best, "{:.2f}"), ratio,
                        r.rounds, r.target, r.gpu_hours);
  }
  html += "</table><h2>Progress over time</h2>" + psvg + "<h2>Bottleneck mix</h2>" + bsvg +
          "<p>Data: sweep.csv, progress.csv. Per-task figures: <code>croq report --all</code>.</p></body></html>\n";
  atomic_write(out / "index.html", html, false);
  res.files.push_back("index.html");
  return res;
}

}  // namespace croq::web
