// SVG figures (charts.hpp).
#include "croq/web/charts.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "croq/util/text.hpp"

namespace croq::web {

namespace {

constexpr const char* k_font = "system-ui,-apple-system,Segoe UI,Roboto,Helvetica,Arial,sans-serif";
constexpr const char* k_grid = "#e4e8ec";
constexpr const char* k_axis = "#57606a";
constexpr const char* k_text = "#24292f";

const std::vector<std::string>& lane_categories() {
  static const std::vector<std::string> v = {"tiling", "pipeline", "memory", "compute", "misc"};
  return v;
}

const std::vector<std::string>& bottleneck_classes() {
  static const std::vector<std::string> v = {"memory_bound", "compute_bound", "latency_bound", "launch_bound", "mixed"};
  return v;
}

bool is_fail(const std::string& d) {
  return d == "COMPILE_FAIL" || d == "VERIFY_FAIL" || d == "RUNTIME_FAIL" || d == "SEGFAULT" || d == "HANG";
}

std::string num(double v) {
  if (std::fabs(v) >= 100) return fmt::format("{:.0f}", v);
  if (std::fabs(v) >= 10) return fmt::format("{:.1f}", v);
  if (std::fabs(v) >= 1) return fmt::format("{:.2f}", v);
  return fmt::format("{:.3g}", v);
}

std::string tick_label(double v) {
  if (std::fabs(v - std::round(v)) < 1e-9) return fmt::format("{:.0f}", v);
  return fmt::format("{:g}", v);
}

std::string open_svg(const ChartOptions& o, int height, const std::string& label) {
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" "
      "role=\"img\" aria-label=\"{2}\" font-family=\"{3}\" font-size=\"12\"",
      o.width, height, xml_escape(label), k_font);
  if (!o.element_id.empty()) s += fmt::format(" id=\"{}\"", xml_escape(o.element_id));
  s += ">";
  s += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>", o.width, height);
  if (!o.title.empty()) {
    s += fmt::format("<text x=\"{}\" y=\"18\" font-size=\"14\" font-weight=\"600\" fill=\"{}\">{}</text>", 12, k_text,
                     xml_escape(o.title));
  }
  return s;
}

std::string empty_note(int x, int y, const char* text) {
  return fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{}\">{}</text>", x, y, k_axis, text);
}

struct Frame {
  double x0, x1, y0, y1;  // plot area in pixels
  double xmin, xmax, ymin, ymax;
  double sx(double x) const { return x0 + (x - xmin) / (xmax - xmin) * (x1 - x0); }
  double sy(double y) const { return y1 - (y - ymin) / (ymax - ymin) * (y1 - y0); }
};

// Grid, ticks and axis labels.
std::string axes(const Frame& f, const std::vector<double>& xt, const std::vector<double>& yt, const std::string& xlabel,
                 const std::string& ylabel, const std::string& ysuffix = "") {
  std::string s;
  for (double y : yt) {
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\"/>", f.x0, f.sy(y), f.x1,
                     f.sy(y), k_grid);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"{}\">{}{}</text>", f.x0 - 6,
                     f.sy(y) + 4, k_axis, tick_label(y), ysuffix);
  }
  for (double x : xt) {
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"{3}\"/>", f.sx(x), f.y1,
                     f.y1 + 4, k_axis);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"{}\">{}</text>", f.sx(x), f.y1 + 17,
                     k_axis, tick_label(x));
  }
  s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\"/>", f.x0, f.y1, f.x1,
                   k_axis);
  s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"{3}\"/>", f.x0, f.y0, f.y1,
                   k_axis);
  if (!xlabel.empty()) {
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"{}\">{}</text>", (f.x0 + f.x1) / 2,
                     f.y1 + 33, k_axis, xml_escape(xlabel));
  }
  if (!ylabel.empty()) {
    double cy = (f.y0 + f.y1) / 2;
    s += fmt::format(
        "<text x=\"14\" y=\"{0:.1f}\" text-anchor=\"middle\" fill=\"{1}\" transform=\"rotate(-90 14 {0:.1f})\">{2}</text>",
        cy, k_axis, xml_escape(ylabel));
  }
  return s;
}

