// Dashboard pages and fragments (pages.hpp).
#include "croq/web/pages.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "croq/util/text.hpp"
#include "croq/util/units.hpp"
#include "croq/util/fs.hpp"
#include "croq/workspace/sources.hpp"
#include "croq/web/charts.hpp"

namespace croq::web {

namespace {

std::string esc(std::string_view s) { return xml_escape(s); }

// A long name (shape key) that may wrap after its underscores rather than anywhere.
std::string breakable(std::string_view s) {
  std::string out;
  for (char c : xml_escape(s)) {
    out += c;
    if (c == '_') out += "<wbr>";
  }
  return out;
}

std::string layout(const std::string& title, const std::string& page, const std::string& task_uid,
                   const std::string& main_html) {
  auto nav = [&](const char* href, const char* name, const char* id) {
    return fmt::format("<a href=\"{}\"{}>{}</a>", href, page == id ? " class=\"here\"" : "", name);
  };
  std::string s;
  s.reserve(main_html.size() + 2048);
  s += "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
       "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">";
  s += "<title>" + esc(title) + " · croq monitor</title>";
  s += "<link rel=\"icon\" href=\"/static/favicon.svg\" type=\"image/svg+xml\">"
       "<link rel=\"stylesheet\" href=\"/static/app.css\"></head>";
  s += fmt::format("<body data-page=\"{}\" data-task=\"{}\">", esc(page), esc(task_uid));
  s += "<header class=\"top\"><a class=\"brand\" href=\"/\">croq monitor</a><nav>";
  s += nav("/", "Tasks", "tasks");
  s += nav("/add", "Add task", "add");
  s += nav("/system", "System", "system");
  s += "</nav><span id=\"live\" class=\"live\">connecting</span></header><main>";
  s += main_html;
  s += "</main><script src=\"/static/app.js\" defer></script></body></html>";
  return s;
}

int state_rank(const std::string& s) {
  static const char* order[] = {"running", "stopping", "queued", "parked", "paused", "failed", "external", "done", "cancelled"};
  for (int i = 0; i < 9; ++i) {
    if (s == order[i]) return i;
  }
  return 9;
}

std::string badge_state(const std::string& state) {
  return fmt::format("<span class=\"badge s-{0}\">{0}</span>", esc(state));
}

std::string badge_decision(const std::string& d) {
  return fmt::format("<span class=\"badge d-{0}\">{0}</span>", esc(d));
}

std::string when(const std::string& ts) {
  if (ts.empty()) return "<span class=\"muted\">—</span>";
  return fmt::format("<span data-ts=\"{0}\" title=\"{0}\">{0}</span>", esc(ts));
}

const json& obj(const json& j, const char* k) {
  static const json null_value = nullptr;
  return j.is_object() && j.contains(k) ? j[k] : null_value;
}

// " (reported)" after a figure whose record is not croq's measurement (a figure typed by hand or
// printed by the program): `brief` is a record's summary in a task's stats ("best", "baseline").
std::string reported_mark(const json& brief) {
  return brief.is_object() && brief.value("source", "") == "reported" ? reported_mark_html() : std::string();
}

// The mark for a ratio: either of its figures not measured.
std::string reported_ratio_mark(const json& stats) {
  std::string m = reported_mark(obj(stats, "best"));
  return m.empty() ? reported_mark(obj(stats, "baseline")) : m;
}

std::string last_activity(const TaskRow& r) {
  const json& la = obj(r.stats, "last_activity");
  std::string ts = la.is_string() ? la.get<std::string>() : "";
  if (r.updated_at > ts) ts = r.updated_at;
  return ts;
}

std::string rounds_cell(const TaskRow& r) {
  int rounds = obj(r.stats, "rounds").is_number() ? obj(r.stats, "rounds").get<int>() : 0;
  int budget = 0;
  if (r.spec.contains("budgets") && r.spec["budgets"].is_object()) budget = r.spec["budgets"].value("rounds", 0);
  return budget > 0 ? fmt::format("{} / {}", rounds, budget) : std::to_string(rounds);
}

// The server that owns a task ("host:/root"), as shown: the host, the workspace beneath it.
std::string owner_html(const TaskRow& r, const std::string& this_owner) {
  if (r.owner.empty()) return "<span class=\"muted\" title=\"a row from before task owners\">unclaimed</span>";
  const size_t colon = r.owner.find(':');
  const std::string host = r.owner.substr(0, colon);
  const std::string where = colon == std::string::npos ? std::string() : r.owner.substr(colon + 1);
  return fmt::format("<span class=\"owner\" title=\"{}\">{}</span>{}<div class=\"muted small\">{}</div>", esc(r.owner),
                     esc(host), r.owner == this_owner ? " <span class=\"muted small\">(this server)</span>" : "",
                     esc(where));
}

std::string task_row_html(const TaskRow& r, const std::string& this_owner) {
  std::string s = "<tr>";
  s += fmt::format("<td><a class=\"key\" href=\"/tasks/{}\">{}</a><div class=\"muted small\">{} · {} · {}</div></td>",
                   esc(r.uid), breakable(r.shape_key), esc(r.model), esc(r.dsl), esc(r.gpu));
  s += "<td>" + badge_state(r.state) + "<div class=\"muted small hide-sm\">" + esc(preview(r.reason, 90)) + "</div></td>";
  s += "<td class=\"num\">" + show_tflops(obj(r.stats, "best_tflops")) + reported_mark(obj(r.stats, "best")) + "</td>";
  s += "<td class=\"num\">" + show_pct(obj(r.stats, "pct_of_baseline")) +
       (obj(r.stats, "pct_of_baseline").is_number() ? reported_ratio_mark(r.stats) : "") + "</td>";
  s += "<td class=\"num\">" + rounds_cell(r) + "</td>";
  s += "<td class=\"hide-sm\">" + when(last_activity(r)) + "</td>";
  s += "<td class=\"hide-sm\">" + esc(protocol_text(r.stats)) + "</td>";
  s += "<td class=\"hide-sm\">" + owner_html(r, this_owner) + "</td>";
  s += "</tr>";
  return s;
}

std::string action_buttons(const TaskRow& r) {
  const bool has_driver = r.spec.contains("driver") && r.spec["driver"].value("kind", "none") != "none";
  std::vector<std::pair<const char*, const char*>> b;
  const std::string& s = r.state;
  if (s == "running") b = {{"pause", "Pause"}, {"cancel", "Cancel"}};
  else if (s == "stopping") b = {{"cancel", "Cancel"}};
  else if (s == "queued") b = {{"pause", "Pause"}, {"cancel", "Cancel"}};
  else if (s == "parked") b = {{"retry", "Retry now"}, {"pause", "Pause"}, {"cancel", "Cancel"}};
  else if (s == "paused") b = {{"resume", "Resume"}, {"cancel", "Cancel"}};
  else if (s == "failed" || s == "cancelled" || s == "done") b = {{"retry", "Retry"}};
  else if (s == "external" && has_driver) b = {{"resume", "Start"}};
  std::string out = "<div class=\"actions\">";
  for (auto [action, label] : b) {
    out += fmt::format("<button type=\"button\" class=\"btn{}\" data-action=\"{}\" data-uid=\"{}\">{}</button>",
                       std::string(action) == "cancel" ? " danger" : "", action, esc(r.uid), label);
  }
  if (!has_driver) out += "<span class=\"muted small\">no driver: the monitor follows this task's ledger only</span>";
  out += "</div>";
  return out;
}

std::string card(const std::string& k, const std::string& v_html, bool small = false) {
  return fmt::format("<div class=\"card\"><div class=\"k\">{}</div><div class=\"v{}\">{}</div></div>", esc(k),
                     small ? " small" : "", v_html);
}

std::string decisions_text(const json& stats) {
  const json& d = obj(stats, "decisions");
  int keep = 0, discard = 0, fail = 0;
  if (d.is_object()) {
    for (auto it = d.begin(); it != d.end(); ++it) {
      int n = it.value().is_number() ? it.value().get<int>() : 0;
      if (it.key() == "KEEP") keep += n;
      else if (it.key() == "DISCARD") discard += n;
      else if (it.key() != "BASELINE") fail += n;
    }
  }
  return fmt::format("{} / {} / {}", keep, discard, fail);
}

std::string argv_text(const json& spec) {
  if (!spec.contains("driver") || !spec["driver"].is_object()) return "none";
  const json& d = spec["driver"];
  std::string kind = d.value("kind", "none");
  std::string out = kind;
  if (d.contains("argv") && d["argv"].is_array()) {
    for (const auto& a : d["argv"]) {
      std::string w = a.is_string() ? a.get<std::string>() : a.dump();
      bool plain = !w.empty() && w.find_first_of(" \t\"'\\") == std::string::npos;
      out += " " + (plain ? w : json(w).dump());
    }
  }
  return out;
}

std::vector<std::string> distinct(const std::vector<RoundRow>& rows, std::string RoundRow::*field) {
  std::vector<std::string> out;
  for (const auto& r : rows) {
    const std::string& v = r.*field;
    if (!v.empty() && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string options_html(const std::string& filter, const std::string& all_label, const std::vector<std::string>& values) {
  std::string s = fmt::format("<select data-filter=\"{}\" aria-label=\"{}\"><option value=\"\">{}</option>", filter,
                              filter, all_label);
  for (const auto& v : values) s += fmt::format("<option value=\"{0}\">{0}</option>", esc(v));
  return s + "</select>";
}

}  // namespace

std::string show_tflops(const json& v) {
  if (!v.is_number()) return "<span class=\"muted\">—</span>";
  const double x = v.get<double>();
  // A CPU's figures are fractions of a TFLOPS: shown in a unit that fits.
  if (x != 0 && std::fabs(x) < 1.0) return format_rate(x);
  return fmt::format("{:.1f}", x);
}

std::string show_pct(const json& v) {
  if (!v.is_number()) return "<span class=\"muted\">—</span>";
  return fmt::format("{:.1f} %", v.get<double>());
}

std::string show_duration(double s) {
  if (s < 90) return fmt::format("{:.0f} s", s);
  if (s < 5400) return fmt::format("{:.0f} min", s / 60);
  if (s < 172800) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} d", s / 86400);
}

std::string protocol_text(const json& stats) {
  const json& p = obj(stats, "protocol");
  int last_round = 0;
  const json& last = obj(stats, "last");
  if (last.is_object()) last_round = last.value("round", 0);
  int records = obj(stats, "records").is_number() ? obj(stats, "records").get<int>() : 0;
  std::string cp = p.is_object() ? p.value("checkpoint", "") : "";
  std::string iter = p.is_object() ? p.value("iter", "") : "";
  std::string step = p.is_object() ? p.value("step", "") : "";
  if (cp == "UNREADABLE") return "checkpoint unreadable";
  // The protocol engine's step, with the planned iteration while an idea is open.
  const bool open_idea = cp == "PLANNED" || cp == "IMPLEMENTING" || cp == "VERIFIED" || cp == "DRIFT";
  if (!step.empty() && step != "PREPARE") {
    std::string s = to_lower(step);
    if (step == "SHAPE_COMPLETE") s = "shape complete";
    if (step == "NEXT_SHAPE") s = "next shape";
    if (open_idea && !iter.empty()) s += " " + iter;
    if (cp == "DRIFT") s += " (drift)";
    return fmt::format("round {} · next: {}", last_round, s);
  }
  if (cp == "PLANNED") return "idea planned · " + iter;
  if (cp == "IMPLEMENTING") return "implementing · " + iter;
  if (cp == "VERIFIED") return "built, verified · " + iter;
  if (cp == "DRIFT") return "drift found · " + iter;
  if (records == 0) return "preparing";
  if (step == "PREPARE") return "preparing";
  if (last_round == 0) return "prepared";
  return fmt::format("round {} stored", last_round);
}

std::string fragment_task_rows(Monitor& m, const ListQuery& q) {
  std::vector<TaskRow> rows = m.db().tasks();
  std::stable_sort(rows.begin(), rows.end(), [](const TaskRow& a, const TaskRow& b) {
    int ra = state_rank(a.state), rb = state_rank(b.state);
    if (ra != rb) return ra < rb;
    return last_activity(a) > last_activity(b);
  });
  std::string s;
  s.reserve(rows.size() * 600);
  int shown = 0;
  for (const auto& r : rows) {
    if (!q.state.empty() && r.state != q.state) continue;
    s += task_row_html(r, m.owner());
    ++shown;
  }
  if (shown == 0) {
    s += "<tr><td colspan=\"8\" class=\"muted\">No tasks yet. <a href=\"/add\">Add one</a>, or start a task with "
         "croq's verbs in this workspace: the monitor finds it.</td></tr>";
  }
  return s;
}

std::string page_tasks(Monitor& m, const ListQuery& q) {
  std::vector<TaskRow> rows = m.db().tasks();
  std::map<std::string, int> counts;
  for (const auto& r : rows) counts[r.state]++;
  std::string main;
  main += "<h1>Tasks</h1>";
  main += fmt::format("<div class=\"sub\">{} · {} tasks</div>", esc(m.workspace().root().string()), rows.size());
  main += "<div class=\"filters\"><a href=\"/\">all</a>";
  for (const char* st : {"running", "queued", "parked", "paused", "failed", "done", "cancelled", "external"}) {
    auto it = counts.find(st);
    if (it == counts.end()) continue;
    main += fmt::format(" <a href=\"/?state={0}\">{1}</a> <span class=\"muted\">{2}</span>", st, badge_state(st), it->second);
  }
  main += "</div><div id=\"flash\" class=\"flash\"></div>";
  main += "<div class=\"scroll\"><table class=\"grid\" id=\"tasks\"><thead><tr><th>Task</th><th>State</th>"
          "<th class=\"num\">Best TFLOPS</th><th class=\"num\">% of baseline</th><th class=\"num\">Rounds</th>"
          "<th class=\"hide-sm\">Last activity</th><th class=\"hide-sm\">Protocol</th><th class=\"hide-sm\">Server</th>"
          "</tr></thead>"
          "<tbody id=\"task-rows\">";
  main += fragment_task_rows(m, q);
  main += "</tbody></table></div>";
  return layout("Tasks", "tasks", "", main);
}

std::string fragment_task_head(Monitor& m, const TaskRow& r) {
  json t = m.task_json(r);
  const json& st = r.stats;
  std::string s;
  s += "<h1>" + breakable(r.shape_key) + "</h1>";
  s += fmt::format("<div class=\"sub\">{} · {} · {} · mode {} · task_uid <code>{}</code> · {}</div>", esc(r.model),
                   esc(r.dsl), esc(r.gpu), esc(r.spec.value("mode", "")), esc(r.uid), esc(r.origin));
  s += "<div>" + badge_state(r.state) + " <span class=\"muted\">" + esc(r.reason) + "</span></div>";
  s += "<div class=\"small\" id=\"owner\">server " + owner_html(r, m.owner()) + "</div>";
  // The device and how it is measured, from the baseline's result (every ratio is against it). A
  // file that cannot be read is named on the page. Another server's files are on its machine.
  fs::path baseline_file;
  if (!m.owns(r)) {
    s += "<div class=\"small muted\" id=\"device\">the task's files, logs and children are on " +
         esc(r.owner.empty() ? std::string("the machine that holds it (not claimed yet)") : r.owner) +
         "; actions here are sent to that server as requests</div>";
  } else {
    try {
      TaskRef task = make_task(r.gpu, r.dsl, r.shape_key, r.model);
      baseline_file = m.workspace().baseline_result(task);
      if (auto text = read_file(baseline_file)) {
        auto b = try_parse_json(*text);
        if (!b || !b->is_object()) {
          s += "<div class=\"small warn\" id=\"device\">" + esc(m.workspace().display(baseline_file)) +
               " cannot be read: not a JSON object</div>";
        } else {
          const json dev = b->value("device", json::object());
          const json stat = b->value("statistics", json::object());
          std::string clock = dev.contains("sm_clock_mhz") && dev["sm_clock_mhz"].is_number()
                                  ? fmt::format(", SM clock {} MHz", dev["sm_clock_mhz"].get<double>())
                                  : "";
          std::string peak = dev.contains("peak_tflops") && dev["peak_tflops"].is_number() && dev["peak_tflops"].get<double>() > 0
                                 ? ", peak " + format_rate(dev["peak_tflops"].get<double>())
                                 : "";
          s += fmt::format("<div class=\"small muted\" id=\"device\">device <b>{}</b> ({}{}{}{}) · measured {} with warm-up {}, "
                           "L2 flush {}, {} repetitions, CV {:.2f} % · baseline {} {}</div>",
                           esc(dev.value("name", "?")), esc(dev.value("key", r.gpu)), esc(clock), esc(peak),
                           dev.value("driver", "").empty() ? "" : ", driver " + esc(dev.value("driver", "")),
                           esc(stat.value("method", "")), stat.value("warmup", 0), stat.value("l2_flush", false) ? "on" : "off",
                           stat.value("reps", 0), stat.value("cv", 0.0) * 100, esc(b->value("library", "")),
                           b->contains("tflops") && (*b)["tflops"].is_number() ? format_rate((*b)["tflops"].get<double>()) : "");
        }
      }
    } catch (const std::exception& e) {
      s += "<div class=\"small warn\" id=\"device\">" +
           esc(baseline_file.empty() ? std::string("the baseline's result") : m.workspace().display(baseline_file)) +
           " cannot be read: " + esc(e.what()) + "</div>";
    }
  }
  s += action_buttons(r);
  s += "<div class=\"cards\">";
  std::string best_kernel;
  if (obj(st, "best").is_object()) best_kernel = obj(st, "best").value("kernel", "");
  s += card("Best TFLOPS", show_tflops(obj(st, "best_tflops")) + reported_mark(obj(st, "best")) +
                               (best_kernel.empty() ? "" : "<div class=\"muted small mono\">" + esc(best_kernel) + "</div>"));
  s += card("Baseline TFLOPS", show_tflops(obj(st, "baseline_tflops")) + reported_mark(obj(st, "baseline")));
  s += card("% of baseline", show_pct(obj(st, "pct_of_baseline")) +
                                 (obj(st, "pct_of_baseline").is_number() ? reported_ratio_mark(st) : ""));
  s += card("Rounds", rounds_cell(r));
  s += card("KEEP / DISCARD / failed", decisions_text(st));
  s += card("Protocol", esc(protocol_text(st)), true);
  s += card("Runs · crashes", fmt::format("{} · {}", r.runs, r.crash_count));
  s += card("Running time", show_duration(t["run_seconds"].get<double>()));
  s += card("Device", esc(r.spec.value("device", "")));
  s += card("Last activity", when(last_activity(r)), true);
  s += "</div>";
  s += "<div class=\"small muted\">driver: <code>" + esc(argv_text(r.spec)) + "</code></div>";
  const json& p = obj(st, "protocol");
  if (p.is_object() && !p.value("next_action", "").empty()) {
    s += "<div class=\"small muted\">next protocol step: <code>" + esc(p.value("next_action", "")) + "</code></div>";
  }
  return s;
}

std::string fragment_rounds(const std::vector<RoundRow>& rows, const std::string& uid) {
  std::string s;
  s.reserve(rows.size() * 400);
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) {
    const RoundRow& r = *it;
    s += fmt::format("<tr data-decision=\"{}\" data-bottleneck=\"{}\" data-category=\"{}\">", esc(r.decision),
                     esc(r.bottleneck), esc(r.category));
    s += fmt::format("<td class=\"num\">{}</td>", r.round);
    const std::string kname = r.kernel.empty() ? r.iter : r.kernel;
    // The kernel links to its source and its diff against the base it was derived from.
    if (!uid.empty() && !r.kernel.empty() && r.kernel.rfind("iter000", 0) != 0) {
      s += fmt::format("<td class=\"mono\"><a href=\"/tasks/{}/source/{}\">{}</a></td>", esc(uid), esc(r.kernel), esc(kname));
    } else {
      s += "<td class=\"mono\">" + esc(kname) + "</td>";
    }
    s += "<td class=\"num\">" + (r.tflops ? show_tflops(*r.tflops) : std::string("—")) + "</td>";
    // Time and spread of the measurement, and the kernel's parameters, from the record itself.
    json rec = try_parse_json(r.record).value_or(json::object());
    const json meas = rec.is_object() && rec.contains("measurement") && rec["measurement"].is_object() ? rec["measurement"] : json::object();
    auto median = get_number(meas, "median_ms");
    auto spread = get_number(meas, "robust_cv");
    if (!spread) spread = get_number(meas, "cv");
    s += "<td class=\"num hide-sm\">" + (median ? format_ms(*median) : std::string("—")) + "</td>";
    s += "<td class=\"num hide-sm\">" + (spread ? fmt::format("{:.2f} %", *spread * 100) : std::string("—")) + "</td>";
    std::string params;
    if (rec.is_object() && rec.contains("params") && rec["params"].is_object()) {
      for (auto p = rec["params"].begin(); p != rec["params"].end(); ++p) {
        params += (params.empty() ? "" : " ") + p.key() + "=" + (p.value().is_string() ? p.value().get<std::string>() : p.value().dump());
      }
    }
    s += "<td class=\"mono small hide-sm\" title=\"" + esc(params) + "\">" + esc(preview(params, 60)) + "</td>";
    s += "<td>" + badge_decision(r.decision) + "</td>";
    s += fmt::format("<td class=\"b-{0} hide-sm\">{0}</td>", esc(r.bottleneck));
    s += "<td class=\"hide-sm\">" + esc(r.category) + "</td>";
    s += "<td class=\"idea\" title=\"" + esc(r.idea) + "\">" + esc(preview(r.idea, 160)) + "</td>";
    s += "</tr>";
  }
  return s;
}

std::string fragment_ideas(Monitor& m, const TaskRow& row) {
  RoundQuery q;
  q.newest_first = true;
  q.limit = 300;
  std::string s;
  int n = 0;
  for (const auto& r : m.db().rounds(row.uid, q)) {
    if (r.idea.empty()) continue;
    if (++n > 100) break;
    s += "<li><div class=\"meta\">";
    s += fmt::format("round {} · <span class=\"mono\">{}</span>", r.round, esc(r.kernel.empty() ? r.iter : r.kernel));
    if (!r.category.empty()) s += " · " + esc(r.category);
    if (!r.bottleneck.empty()) s += fmt::format(" · <span class=\"b-{0}\">{0}</span>", esc(r.bottleneck));
    if (!r.expected_gain.empty()) s += " · expected " + esc(r.expected_gain);
    s += " · " + badge_decision(r.decision);
    if (r.tflops) s += fmt::format(" {:.1f} TFLOPS", *r.tflops);
    s += "</div>" + esc(r.idea) + "</li>";
  }
  if (n == 0) s = "<li class=\"muted\">No ideas stored yet.</li>";
  return s;
}

std::optional<std::string> task_chart(Monitor& m, const TaskRow& row, const std::string& which, int width) {
  if (which != "convergence" && which != "progression" && which != "bottlenecks") return std::nullopt;
  std::vector<ChartRound> rounds = chart_rounds(m.db().rounds(row.uid));
  ChartOptions o;
  if (which == "convergence") {
    o.element_id = "convergence-svg";
    if (width > 0) {
      o.width = width;
      o.height = std::clamp(static_cast<int>(width * 0.42), 250, 340);
    }
    return convergence_svg(rounds, o);
  }
  o.width = width > 0 ? width : 600;
  if (which == "progression") return progression_svg(rounds, o);
  o.height = std::clamp(static_cast<int>(o.width * 0.5), 230, 300);
  return bottleneck_svg(rounds, 0, o);
}

std::string run_log_tail(const Workspace& ws, const TaskRow& row, int run, int lines) {
  if (run <= 0) run = row.runs;
  if (run <= 0) return {};
  TaskRef task = make_task(row.gpu, row.dsl, row.shape_key, row.model);
  fs::path p = run_log_path(ws, task, run);
  std::ifstream in(p, std::ios::binary | std::ios::ate);
  if (!in) return {};
  auto size = static_cast<uint64_t>(in.tellg());
  uint64_t window = std::min<uint64_t>(size, static_cast<uint64_t>(std::max(lines, 1)) * 400 + 4096);
  in.seekg(static_cast<std::streamoff>(size - window));
  std::string text(window, '\0');
  in.read(text.data(), static_cast<std::streamsize>(window));
  text.resize(static_cast<size_t>(in.gcount()));
  size_t pos = text.size();
  int n = 0;
  if (!text.empty() && text.back() == '\n') --pos;
  while (pos > 0) {
    size_t nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) {
      pos = window < size ? text.find('\n') + 1 : 0;  // drop a cut first line
      break;
    }
    if (++n >= lines) {
      pos = nl + 1;
      break;
    }
    pos = nl;
  }
  std::string out = text.substr(std::min(pos, text.size()));
  return is_valid_utf8(out) ? out : preview(out, out.size());
}

std::string page_task(Monitor& m, const TaskRow& r, bool all_rounds) {
  std::vector<RoundRow> rows = m.db().rounds(r.uid);
  std::string main;
  main += "<div id=\"task-head\">" + fragment_task_head(m, r) + "</div>";
  main += "<div id=\"flash\" class=\"flash\"></div>";
  main += "<h2>Convergence</h2><div class=\"chart\" id=\"convergence\">" + *task_chart(m, r, "convergence") + "</div>";
  main += "<div class=\"row2\"><div><h2>Bottleneck distribution</h2><div class=\"chart\" id=\"bottlenecks\">" +
          *task_chart(m, r, "bottlenecks") + "</div></div>";
  main += "<div><h2>Optimisation progression</h2><div class=\"chart\" id=\"progression\">" +
          *task_chart(m, r, "progression") + "</div></div></div>";
  const size_t limit = 500;
  std::vector<RoundRow> shown = rows;
  if (!all_rounds && shown.size() > limit) shown.erase(shown.begin(), shown.end() - static_cast<long>(limit));
  main += "<h2>Rounds <span class=\"muted small\" id=\"rounds-shown\"></span></h2>";
  if (shown.size() < rows.size()) {
    main += fmt::format("<div class=\"small muted\">The newest {} of {} rounds. <a href=\"?rounds=all\">Show all</a>"
                        " · <a href=\"/api/v1/tasks/{}/rounds\">JSON</a></div>",
                        shown.size(), rows.size(), esc(r.uid));
  }
  main += "<div class=\"filters\">";
  main += "<select data-filter=\"decision\" aria-label=\"decision\"><option value=\"\">all decisions</option>"
          "<option value=\"keep\">KEEP</option><option value=\"discard\">DISCARD</option>"
          "<option value=\"fail\">failures</option><option value=\"baseline\">BASELINE</option></select>";
  main += options_html("bottleneck", "all bottlenecks", distinct(rows, &RoundRow::bottleneck));
  main += options_html("category", "all categories", distinct(rows, &RoundRow::category));
  main += "<input type=\"search\" data-filter=\"text\" placeholder=\"search ideas and kernels\" aria-label=\"search\">";
  main += "</div>";
  main += fmt::format("<div class=\"scroll\"><table class=\"grid\" id=\"rounds\" data-last-seq=\"{}\"><thead><tr>"
                      "<th class=\"num\">Round</th><th>Kernel</th><th class=\"num\">TFLOPS</th>"
                      "<th class=\"num hide-sm\">Time</th><th class=\"num hide-sm\">Spread</th><th class=\"hide-sm\">Parameters</th>"
                      "<th>Decision</th>"
                      "<th class=\"hide-sm\">Bottleneck</th><th class=\"hide-sm\">Category</th><th>Idea</th>"
                      "</tr></thead><tbody>",
                      rows.empty() ? -1 : rows.back().seq);
  main += fragment_rounds(shown, r.uid);
  main += "</tbody></table></div>";
  main += "<div class=\"row2\"><div><h2>Idea log</h2><ul class=\"ideas\" id=\"ideas\">" + fragment_ideas(m, r) + "</ul></div>";
  main += fmt::format("<div><h2>Live log <span class=\"muted small\">run {}</span></h2>", r.runs);
  main += "<pre class=\"log\" id=\"log\">" +
          esc(m.owns(r) ? run_log_tail(m.workspace(), r, 0, 200)
                        : "The run logs are on " + (r.owner.empty() ? std::string("the machine that holds the task")
                                                                     : r.owner) + ".") +
          "</pre>";
  main += "<h2>History</h2><div class=\"scroll\"><table class=\"grid\"><tbody>";
  for (const auto& h : m.db().history(r.uid, 15)) {
    std::string detail = h["data"].value("reason", "");
    main += fmt::format("<tr><td class=\"small\">{}</td><td>{}</td><td class=\"small muted\">{}</td></tr>", when(h["at"]),
                        esc(h["kind"].get<std::string>()), esc(preview(detail, 120)));
  }
  main += "</tbody></table></div></div></div>";
  main += fmt::format("<footer>Files: <a href=\"/api/v1/tasks/{0}/files/logs\">logs</a> · "
                      "<a href=\"/api/v1/tasks/{0}/files/srcs\">srcs</a> · "
                      "<a href=\"/api/v1/tasks/{0}/files/memory\">memory</a> · "
                      "<a href=\"/api/v1/tasks/{0}\">task JSON</a></footer>",
                      esc(r.uid));
  return layout(r.shape_key, "task", r.uid, main);
}

std::string page_add(Monitor& m) {
  const auto& o = m.options();
  std::string main = "<h1>Add a task</h1>"
                     "<div class=\"sub\">The monitor writes the task's task_config.json (with a new task_uid) first, "
                     "then queues it. The driver runs as an argument vector: no shell.</div>"
                     "<div id=\"flash\" class=\"flash\"></div><div class=\"panel\"><form id=\"add-task\" class=\"add\">";
  auto field = [&](const std::string& name, const std::string& label, const std::string& input, const std::string& help,
                   bool wide = false) {
    main += fmt::format("<div class=\"field{}\"><label for=\"f-{}\">{}</label>{}{}</div>", wide ? " wide" : "", name, label,
                        input, help.empty() ? "" : "<div class=\"help\">" + help + "</div>");
  };
  field("shape_key", "Shape key",
        "<input id=\"f-shape_key\" name=\"shape_key\" required placeholder=\"matmul_f16fp32_4096x4096x4096\">",
        "&lt;operator&gt;_&lt;dtype&gt;_&lt;M&gt;x&lt;N&gt;x&lt;K&gt;, used exactly as given");
  field("dsl", "DSL",
        "<select id=\"f-dsl\" name=\"dsl\"><option>cuda</option><option>croqtile</option><option>triton</option>"
        "<option>cpp</option></select>",
        "");
  field("model", "Model (driver name)", "<input id=\"f-model\" name=\"model\" required value=\"search\">",
        "lowercase, digits, '-', '.', '_'");
  field("gpu", "GPU key",
        fmt::format("<input id=\"f-gpu\" name=\"gpu\" placeholder=\"{}\">",
                    esc(o.default_gpu.empty() ? "sm90_NVIDIA_H200 (cpu_x86_64 for cpp)" : o.default_gpu)),
        o.default_gpu.empty() ? "no GPU detected here: name one" : "empty: " + esc(o.default_gpu));
  field("device", "Device", "<input id=\"f-device\" name=\"device\" placeholder=\"0 (cpu for dsl cpp)\">",
        "one running task per device");
  field("mode", "Mode",
        "<select id=\"f-mode\" name=\"mode\"><option>from_scratch</option><option>from_current_best</option></select>", "");
  std::string kinds = "<option value=\"command\">command</option>";
  kinds += o.verbs.count("tune") ? "<option value=\"tune\">croq tune</option>"
                                 : "<option value=\"tune\" disabled>croq tune (not in this build)</option>";
  kinds += o.verbs.count("agent run") ? "<option value=\"agent\">croq agent run</option>"
                                      : "<option value=\"agent\" disabled>croq agent run (not in this build)</option>";
  kinds += "<option value=\"none\">none (follow the ledger only)</option>";
  field("kind", "Driver", "<select id=\"f-kind\" name=\"kind\">" + kinds + "</select>", "");
  field("priority", "Priority", "<input id=\"f-priority\" name=\"priority\" type=\"number\" value=\"0\">",
        "higher starts first");
  field("argv", "Command (one argument per line)",
        "<textarea id=\"f-argv\" name=\"argv\" placeholder=\"bash&#10;drive.sh&#10;{shape_key}\"></textarea>",
        "No shell: each line is one argument. Placeholders: {croq} {root} {gpu} {dsl} {shape_key} {model} {mode} "
        "{device} {task_uid} {rounds_budget}. For croq tune / agent: extra arguments.",
        true);
  field("cwd", "Working folder", "<input id=\"f-cwd\" name=\"cwd\" placeholder=\"(workspace root)\">",
        "relative to the workspace root");
  field("env", "Environment (KEY=VALUE per line)", "<textarea id=\"f-env\" name=\"env\"></textarea>",
        "added to CROQ_ROOT, CROQ_GPU, CROQ_TASK_UID, ... which every driver gets");
  field("rounds", "Budget: rounds", "<input id=\"f-rounds\" name=\"rounds\" type=\"number\" min=\"0\" value=\"150\">",
        "0: none");
  field("seconds", "Budget: seconds", "<input id=\"f-seconds\" name=\"seconds\" type=\"number\" min=\"0\" value=\"0\">",
        "running time, all runs; 0: none");
  field("max_restarts", "Restarts after crashes",
        "<input id=\"f-max_restarts\" name=\"max_restarts\" type=\"number\" min=\"0\" value=\"3\">", "");
  field("park_seconds", "Wait after a rate limit (s)",
        "<input id=\"f-park_seconds\" name=\"park_seconds\" type=\"number\" min=\"0\" value=\"900\">",
        "doubles per consecutive rate limit");
  field("restart_on_exit", "Keep it running",
        "<label class=\"small\"><input id=\"f-restart_on_exit\" name=\"restart_on_exit\" type=\"checkbox\"> start a new "
        "session when one ends before the budget</label>",
        "");
  main += "<div class=\"field wide\"><button class=\"btn primary\" type=\"submit\">Add task</button></div>";
  main += "</form></div>";
  return layout("Add task", "add", "", main);
}

std::string fragment_system(Monitor& m) {
  json sys = m.system_info();
  std::string s;
  const json& host = sys["host"];
  s += "<div class=\"cards\">";
  s += card("Host", esc(host.value("hostname", "?")), true);
  s += card("CPUs", std::to_string(host.value("cpus", 0)));
  if (host.contains("loadavg")) {
    s += card("Load (1/5/15 min)", fmt::format("{:.2f} {:.2f} {:.2f}", host["loadavg"][0].get<double>(),
                                               host["loadavg"][1].get<double>(), host["loadavg"][2].get<double>()), true);
  }
  if (host.contains("mem_total_mib")) {
    s += card("Memory available", fmt::format("{:.1f} of {:.1f} GiB", host.value("mem_available_mib", 0) / 1024.0,
                                              host.value("mem_total_mib", 0) / 1024.0), true);
  }
  s += card("Event clients", std::to_string(sys["events"].value("clients", 0)));
  s += "</div>";

  s += "<h2>GPUs</h2>";
  const json& gpus = sys["gpus"];
  if (gpus["list"].empty()) {
    std::string why = gpus.value("error", "");
    if (!why.empty() && why.back() != '.') why += '.';
    s += "<div class=\"panel muted\">No GPU detected" + (why.empty() ? std::string(".") : ": " + esc(why)) +
         " Tasks with device <code>cpu</code> (dsl cpp) still run.</div>";
  } else {
    s += "<div class=\"scroll\"><table class=\"grid\"><thead><tr><th>#</th><th>Name</th><th>Key</th>"
         "<th class=\"num\">Utilisation</th><th class=\"num\">Memory</th><th class=\"num\">Temp.</th>"
         "<th class=\"num\">SM clock</th></tr></thead><tbody>";
    for (const auto& g : gpus["list"]) {
      s += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"mono\">{}</td><td class=\"num\">{} %</td>"
                       "<td class=\"num\">{:.1f} / {:.1f} GiB</td><td class=\"num\">{} °C</td><td class=\"num\">{} MHz</td></tr>",
                       g.value("index", 0), esc(g.value("name", "")), esc(g.value("key", "")),
                       g.value("utilization_pct", 0), g.value("memory_used_mib", 0) / 1024.0,
                       g.value("memory_total_mib", 0) / 1024.0, g.value("temperature_c", 0), g.value("sm_clock_mhz", 0));
    }
    s += "</tbody></table></div>";
  }

