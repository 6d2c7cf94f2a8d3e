// The static report (report.hpp).
#include "croq/web/report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

#include <fmt/format.h>

#include "croq/ledger/documents.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/util/build_info.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "croq/util/time.hpp"
#include "croq/web/assets.hpp"
#include "croq/web/charts.hpp"

namespace croq::web {

namespace {

struct TaskData {
  TaskRef task;
  std::string uid;
  std::string mode;
  std::vector<RoundRecord> records;
  std::vector<ChartRound> rounds;
  std::string slug;
};

std::string num_or_empty(std::optional<double> v, const char* f = "{:.3f}") {
  return v ? fmt::format(fmt::runtime(f), *v) : std::string();
}

std::optional<double> median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The task's records; what could not be read is added to `problems`, with the file's path.
std::vector<RoundRecord> read_records(const Workspace& ws, const TaskRef& t, std::vector<std::string>& problems) {
  std::error_code ec;
  Ledger ledger(ws, t);
  if (fs::exists(ws.idea_log(t), ec)) {
    JsonlParse p = ledger.read_all();
    for (const auto& w : p.warnings) problems.push_back(ws.display(ws.idea_log(t)) + ": " + w);
    return p.records;
  }
  std::vector<std::string> w;
  auto rows = ledger.read_tsv(&w);
  for (const auto& x : w) problems.push_back(ws.display(ws.results_tsv(t)) + ": " + x);
  return rows;
}

json summarise(const TaskData& d) {
  json s;
  s["task_uid"] = d.uid;
  s["gpu"] = d.task.gpu;
  s["dsl"] = d.task.dsl;
  s["shape_key"] = d.task.shape.text;
  s["model"] = d.task.model;
  s["mode"] = d.mode;
  std::optional<double> base = baseline_tflops(d.rounds);
  const ChartRound* base_round = baseline_round(d.rounds);
  const std::string base_source = base_round ? base_round->source : std::string();
  auto best = best_so_far(d.rounds);
  std::optional<double> best_tflops;
  std::string best_kernel, best_source;
  if (!best.empty()) {
    best_tflops = best.back().second;
    for (const auto& r : d.rounds) {
      if (r.decision == "KEEP" && r.tflops && *r.tflops == *best_tflops) {
        best_kernel = r.kernel;
        best_source = r.source;
      }
    }
  }
  int keep = 0, discard = 0, failed = 0, max_round = 0;
  std::vector<double> gaps;
  std::optional<std::chrono::system_clock::time_point> prev;
  std::string first, last;
  for (const auto& r : d.rounds) {
    if (r.decision == "KEEP") ++keep;
    else if (r.decision == "DISCARD") ++discard;
    else if (r.decision != "BASELINE") ++failed;
    max_round = std::max(max_round, r.round);
    if (first.empty()) first = r.timestamp;
    last = r.timestamp;
    if (r.round >= 1) {
      auto t = parse_iso8601(r.timestamp);
      if (t && prev) gaps.push_back(std::chrono::duration<double>(*t - *prev).count());
      if (t) prev = t;
    }
  }
  s["baseline_tflops"] = base ? json(*base) : json(nullptr);
  s["best_tflops"] = best_tflops ? json(*best_tflops) : json(nullptr);
  s["best_kernel"] = best_kernel;
  // A figure typed by hand or printed by the program (source: reported) is not croq's measurement:
  // the summary says which it is, and the page marks it.
  s["baseline_source"] = base ? json(base_source) : json(nullptr);
  s["best_source"] = best_tflops ? json(best_source) : json(nullptr);
  s["ratio"] = (base && best_tflops && *base > 0) ? json(*best_tflops / *base) : json(nullptr);
  s["rounds"] = max_round;
  s["records"] = d.rounds.size();
  s["keep"] = keep;
  s["discard"] = discard;
  s["failed"] = failed;
  auto m = median(gaps);
  s["median_seconds_per_round"] = m ? json(*m) : json(nullptr);
  s["first_timestamp"] = first;
  s["last_timestamp"] = last;
  return s;
}

std::string text_or_empty(const json& s, const char* key) {
  return s[key].is_string() ? s[key].get<std::string>() : std::string();
}

std::optional<double> opt_num(const json& j) {
  return j.is_number() ? std::optional<double>(j.get<double>()) : std::nullopt;
}

void write_text(const fs::path& out, const std::string& rel, const std::string& content,
                std::vector<std::string>& files) {
  atomic_write(out / rel, content, /*durable=*/false);
  files.push_back(rel);
}

}  // namespace

static bool is_plain_number(const std::string& text) {
  static const std::regex number(R"([-+]?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?)");
  return std::regex_match(text, number);
}

std::string csv_field(const std::string& text) {
  // A spreadsheet runs a cell that starts with = + - @ (or tab or CR before one) as a formula
  // (=HYPERLINK(...), =cmd|...): such a cell gets a leading ' and is quoted (OWASP, CSV
  // injection). A plain number such as -1.5 stays a number.
  const bool formula = !text.empty() && std::string_view("=+-@\t\r").find(text.front()) != std::string_view::npos &&
                       !is_plain_number(text);
  if (!formula && text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = formula ? "\"'" : "\"";
  for (char c : text) {
    if (c == '"') out += "\"\"";
    else out += c;
  }
  return out + "\"";
}

std::string csv_row(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    out += csv_field(fields[i]);
  }
  return out + "\n";
}

ReportResult write_report(const Workspace& ws, const ReportOptions& o) {
  if (o.out.empty()) throw_usage("--out is required", "e.g. croq report --all --out report/");
  if (!o.all && o.selectors.empty()) throw_usage("name the tasks (--task ...) or pass --all");
  std::vector<TaskRef> all = ws.list_tasks();
  std::vector<TaskRef> chosen;
  std::map<std::string, std::string> uids;
  std::map<std::string, std::string> config_problems;  // task id -> why its task_config.json cannot be read
  for (const auto& t : all) {
    try {
      if (auto cfg = read_task_config(ws, t)) uids[t.id()] = get_string(*cfg, "task_uid").value_or("");
    } catch (const Error& e) {
      uids[t.id()] = "";
      config_problems[t.id()] = e.what();
    }
  }
  if (o.all) {
    chosen = all;
  } else {
    for (const auto& sel : o.selectors) {
      bool any = false;
      for (const auto& t : all) {
        if (t.id() == sel || t.shape.text == sel || (!uids[t.id()].empty() && uids[t.id()] == sel)) {
          any = true;
          if (std::none_of(chosen.begin(), chosen.end(), [&](const TaskRef& c) { return c.id() == t.id(); })) {
            chosen.push_back(t);
          }
        }
      }
      if (!any) {
        throw_not_found(fmt::format("no task matches '{}'", preview(sel, 80)),
                        "give a task_uid, <gpu>/<dsl>/<shape_key>/<model>, or a shape key");
      }
    }
  }
  ReportResult result;
  result.out = o.out;
  ensure_dir(o.out);

  std::vector<TaskData> tasks;
  for (const auto& t : chosen) {
    TaskData d;
    d.task = t;
    d.uid = uids[t.id()];
    if (auto bad = config_problems.find(t.id()); bad != config_problems.end()) {
      result.problems.push_back(bad->second);
    } else if (auto cfg = read_task_config(ws, t)) {
      d.mode = get_string(*cfg, "mode").value_or("");
    }
    d.records = read_records(ws, t, result.problems);
    d.rounds = chart_rounds(d.records);
    // A record whose figure is not its measurement's (edited in the log) counts as neither best nor
    // baseline, as in `croq status`: its figure leaves the charts and the summary, and the report
    // says why.
    for (size_t i = 0; i < d.records.size() && i < d.rounds.size(); ++i) {
      const RoundRecord& r = d.records[i];
      if (r.decision != Decision::KEEP && r.decision != Decision::BASELINE && r.iter_number() != 0) continue;
      if (auto why = unbacked_figure(ws, r)) {
        d.rounds[i].tflops.reset();
        result.problems.push_back(fmt::format("{}: {}'s figure is not its measurement's ({}): not counted",
                                              ws.display(ws.idea_log(t)), r.kernel, *why));
      }
    }
    d.slug = fmt::format("{}__{}__{}__{}", t.shape.text, t.model, t.dsl, t.gpu);
    tasks.push_back(std::move(d));
  }

  std::string summary_csv =
      csv_row({"task_uid", "gpu", "dsl", "shape_key", "model", "mode", "baseline_tflops", "best_tflops", "best_kernel",
               "ratio", "rounds", "records", "keep", "discard", "failed", "median_seconds_per_round", "first_timestamp",
               "last_timestamp", "baseline_source", "best_source"});
  std::vector<OverlaySeries> overlay;
  std::string sections;
  std::string summary_rows;
  for (const auto& d : tasks) {
    json s = summarise(d);
    result.summary.push_back(s);
    summary_csv += csv_row({d.uid, d.task.gpu, d.task.dsl, d.task.shape.text, d.task.model, d.mode,
                            num_or_empty(opt_num(s["baseline_tflops"])), num_or_empty(opt_num(s["best_tflops"])),
                            s["best_kernel"].get<std::string>(), num_or_empty(opt_num(s["ratio"]), "{:.4f}"),
                            std::to_string(s["rounds"].get<int>()), std::to_string(s["records"].get<size_t>()),
                            std::to_string(s["keep"].get<int>()), std::to_string(s["discard"].get<int>()),
                            std::to_string(s["failed"].get<int>()),
                            num_or_empty(opt_num(s["median_seconds_per_round"]), "{:.1f}"),
                            s["first_timestamp"].get<std::string>(), s["last_timestamp"].get<std::string>(),
                            text_or_empty(s, "baseline_source"), text_or_empty(s, "best_source")});
    overlay.push_back({d.task.shape.text + " · " + d.task.model, d.rounds});

    // Per-task files.
    ChartOptions co;
    co.title = d.task.shape.text + " · " + d.task.model + " (" + d.task.dsl + ", " + d.task.gpu + ")";
    std::string conv = convergence_svg(d.rounds, co);
    ChartOptions po = co;
    std::string prog = progression_svg(d.rounds, po);
    ChartOptions bo = co;
    bo.height = 320;
    std::string bott = bottleneck_svg(d.rounds, o.bottleneck_window, bo);
    write_text(o.out, d.slug + "/convergence.svg", conv, result.files);
    write_text(o.out, d.slug + "/progression.svg", prog, result.files);
    write_text(o.out, d.slug + "/bottlenecks.svg", bott, result.files);

    std::string rounds_csv = csv_row({"seq", "round", "iter", "kernel", "tflops", "decision", "bottleneck", "category",
                                      "expected_gain", "timestamp", "source", "idea"});
    std::string prog_csv =
        csv_row({"round", "iter", "kernel", "decision", "category", "bottleneck", "tflops", "best_so_far", "idea"});
    std::optional<double> best;
    for (size_t i = 0; i < d.records.size(); ++i) {
      const RoundRecord& r = d.records[i];
      const ChartRound& c = d.rounds[i];
      rounds_csv += csv_row({std::to_string(i), std::to_string(r.round), r.iter, r.kernel, num_or_empty(r.tflops),
                             c.decision, r.bottleneck, r.category, r.expected_gain, r.timestamp, r.source(), r.idea});
      if (c.decision == "KEEP" && r.tflops && c.iter != "iter000" && (!best || *r.tflops > *best)) best = r.tflops;
      if (r.round >= 1) {
        prog_csv += csv_row({std::to_string(r.round), r.iter, r.kernel, c.decision, r.category, r.bottleneck,
                             num_or_empty(r.tflops), num_or_empty(best), r.idea});
      }
    }
    write_text(o.out, d.slug + "/rounds.csv", rounds_csv, result.files);
    write_text(o.out, d.slug + "/progression.csv", prog_csv, result.files);

    int max_round = 0;
    for (const auto& c : d.rounds) max_round = std::max(max_round, c.round);
    int window = o.bottleneck_window > 0 ? o.bottleneck_window : std::max(1, (max_round + 14) / 15);
    std::string bn_csv = csv_row({"window_first", "window_last", "memory_bound", "compute_bound", "latency_bound",
                                  "launch_bound", "mixed", "other"});
    static const std::vector<std::string> classes = {"memory_bound", "compute_bound", "latency_bound", "launch_bound",
                                                     "mixed"};
    for (int lo = 1; lo <= max_round; lo += window) {
      int hi = std::min(max_round, lo + window - 1);
      std::vector<int> counts(classes.size() + 1, 0);
      for (const auto& c : d.rounds) {
        if (c.round < lo || c.round > hi) continue;
        auto it = std::find(classes.begin(), classes.end(), c.bottleneck);
        counts[it == classes.end() ? classes.size() : static_cast<size_t>(it - classes.begin())]++;
      }
      std::vector<std::string> row = {std::to_string(lo), std::to_string(hi)};
      for (int n : counts) row.push_back(std::to_string(n));
      bn_csv += csv_row(row);
    }
    write_text(o.out, d.slug + "/bottlenecks.csv", bn_csv, result.files);

    auto cell = [](const json& v, const char* f) {
      return v.is_number() ? fmt::format(fmt::runtime(f), v.get<double>()) : std::string("—");
    };
    const bool base_typed = s["baseline_source"] == "reported", best_typed = s["best_source"] == "reported";
    auto typed = [](bool t) { return t ? reported_mark_html() : std::string(); };
    summary_rows += fmt::format(
        "<tr><td><a class=\"key\" href=\"#{0}\">{1}</a><div class=\"muted small\">{2} · {3} · {4}</div></td>"
        "<td class=\"num\">{5}</td><td class=\"num\">{6}</td><td class=\"num\">{7}</td><td class=\"num\">{8}</td>"
        "<td class=\"num\">{9} / {10} / {11}</td><td class=\"num\">{12}</td></tr>",
        xml_escape(d.slug), xml_escape(d.task.shape.text), xml_escape(d.task.model), xml_escape(d.task.dsl),
        xml_escape(d.task.gpu), cell(s["baseline_tflops"], "{:.1f}") + typed(base_typed),
        cell(s["best_tflops"], "{:.1f}") + typed(best_typed),
        cell(s["ratio"], "{:.3f}×") + typed(s["ratio"].is_number() && (base_typed || best_typed)),
        s["rounds"].get<int>(), s["keep"].get<int>(), s["discard"].get<int>(), s["failed"].get<int>(),
        cell(s["median_seconds_per_round"], "{:.0f} s"));
    sections += fmt::format("<section id=\"{0}\"><h2>{1}</h2><div class=\"sub\">{2} · {3} · {4} · task_uid <code>{5}</code>"
                            "{6}</div>",
                            xml_escape(d.slug), xml_escape(d.task.shape.text), xml_escape(d.task.model),
                            xml_escape(d.task.dsl), xml_escape(d.task.gpu), xml_escape(d.uid),
                            d.mode.empty() ? "" : " · " + xml_escape(d.mode));
    sections += "<div class=\"chart\">" + conv + "</div>";
    sections += "<div class=\"chart\">" + prog + "</div>";
    sections += "<div class=\"chart\">" + bott + "</div>";
    sections += fmt::format("<div class=\"small\">Files: <a href=\"{0}/convergence.svg\">convergence.svg</a> · "
                            "<a href=\"{0}/progression.svg\">progression.svg</a> · "
                            "<a href=\"{0}/bottlenecks.svg\">bottlenecks.svg</a> · <a href=\"{0}/rounds.csv\">rounds.csv</a> · "
                            "<a href=\"{0}/progression.csv\">progression.csv</a> · "
                            "<a href=\"{0}/bottlenecks.csv\">bottlenecks.csv</a></div></section>",
                            xml_escape(d.slug));
  }
  write_text(o.out, "summary.csv", summary_csv, result.files);
  ChartOptions oo;
  oo.title = "Best so far relative to the baseline";
  std::string over = overlay_svg(overlay, oo);
  write_text(o.out, "convergence_all.svg", over, result.files);

  std::string html = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                     "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>croq report</title><style>";
  html += std::string(asset_text("app.css"));
  html += "</style></head><body><main><h1>croq report</h1>";
  html += fmt::format("<div class=\"sub\">{} tasks · generated {} by croq {} ({}) from {}</div>", tasks.size(),
                      now_iso8601(), build_info::k_version, build_info::git_sha(), xml_escape(ws.root().string()));
  html += "<h2>Summary</h2><div class=\"scroll\"><table class=\"grid\"><thead><tr><th>Task</th>"
          "<th class=\"num\">Baseline TFLOPS</th><th class=\"num\">Best TFLOPS</th><th class=\"num\">Best ÷ baseline</th>"
          "<th class=\"num\">Rounds</th><th class=\"num\">KEEP / DISCARD / failed</th><th class=\"num\">Time per round</th>"
          "</tr></thead><tbody>" +
          summary_rows + "</tbody></table></div>";
  if (!result.problems.empty()) {
    html += fmt::format("<h2>Files that could not be read, records not counted ({})</h2><ul class=\"problems\">", result.problems.size());
    for (const auto& p : result.problems) html += "<li class=\"mono small\">" + xml_escape(p) + "</li>";
    html += "</ul>";
  }
  html += "<div class=\"small\"><a href=\"summary.csv\">summary.csv</a> · <a href=\"convergence_all.svg\">convergence_all.svg</a></div>";
  html += "<h2>Convergence, all tasks</h2><div class=\"chart\">" + over + "</div>";
  html += sections;
  html += "</main></body></html>";
  write_text(o.out, "index.html", html, result.files);
  return result;
}

}  // namespace croq::web