// A row of legend items starting at (x, y): coloured marks and labels.
struct LegendItem {
  std::string mark;  // "dot", "ring", "cross", "line", "dash", "box"
  std::string colour;
  std::string label;
};
double legend_item_width(const LegendItem& it) { return 22 + 7.2 * static_cast<double>(it.label.size()) + 16; }

// How many rows legend() needs between x and max_x.
int legend_rows(double x, const std::vector<LegendItem>& items, double max_x) {
  int rows = items.empty() ? 0 : 1;
  double cx = x;
  for (const auto& it : items) {
    double w = legend_item_width(it);
    if (cx + w > max_x && cx > x) {
      cx = x;
      ++rows;
    }
    cx += w;
  }
  return rows;
}

std::string legend(double x, double y, const std::vector<LegendItem>& items, double max_x) {
  std::string s;
  double cx = x;
  for (const auto& it : items) {
    double w = legend_item_width(it);
    if (cx + w > max_x && cx > x) {
      cx = x;
      y += 16;
    }
    if (it.mark == "dot") {
      s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/>", cx + 6, y - 4, it.colour);
    } else if (it.mark == "ring") {
      s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"#fff\" stroke=\"{}\" stroke-width=\"1.5\"/>",
                       cx + 6, y - 4, it.colour);
    } else if (it.mark == "cross") {
      s += fmt::format("<path d=\"M{0:.1f} {1:.1f}l6 6m0 -6l-6 6\" stroke=\"{2}\" stroke-width=\"1.6\"/>", cx + 3, y - 7,
                       it.colour);
    } else if (it.mark == "line") {
      s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2\"/>",
                       cx, y - 4, cx + 14, y - 4, it.colour);
    } else if (it.mark == "dash") {
      s += fmt::format(
          "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"1.5\" "
          "stroke-dasharray=\"4 3\"/>",
          cx, y - 4, cx + 14, y - 4, it.colour);
    } else {
      s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"{}\"/>", cx + 1, y - 9, it.colour);
    }
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\">{}</text>", cx + 18, y, k_text, xml_escape(it.label));
    cx += w;
  }
  return s;
}

std::string tooltip(const ChartRound& r) {
  std::string t = fmt::format("round {} · {} · {} · {}", r.round, r.kernel.empty() ? r.iter : r.kernel,
                              r.tflops ? num(*r.tflops) + " TFLOPS" + (r.source == "reported" ? " (reported)" : "")
                                       : std::string("no TFLOPS"),
                              r.decision);
  if (!r.bottleneck.empty()) t += " · " + r.bottleneck;
  if (!r.idea.empty()) t += "\n" + preview(r.idea, 200);
  return "<title>" + xml_escape(t) + "</title>";
}

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        // Control characters are not allowed in XML 1.0 text.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') out += ' ';
        else out += c;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int count, bool integers) {
  if (!(hi > lo)) hi = lo + 1;
  double raw = (hi - lo) / std::max(1, count);
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    double candidate = m * mag;
    if (integers && std::fabs(candidate - std::round(candidate)) > 1e-9) continue;
    if (candidate >= raw) {
      step = candidate;
      break;
    }
  }
  if (integers) step = std::max(1.0, std::round(step));
  std::vector<double> out;
  double start = std::floor(lo / step) * step;
  for (double v = start; v <= hi + step * 0.999 && out.size() < 50; v += step) {
    out.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
    if (v >= hi) break;
  }
  return out;
}

std::string decision_colour(const std::string& d) {
  if (d == "KEEP") return "#1a7f37";
  if (d == "DISCARD") return "#8c959f";
  if (d == "BASELINE") return "#0969da";
  if (d == "COMPILE_FAIL") return "#cf222e";
  if (d == "VERIFY_FAIL") return "#bc4c00";
  if (d == "RUNTIME_FAIL") return "#a40e26";
  if (d == "SEGFAULT") return "#8250df";
  if (d == "HANG") return "#9a6700";
  return "#57606a";
}

std::string bottleneck_colour(const std::string& b) {
  if (b == "memory_bound") return "#0969da";
  if (b == "compute_bound") return "#e16f24";
  if (b == "latency_bound") return "#8250df";
  if (b == "launch_bound") return "#2da44e";
  if (b == "mixed") return "#6e7781";
  return "#d0d7de";
}