  s += "<h2>GPU leases</h2>";
  if (sys["leases"].empty()) {
    s += "<div class=\"panel muted\">No GPU index to show (no GPU found, and no task names a GPU device).</div>";
  } else {
    s += "<div class=\"scroll\"><table class=\"grid\"><thead><tr><th>GPU</th><th>Lease</th><th>Holder</th></tr></thead><tbody>";
    for (const auto& l : sys["leases"]) {
      bool held = l.value("held", false);
      s += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"small mono\">{}</td></tr>", l.value("index", 0),
                       held ? "<span class=\"badge s-running\">held</span>" : "<span class=\"muted\">free</span>",
                       esc(held ? l.value("holder", "") : l.value("path", "")));
    }
    s += "</tbody></table></div>";
  }

  s += "<h2>Device slots</h2><div class=\"scroll\"><table class=\"grid\"><thead><tr><th>Device</th><th>Held by</th>"
       "<th>Since</th></tr></thead><tbody>";
  const json& devices = sys["scheduler"]["devices"];
  if (devices.empty()) s += "<tr><td colspan=\"3\" class=\"muted\">No task names a device yet.</td></tr>";
  for (auto it = devices.begin(); it != devices.end(); ++it) {
    if (it.value().is_null()) {
      s += fmt::format("<tr><td class=\"mono\">{}</td><td class=\"muted\">free</td><td></td></tr>", esc(it.key()));
    } else {
      s += fmt::format("<tr><td class=\"mono\">{}</td><td><a href=\"/tasks/{}\">{}</a> <span class=\"muted\">pid {}</span>"
                       "</td><td>{}</td></tr>",
                       esc(it.key()), esc(it.value().value("task", "")), esc(it.value().value("key", "")),
                       it.value().value("pid", 0), when(it.value().value("since", "")));
    }
  }
  s += "</tbody></table></div>";

  const json& server = sys["server"];
  const json& db = sys["database"];
  const json& sync = sys["sync"];
  s += "<h2>Server</h2><div class=\"cards\">";
  s += card("croq", esc(fmt::format("{} ({})", server.value("version", ""), server.value("commit", ""))), true);
  s += card("Listening on", esc(server.value("bind", "")), true);
  s += card("Authentication", esc(server.value("auth", "")), true);
  s += card("Scheduler", sys["scheduler"].value("enabled", false) ? "on" : "off");
  s += card("Up", show_duration(server.value("uptime_s", 0.0)));
  s += card("Workspace", esc(server.value("root", "")), true);
  s += card("Database", esc(db.value("location", "")), true);
  s += card("Schema", std::to_string(db.value("schema_version", 0)) + " · " + esc(db.value("journal_mode", "")));
  s += card("Indexed", fmt::format("{} tasks · {} rounds", db.value("tasks", 0), db.value("rounds", 0)), true);
  s += card("Last sync", fmt::format("{:.1f} ms · every {} ms", sync["last"].value("ms", 0.0), sync.value("poll_ms", 0)),
            true);
  s += "</div>";
  return s;
}

