// The figures of the monitor and of `croq report`, drawn by croq as SVG (no plotting library, no
// JavaScript): the same functions render the dashboard's charts and the report's files, so a
// figure in a paper is the figure on the screen.
//  - convergence: TFLOPS per round; every measured round a point coloured by its decision,
//    failures as crosses on the axis, the best-so-far staircase, the baseline as a dashed line;
//  - progression: which idea category each round tried (one lane per category) and its outcome,
//    with a strip of the round's bottleneck underneath;
//  - bottleneck distribution: how many rounds of each window of the run were in each bottleneck
//    class (stacked bars);
//  - overlay: best-so-far relative to the baseline for several tasks on one axis.
// Each function returns a complete <svg> element with a viewBox, fixed colours and fonts, so
// the files stand alone. Text from ledgers is escaped.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "croq/ledger/records.hpp"
#include "croq/web/database.hpp"

namespace croq::web {

// One round as the charts see it.
struct ChartRound {
  int seq = 0;
  int round = 0;
  std::string iter;
  std::string kernel;
  std::optional<double> tflops;
  std::string decision;
  std::string bottleneck;
  std::string category;
  std::string idea;
  std::string timestamp;
  std::string source;  // "measured" or "reported" (a figure typed by hand or printed by the program); empty: unknown
};
std::vector<ChartRound> chart_rounds(const std::vector<RoundRow>& rows);
std::vector<ChartRound> chart_rounds(const std::vector<RoundRecord>& records);

struct ChartOptions {
  int width = 880;
  int height = 340;
  std::string title;       // drawn at the top when not empty
  std::string element_id;  // id attribute of the <svg>
  bool tooltips = true;    // a <title> per point (round, kernel, TFLOPS, decision, idea)
};

std::string convergence_svg(const std::vector<ChartRound>& rounds, const ChartOptions& options = {});
std::string progression_svg(const std::vector<ChartRound>& rounds, const ChartOptions& options = {});
// `window`: rounds per bar; 0 picks one giving at most 15 bars.
std::string bottleneck_svg(const std::vector<ChartRound>& rounds, int window = 0, const ChartOptions& options = {});

struct OverlaySeries {
  std::string label;
  std::vector<ChartRound> rounds;
};
std::string overlay_svg(const std::vector<OverlaySeries>& series, const ChartOptions& options = {});

// Best-so-far after each round: (round, best TFLOPS) at each improvement (KEEP above the best).
std::vector<std::pair<int, double>> best_so_far(const std::vector<ChartRound>& rounds);
// The baseline: the last BASELINE (or iter000) round with a figure; nullptr when none.
const ChartRound* baseline_round(const std::vector<ChartRound>& rounds);
std::optional<double> baseline_tflops(const std::vector<ChartRound>& rounds);

// " (reported)", marked up, after a figure croq did not measure (source: reported: typed by hand or
// printed by the program); the dashboard and the report put it beside such figures.
std::string reported_mark_html();

// Colours, shared with the dashboard's badges.
std::string decision_colour(const std::string& decision);
std::string bottleneck_colour(const std::string& bottleneck);

// Escapes & < > " ' for XML and HTML text and attributes.
std::string xml_escape(std::string_view text);

// "nice" axis ticks covering [lo, hi]: about `count` steps of 1, 2, 2.5 or 5 x 10^k; whole
// numbers only when `integers` (round numbers).
std::vector<double> nice_ticks(double lo, double hi, int count = 6, bool integers = false);

}  // namespace croq::web