std::vector<ChartRound> chart_rounds(const std::vector<RoundRow>& rows) {
  std::vector<ChartRound> out;
  out.reserve(rows.size());
  for (const auto& r : rows) {
    out.push_back({r.seq, r.round, r.iter, r.kernel, r.tflops, r.decision, r.bottleneck, r.category, r.idea, r.timestamp,
                   r.source});
  }
  return out;
}

std::vector<ChartRound> chart_rounds(const std::vector<RoundRecord>& records) {
  std::vector<ChartRound> out;
  out.reserve(records.size());
  int seq = 0;
  for (const auto& r : records) {
    out.push_back({seq++, r.round, r.iter, r.kernel, r.tflops, decision_name(r.decision), r.bottleneck, r.category,
                   r.idea, r.timestamp, r.source()});
  }
  return out;
}

const ChartRound* baseline_round(const std::vector<ChartRound>& rounds) {
  const ChartRound* b = nullptr;
  for (const auto& r : rounds) {
    if ((r.decision == "BASELINE" || r.iter == "iter000") && r.tflops) b = &r;
  }
  return b;
}

std::optional<double> baseline_tflops(const std::vector<ChartRound>& rounds) {
  const ChartRound* b = baseline_round(rounds);
  return b ? b->tflops : std::nullopt;
}

std::string reported_mark_html() {
  return " <span class=\"warn small\" title=\"not measured by croq: typed by hand or printed by the program "
         "(source: reported)\">(reported)</span>";
}

std::vector<std::pair<int, double>> best_so_far(const std::vector<ChartRound>& rounds) {
  std::vector<std::pair<int, double>> out;
  std::optional<double> best;
  for (const auto& r : rounds) {
    if (r.decision != "KEEP" || !r.tflops || r.iter == "iter000") continue;
    if (!best || *r.tflops > *best) {
      best = r.tflops;
      out.emplace_back(r.round, *r.tflops);
    }
  }
  return out;
}

std::string convergence_svg(const std::vector<ChartRound>& rounds, const ChartOptions& o) {
  const int H = o.height;
  std::string s = open_svg(o, H, o.title.empty() ? "convergence: TFLOPS per round" : o.title);
  const std::vector<LegendItem> items = {{"dot", decision_colour("KEEP"), "KEEP"},
                                         {"dot", decision_colour("DISCARD"), "DISCARD"},
                                         {"cross", decision_colour("COMPILE_FAIL"), "failed"},
                                         {"line", decision_colour("KEEP"), "best so far"},
                                         {"dash", decision_colour("BASELINE"), "baseline"}};
  const double legend_y = (o.title.empty() ? 10 : 30) + 12;
  const double top = legend_y + 16.0 * legend_rows(60, items, o.width - 18) + 4;
  Frame f{60, static_cast<double>(o.width) - 18, top, static_cast<double>(H) - 44, 0, 1, 0, 1};
  auto base = baseline_tflops(rounds);
  int max_round = 1;
  double max_y = 0;
  for (const auto& r : rounds) {
    max_round = std::max(max_round, r.round);
    if (r.tflops) max_y = std::max(max_y, *r.tflops);
  }
  if (base) max_y = std::max(max_y, *base);
  s += legend(f.x0, legend_y, items, f.x1);
  if (rounds.empty() || max_y <= 0) {
    s += axes(f, nice_ticks(0, 10), nice_ticks(0, 1, 4), "round", "TFLOPS");
    s += empty_note(static_cast<int>((f.x0 + f.x1) / 2), static_cast<int>((f.y0 + f.y1) / 2), "no measured rounds yet");
    return s + "</svg>";
  }
  auto xt = nice_ticks(0, max_round, std::max(3, (o.width - 80) / 90), true);
  auto yt = nice_ticks(0, max_y * 1.05, 6);
  f.xmax = std::max(xt.back(), static_cast<double>(max_round));
  f.ymax = std::max(yt.back(), max_y * 1.05);
  s += axes(f, xt, yt, "round", "TFLOPS");
  if (base) {
    s += fmt::format(
        "<line class=\"baseline\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" "
        "stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>",
        f.x0, f.sy(*base), f.x1, decision_colour("BASELINE"));
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"{}\">baseline {}</text>", f.x1 - 4,
                     f.sy(*base) - 5, decision_colour("BASELINE"), num(*base));
  }
  auto best = best_so_far(rounds);
  if (!best.empty()) {
    std::string d = fmt::format("M{:.1f} {:.1f}", f.sx(best[0].first), f.sy(best[0].second));
    for (size_t i = 1; i < best.size(); ++i) {
      d += fmt::format("H{:.1f}V{:.1f}", f.sx(best[i].first), f.sy(best[i].second));
    }
    d += fmt::format("H{:.1f}", f.sx(max_round));
    s += fmt::format("<path class=\"best\" d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>", d,
                     decision_colour("KEEP"));
  }
  const double r_pt = rounds.size() > 400 ? 2.5 : 3.5;
  for (const auto& r : rounds) {
    const double x = f.sx(r.round);
    if (r.tflops) {
      s += fmt::format(
          "<circle class=\"pt\" data-decision=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\" stroke=\"#fff\" "
          "stroke-width=\"0.6\">",
          xml_escape(r.decision), x, f.sy(*r.tflops), r_pt, decision_colour(r.decision));
      s += o.tooltips ? tooltip(r) : "";
      s += "</circle>";
    } else if (is_fail(r.decision)) {
      s += fmt::format("<path class=\"pt-fail\" data-decision=\"{}\" d=\"M{:.1f} {:.1f}l6 6m0 -6l-6 6\" stroke=\"{}\" "
                       "stroke-width=\"1.6\">",
                       xml_escape(r.decision), x - 3, f.y1 - 9, decision_colour(r.decision));
      s += o.tooltips ? tooltip(r) : "";
      s += "</path>";
    }
  }
  return s + "</svg>";
}