std::string page_system(Monitor& m) {
  std::string main = "<h1>System</h1><div id=\"system\">" + fragment_system(m) + "</div>";
  return layout("System", "system", "", main);
}

std::string page_message(const std::string& title, const std::string& message_html) {
  return "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>" +
         esc(title) +
         "</title><link rel=\"stylesheet\" href=\"/static/app.css\"></head><body><main><h1>" + esc(title) + "</h1><p>" +
         message_html + "</p></main></body></html>";
}

namespace {

// An ordered line diff (longest common subsequence), as unified-diff lines: ' ', '-', '+'.
std::vector<std::pair<char, std::string>> ordered_diff(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<uint32_t>> l(n + 1, std::vector<uint32_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) l[i][j] = a[i] == b[j] ? l[i + 1][j + 1] + 1 : std::max(l[i + 1][j], l[i][j + 1]);
  }
  std::vector<std::pair<char, std::string>> out;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) out.push_back({' ', a[i++]}), ++j;
    else if (j < m && (i == n || l[i][j + 1] >= l[i + 1][j])) out.push_back({'+', b[j++]});
    else out.push_back({'-', a[i++]});
  }
  return out;
}

}  // namespace

std::string page_source(Monitor& m, const TaskRow& r, const std::string& kernel) {
  const Workspace& ws = m.workspace();
  TaskRef task = make_task(r.gpu, r.dsl, r.shape_key, r.model);
  auto src = find_primary_source(ws, task, kernel);
  std::string main = fmt::format("<h1><a href=\"/tasks/{}\">{}</a> · <span class=\"mono\">{}</span></h1>", esc(r.uid),
                                 breakable(r.shape_key), esc(kernel));
  if (!m.owns(r)) {
    return layout(kernel, "task", r.uid,
                  main + "<p>The sources of this task are on " +
                      esc(r.owner.empty() ? std::string("the machine that holds it") : r.owner) + ".</p>");
  }
  if (!src) return layout(kernel, "task", r.uid, main + "<p>No source of this kernel in srcs/.</p>");
  const std::string text = read_file(*src).value_or("");
  // The base it was derived from: the record's `base` (its plan's), else none.
  std::string base;
  for (const auto& row : m.db().rounds(r.uid)) {
    if (row.kernel != kernel) continue;
    if (auto rec = try_parse_json(row.record); rec && rec->is_object()) base = get_string(*rec, "base").value_or("");
  }
  auto base_src = base.empty() ? std::nullopt : find_primary_source(ws, task, base);
  main += fmt::format("<div class=\"sub\">{}</div>", esc(ws.display(*src)));
  if (base_src) {
    auto lines = [](const std::string& t) {
      std::vector<std::string> v;
      for (const auto& l : split_lines(t)) v.push_back(l);
      if (v.size() > 4000) v.resize(4000);
      return v;
    };
    const auto diff = ordered_diff(lines(read_file(*base_src).value_or("")), lines(text));
    size_t added = 0, removed = 0;
    for (const auto& d : diff) added += d.first == '+', removed += d.first == '-';
    main += fmt::format("<h2>Diff against its base <span class=\"mono\">{}</span> <span class=\"muted small\">+{} −{}</span></h2>",
                        esc(base), added, removed);
    main += "<pre class=\"diff\" id=\"diff\">";
    // Changed lines with three lines of context around them.
    std::vector<bool> show(diff.size(), false);
    for (size_t i = 0; i < diff.size(); ++i) {
      if (diff[i].first == ' ') continue;
      for (size_t k = i >= 3 ? i - 3 : 0; k < std::min(diff.size(), i + 4); ++k) show[k] = true;
    }
    bool gap = false;
    for (size_t i = 0; i < diff.size(); ++i) {
      if (!show[i]) {
        gap = true;
        continue;
      }
      if (gap) main += "<span class=\"muted\">⋯</span>\n";
      gap = false;
      const char* cls = diff[i].first == '+' ? "add" : diff[i].first == '-' ? "del" : "ctx";
      main += fmt::format("<span class=\"{}\">{} {}</span>\n", cls, diff[i].first, esc(diff[i].second));
    }
    main += "</pre>";
  } else {
    main += "<p class=\"muted\">No base recorded for this kernel (the starting kernel, or a round stored without a plan).</p>";
  }
  main += "<h2>Source</h2><pre class=\"source\" id=\"source\">" + esc(text) + "</pre>";
  return layout(kernel, "task", r.uid, main);
}

}  // namespace croq::web