std::string progression_svg(const std::vector<ChartRound>& rounds, const ChartOptions& o) {
  std::vector<std::string> lanes = lane_categories();
  bool other = false;
  int max_round = 1;
  for (const auto& r : rounds) {
    if (r.round < 1) continue;
    max_round = std::max(max_round, r.round);
    if (std::find(lanes.begin(), lanes.end(), r.category) == lanes.end()) other = true;
  }
  if (other) lanes.push_back("other");
  std::vector<LegendItem> items = {{"dot", decision_colour("KEEP"), "KEEP"},
                                   {"ring", decision_colour("DISCARD"), "DISCARD"},
                                   {"cross", decision_colour("COMPILE_FAIL"), "failed"}};
  for (const auto& b : bottleneck_classes()) items.push_back({"box", bottleneck_colour(b), b});
  const double lane_h = 22;
  const double top = (o.title.empty() ? 10 : 30) + 8;
  const double strip_y = top + lane_h * static_cast<double>(lanes.size()) + 8;
  const int H = static_cast<int>(strip_y + 14 + 40 + 16.0 * legend_rows(80, items, o.width - 18) + 8);
  std::string s = open_svg(o, H, o.title.empty() ? "optimisation progression" : o.title);
  Frame f{80, static_cast<double>(o.width) - 18, top, strip_y + 14, 0.5, max_round + 0.5, 0, 1};
  auto xt = nice_ticks(0, max_round, std::max(3, (o.width - 100) / 90), true);
  for (size_t i = 0; i < lanes.size(); ++i) {
    double y = top + lane_h * (static_cast<double>(i) + 0.5);
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\"/>", f.x0, y, f.x1, y,
                     k_grid);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"{}\">{}</text>", f.x0 - 6, y + 4,
                     k_axis, lanes[i]);
  }
  s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"{}\">bottleneck</text>", f.x0 - 6,
                   strip_y + 11, k_axis);
  for (double x : xt) {
    if (x < 1 || x > max_round) continue;
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"{}\">{}</text>", f.sx(x),
                     strip_y + 30, k_axis, tick_label(x));
  }
  s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"{}\">round</text>", (f.x0 + f.x1) / 2,
                   strip_y + 45, k_axis);
  const double cell = std::max(1.0, (f.x1 - f.x0) / max_round);
  int drawn = 0;
  for (const auto& r : rounds) {
    if (r.round < 1) continue;
    ++drawn;
    double x = f.sx(r.round);
    auto it = std::find(lanes.begin(), lanes.end(), r.category);
    size_t lane = it == lanes.end() ? lanes.size() - 1 : static_cast<size_t>(it - lanes.begin());
    double y = top + lane_h * (static_cast<double>(lane) + 0.5);
    std::string tip = o.tooltips ? tooltip(r) : "";
    if (r.decision == "KEEP") {
      s += fmt::format("<circle class=\"pg\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\">{}</circle>", x, y,
                       decision_colour("KEEP"), tip);
    } else if (is_fail(r.decision)) {
      s += fmt::format("<path class=\"pg\" d=\"M{:.1f} {:.1f}l6 6m0 -6l-6 6\" stroke=\"{}\" stroke-width=\"1.5\">{}</path>",
                       x - 3, y - 3, decision_colour(r.decision), tip);
    } else {
      s += fmt::format(
          "<circle class=\"pg\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"#fff\" stroke=\"{}\" stroke-width=\"1.4\">{}</circle>",
          x, y, decision_colour(r.decision), tip);
    }
    s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"12\" fill=\"{}\"/>", x - cell / 2, strip_y,
                     cell, bottleneck_colour(r.bottleneck));
  }
  s += legend(f.x0, strip_y + 14 + 40 + 12, items, f.x1);
  if (drawn == 0) {
    s += empty_note(static_cast<int>((f.x0 + f.x1) / 2), static_cast<int>(top + lane_h), "no rounds yet");
  }
  return s + "</svg>";
}

std::string bottleneck_svg(const std::vector<ChartRound>& rounds, int window, const ChartOptions& o) {
  const int H = o.height;
  std::string s = open_svg(o, H, o.title.empty() ? "bottleneck distribution" : o.title);
  std::vector<std::string> classes = bottleneck_classes();
  classes.push_back("other");
  std::vector<LegendItem> items;
  for (const auto& b : classes) items.push_back({"box", bottleneck_colour(b), b});
  const double legend_y = (o.title.empty() ? 10 : 30) + 12;
  const double top = legend_y + 16.0 * legend_rows(60, items, o.width - 18) + 6;
  Frame f{60, static_cast<double>(o.width) - 18, top, static_cast<double>(H) - 44, 0, 1, 0, 100};
  s += legend(f.x0, legend_y, items, f.x1);
  int max_round = 0;
  for (const auto& r : rounds) {
    if (r.round >= 1) max_round = std::max(max_round, r.round);
  }
  if (max_round == 0) {
    s += axes(f, {}, {0, 25, 50, 75, 100}, "rounds", "share of rounds", "%");
    s += empty_note(static_cast<int>((f.x0 + f.x1) / 2), static_cast<int>((f.y0 + f.y1) / 2), "no rounds yet");
    return s + "</svg>";
  }
  if (window <= 0) window = std::max(1, (max_round + 14) / 15);
  const int bars = (max_round + window - 1) / window;
  std::vector<std::map<std::string, int>> counts(static_cast<size_t>(bars));
  for (const auto& r : rounds) {
    if (r.round < 1) continue;
    std::string b = std::find(classes.begin(), classes.end(), r.bottleneck) != classes.end() ? r.bottleneck : "other";
    counts[static_cast<size_t>((r.round - 1) / window)][b]++;
  }
  f.xmin = 0;
  f.xmax = bars;
  s += axes(f, {}, {0, 25, 50, 75, 100}, "rounds", "share of rounds", "%");
  const double slot = (f.x1 - f.x0) / bars;
  const double bw = std::max(2.0, slot * 0.8);
  for (int i = 0; i < bars; ++i) {
    int total = 0;
    for (const auto& [k, v] : counts[static_cast<size_t>(i)]) total += v;
    const int lo = i * window + 1, hi = std::min(max_round, (i + 1) * window);
    const std::string range = lo == hi ? std::to_string(lo) : fmt::format("{}–{}", lo, hi);
    double x = f.x0 + slot * i + (slot - bw) / 2;
    if (total > 0) {
      double acc = 0;
      for (const auto& b : classes) {
        auto it = counts[static_cast<size_t>(i)].find(b);
        if (it == counts[static_cast<size_t>(i)].end()) continue;
        double share = 100.0 * it->second / total;
        double y_top = f.sy(acc + share), y_bot = f.sy(acc);
        s += fmt::format(
            "<rect class=\"bn\" data-bottleneck=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
            "fill=\"{}\"><title>rounds {}: {} {} of {} ({:.0f}%)</title></rect>",
            b, x, y_top, bw, y_bot - y_top, bottleneck_colour(b), range, b, it->second, total, share);
        acc += share;
      }
    }
    // Label as many bars as fit: every `label_every`-th one.
    const double label_w = 7.0 * static_cast<double>(range.size()) + 8;
    const int label_every = std::max(1, static_cast<int>(std::ceil(label_w / slot)));
    if (i % label_every == 0) {
      s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"{}\" font-size=\"11\">{}</text>",
                       x + bw / 2, f.y1 + 16, k_axis, range);
    }
  }
  return s + "</svg>";
}

std::string overlay_svg(const std::vector<OverlaySeries>& series, const ChartOptions& o) {
  static const char* palette[] = {"#0969da", "#e16f24", "#1a7f37", "#8250df", "#cf222e",
                                  "#9a6700", "#1b7c83", "#bf3989", "#57606a", "#6639ba"};
  std::vector<LegendItem> items;
  for (size_t i = 0; i < series.size(); ++i) items.push_back({"line", palette[i % 10], series[i].label});
  const int H = o.height + 16 * legend_rows(60, items, o.width - 18) + 8;
  std::string s = open_svg(o, H, o.title.empty() ? "best so far relative to the baseline" : o.title);
  const double top = (o.title.empty() ? 10 : 30) + 8;
  Frame f{60, static_cast<double>(o.width) - 18, top, static_cast<double>(o.height) - 44, 0, 1, 0, 1};
  struct Line {
    std::vector<std::pair<int, double>> pts;
    int last = 0;
  };
  std::vector<Line> lines;
  int max_round = 1;
  double max_y = 1.0;
  for (const auto& se : series) {
    Line l;
    auto best = best_so_far(se.rounds);
    auto base = baseline_tflops(se.rounds);
    double ref = base ? *base : (best.empty() ? 1.0 : best.front().second);
    for (const auto& r : se.rounds) l.last = std::max(l.last, r.round);
    for (auto [x, y] : best) {
      l.pts.emplace_back(x, ref > 0 ? y / ref : 0);
      max_y = std::max(max_y, ref > 0 ? y / ref : 0);
    }
    max_round = std::max(max_round, l.last);
    lines.push_back(std::move(l));
  }
  auto xt = nice_ticks(0, max_round, std::max(3, (o.width - 80) / 90), true);
  auto yt = nice_ticks(0, max_y * 1.05, 6);
  f.xmax = std::max(xt.back(), static_cast<double>(max_round));
  f.ymax = std::max(yt.back(), max_y * 1.05);
  s += axes(f, xt, yt, "round", "best ÷ baseline", "×");
  s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" "
                   "stroke-dasharray=\"6 4\"/>",
                   f.x0, f.sy(1.0), f.x1, decision_colour("BASELINE"));
  for (size_t i = 0; i < lines.size(); ++i) {
    const char* c = palette[i % 10];
    const auto& l = lines[i];
    if (!l.pts.empty()) {
      std::string d = fmt::format("M{:.1f} {:.1f}", f.sx(l.pts[0].first), f.sy(l.pts[0].second));
      for (size_t k = 1; k < l.pts.size(); ++k) {
        d += fmt::format("H{:.1f}V{:.1f}", f.sx(l.pts[k].first), f.sy(l.pts[k].second));
      }
      d += fmt::format("H{:.1f}", f.sx(l.last));
      s += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\"><title>{}</title></path>", d, c,
                       xml_escape(series[i].label));
    }
  }
  s += legend(f.x0, o.height + 10, items, f.x1);
  return s + "</svg>";
}

}  // namespace croq::web
