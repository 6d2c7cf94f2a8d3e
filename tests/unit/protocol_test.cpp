// The protocol engine: the noise-aware decision, the round history the rules read, and the
// evidence-based guards of an enforced task.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "croq/util/hash.hpp"

#include "croq/ledger/ledger.hpp"
#include "croq/ledger/store.hpp"
#include "croq/measure/statistics.hpp"
#include "croq/protocol/protocol.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "support/test_support.hpp"

using namespace croq;
using croq::test::TempDir;

namespace {

PerfSample sample(double tflops, double cv, int reps = 20) {
  PerfSample s;
  s.tflops = tflops;
  s.cv = cv;
  s.reps = reps;
  s.source = "measured";
  return s;
}

RoundRecord rec(int round, const std::string& kernel, Decision d, double tflops, json extra = json::object()) {
  RoundRecord r;
  r.round = round;
  r.kernel = kernel;
  r.iter = kernel.substr(0, kernel.find('_'));
  r.decision = d;
  r.tflops = tflops;
  r.bottleneck = round == 0 ? "n/a" : "compute_bound";
  r.idea = "x";
  r.timestamp = "2026-11-29T00:00:" + std::to_string(10 + round) + ".000Z";
  r.extra = extra;
  return r;
}

std::string refusal_rule(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::refused) << e.what();
    return e.details().value("rule", "");
  }
  return "";
}

}  // namespace

TEST(Decide, KeepsOnlyAGainBeyondTheNoiseMargin) {
  DecisionRule rule;
  auto d = decide(sample(110, 0.01), sample(100, 0.01), rule, false);
  EXPECT_EQ(d.decision, Decision::KEEP) << d.reason;
  // 1 % gain with 1 % noise on both sides is within the margin (1.5 * sqrt(2) %).
  d = decide(sample(101, 0.01), sample(100, 0.01), rule, false);
  EXPECT_EQ(d.decision, Decision::DISCARD) << d.reason;
}

TEST(Decide, TiesAreDiscarded) {
  auto d = decide(sample(100, 0.0), sample(100, 0.0), DecisionRule{}, false);
  EXPECT_EQ(d.decision, Decision::DISCARD);
}

TEST(Decide, NoiseFloorAppliesToQuietMeasurements) {
  // CVs of 0 still leave a margin of 1.5 * sqrt(2) * 0.5 % = 1.06 %.
  auto d = decide(sample(101, 0.0), sample(100, 0.0), DecisionRule{}, false);
  EXPECT_EQ(d.decision, Decision::DISCARD);
  EXPECT_NEAR(d.margin, 0.0106, 1e-3);
  d = decide(sample(102, 0.0), sample(100, 0.0), DecisionRule{}, false);
  EXPECT_EQ(d.decision, Decision::KEEP);
}

// A short kernel measured in three processes: the noise is the spread of the processes' TFLOPS
// (or the median's standard error), not the per-launch CV. The H200 case: +4.85 % at
// 4096x1024x1024 with a CV of 2.4 % on both sides was discarded under a 5.2 % margin.
TEST(Decide, AShortKernelsNoiseIsTheSpreadOfItsProcessesNotItsPerLaunchCv) {
  auto doc = [](double tflops, std::vector<double> runs) {
    json m = {{"tflops", tflops}, {"source", "measured"}, {"timing", {{"median_ms", 0.019}, {"cv", 0.024}, {"reps", 500}}}};
    if (!runs.empty()) {
      m["runs"] = json::array();
      for (double r : runs) m["runs"].push_back({{"tflops", r}});
    }
    return m;
  };
  PerfSample cand = PerfSample::from_measurement(doc(473.4, {471.9, 473.4, 474.6}));
  PerfSample best = PerfSample::from_measurement(doc(451.5, {450.9, 451.5, 452.7}));
  EXPECT_NEAR(cand.runs_sd, 0.0029, 0.0005);
  EXPECT_TRUE(cand.to_json().contains("runs_sd"));
  auto d = decide(cand, best, DecisionRule{}, false);
  EXPECT_EQ(d.decision, Decision::KEEP) << d.reason;
  EXPECT_NEAR(d.margin, 0.0106, 1e-3) << "the floor: the processes agree within 0.3 %";

  // One process each: the per-launch CV is all there is, and the gain is within it.
  d = decide(PerfSample::from_measurement(doc(473.4, {})), PerfSample::from_measurement(doc(451.5, {})),
             DecisionRule{}, false);
  EXPECT_EQ(d.decision, Decision::DISCARD) << d.reason;
  EXPECT_GT(d.margin, 0.05);

  // Processes that disagree widen the margin.
  d = decide(PerfSample::from_measurement(doc(473.4, {440.0, 473.4, 500.0})), best, DecisionRule{}, false);
  EXPECT_EQ(d.decision, Decision::DISCARD) << d.reason;
}

// The H200 case: the default kernel at 12288x8192x12288 measured 738.9 TFLOPS with 36 launches of
// 5-8.5 ms among 500 of 3.35 ms (CV 16 %); a +4.7 % candidate was discarded under a 25 % margin.
TEST(Decide, AFewStrayLaunchesOfTheBestDoNotWidenTheMargin) {
  auto doc = [](double tflops, double median_ms, bool stray, bool with_samples) {
    std::vector<double> v;
    for (int i = 0; i < 464; ++i) v.push_back(median_ms * (0.99 + 0.02 * (i % 10) / 9.0));
    for (int i = 0; i < 36; ++i) v.push_back(stray ? 5.0 + 3.5 * i / 35.0 : median_ms);
    SampleSummary s = summarize(v);
    json t = {{"median_ms", s.median}, {"cv", s.cv}, {"reps", s.n}};
    if (with_samples) t["samples_ms"] = v;
    return json{{"tflops", tflops}, {"source", "measured"}, {"timing", t}};
  };
  PerfSample best = PerfSample::from_measurement(doc(738.9, 3.348, true, true));
  PerfSample cand = PerfSample::from_measurement(doc(773.9, 3.197, false, true));
  EXPECT_GT(best.cv, 0.10);
  EXPECT_LT(best.robust_cv, 0.01);
  auto d = decide(cand, best, DecisionRule{}, false);
  EXPECT_EQ(d.decision, Decision::KEEP) << d.reason;
  EXPECT_LT(d.margin, 0.02);
  // A figure that says its robust spread is used as it is.
  json with_field = doc(738.9, 3.348, true, false);
  with_field["timing"]["robust_cv"] = 0.004;
  EXPECT_DOUBLE_EQ(PerfSample::from_measurement(with_field).robust_cv, 0.004);
  // Without samples or the field only the plain CV is known, and the gain is within it.
  d = decide(PerfSample::from_measurement(doc(773.9, 3.197, false, false)),
             PerfSample::from_measurement(doc(738.9, 3.348, true, false)), DecisionRule{}, false);
  EXPECT_EQ(d.decision, Decision::DISCARD) << d.reason;
  EXPECT_GT(d.margin, 0.2);
  // The best as the ledger holds it: its record's measurement carries the robust spread.
  RoundRecord r = rec(0, "iter001_default", Decision::KEEP, 738.9,
                      {{"measurement", {{"cv", 0.164}, {"robust_cv", 0.004}, {"reps", 500}, {"median_ms", 3.348}}}});
  auto from_ledger = PerfSample::from_record(r);
  ASSERT_TRUE(from_ledger);
  EXPECT_DOUBLE_EQ(from_ledger->robust_cv, 0.004);
  EXPECT_EQ(decide(cand, *from_ledger, DecisionRule{}, false).decision, Decision::KEEP);
}

// An enforced task decides by protocol.json's rule only where it is stricter than croq's: a rule
// edited to k -1000, no noise floor and no re-runs (a 5 % slower kernel was kept as a measured KEEP)
// is read as croq's; stricter values (the tests' raised floor, a lower suspicious gain, no close
// calls) stay. An advisory task has no guards and reads the file as it is.
TEST(Decide, AnEnforcedTasksRuleIsNeverLooserThanCroqs) {
  const DecisionRule d;
  json loose = {{"schema", k_protocol_schema}, {"mode", "enforced"},
                {"decision_rule",
                 {{"k", -1000}, {"noise_floor", 0}, {"paired_floor", -1}, {"suspicious_gain", 1000},
                  {"suspicious_loss", 1e308 * 10}, {"pairs", 1}, {"min_reps", 1}}}};
  const DecisionRule r = ProtocolConfig::from_json(loose).rule;
  EXPECT_EQ(r.k, d.k);
  EXPECT_EQ(r.noise_floor, d.noise_floor);
  EXPECT_EQ(r.paired_floor, d.paired_floor);
  EXPECT_EQ(r.suspicious_gain, d.suspicious_gain);
  EXPECT_EQ(r.suspicious_loss, d.suspicious_loss);
  EXPECT_EQ(r.pairs, d.pairs);
  EXPECT_EQ(r.min_reps, d.min_reps);
  // The slower kernel of the attack: DISCARD under the rule read.
  EXPECT_EQ(decide(sample(41.3, 0.01), sample(43.5, 0.01), r, false).decision, Decision::DISCARD);
  json strict = {{"schema", k_protocol_schema}, {"mode", "enforced"},
                 {"decision_rule", {{"noise_floor", 0.5}, {"suspicious_gain", 0.001}, {"pairs", 0}, {"k", 3}}}};
  const DecisionRule s = ProtocolConfig::from_json(strict).rule;
  EXPECT_EQ(s.noise_floor, 0.5);
  EXPECT_EQ(s.suspicious_gain, 0.001);
  EXPECT_EQ(s.pairs, 0);
  EXPECT_EQ(s.k, 3);
  loose["mode"] = "advisory";
  EXPECT_EQ(ProtocolConfig::from_json(loose).rule.k, -1000);
}

TEST(Decide, SuspiciousJumpsNeedARerun) {
  auto d = decide(sample(160, 0.01), sample(100, 0.01), DecisionRule{}, false);
  EXPECT_TRUE(d.needs_rerun);
  EXPECT_EQ(d.decision, Decision::DISCARD);
  d = decide(sample(40, 0.01), sample(100, 0.01), DecisionRule{}, false);
  EXPECT_TRUE(d.needs_rerun);
  d = decide(sample(160, 0.01), sample(100, 0.01), DecisionRule{}, true);
  EXPECT_FALSE(d.needs_rerun);
  EXPECT_EQ(d.decision, Decision::KEEP);
}

TEST(Decide, ACloseCallIsSettledOnBackToBackPairs) {
  DecisionRule rule;
  // +0.9 % against two quiet measurements: inside the floored margin (1.06 %), above 0.3 %.
  auto d = decide(sample(100.9, 0.001), sample(100, 0.001), rule, false);
  EXPECT_EQ(d.decision, Decision::DISCARD);
  EXPECT_TRUE(d.needs_pairs) << d.reason;
  // Below the paired margin there is nothing to settle; beyond the margin it is a plain KEEP.
  EXPECT_FALSE(decide(sample(100.2, 0.001), sample(100, 0.001), rule, false).needs_pairs);
  EXPECT_FALSE(decide(sample(97, 0.001), sample(100, 0.001), rule, false).needs_pairs);
  d = decide(sample(102, 0.001), sample(100, 0.001), rule, false);
  EXPECT_EQ(d.decision, Decision::KEEP);
  EXPECT_FALSE(d.needs_pairs);
  rule.pairs = 0;  // close calls switched off
  EXPECT_FALSE(decide(sample(100.9, 0.001), sample(100, 0.001), rule, false).needs_pairs);
}

// Pairs of (candidate, best) TFLOPS, without their files.
std::vector<MeasuredPair> pairs(std::initializer_list<std::pair<double, double>> values) {
  std::vector<MeasuredPair> out;
  for (const auto& [candidate, best] : values) out.push_back(MeasuredPair{candidate, best, {}, {}});
  return out;
}

TEST(Decide, PairsKeepOnlyWhenEveryPairFavoursTheCandidate) {
  DecisionRule rule;
  auto d = decide_pairs(pairs({{100.9, 100}, {101.0, 100.2}}), rule);
  EXPECT_TRUE(d.needs_pairs) << "two of three pairs";
  EXPECT_EQ(d.decision, Decision::DISCARD);
  d = decide_pairs(pairs({{100.9, 100}, {101.0, 100.2}, {100.5, 99.7}}), rule);
  EXPECT_EQ(d.decision, Decision::KEEP) << d.reason;
  EXPECT_NEAR(d.gain, 100.5 / 99.7 - 1, 1e-9);  // the median ratio (1.009, 1.00798, 1.00802)
  // One pair against the candidate: DISCARD, however large the others.
  d = decide_pairs(pairs({{103, 100}, {103, 100}, {99.9, 100}}), rule);
  EXPECT_EQ(d.decision, Decision::DISCARD);
  EXPECT_FALSE(d.needs_pairs);
  // Every pair above 1 but by less than the paired floor's margin (0.3 %).
  EXPECT_EQ(decide_pairs(pairs({{100.1, 100}, {100.2, 100}, {100.15, 100}}), rule).decision, Decision::DISCARD);
  // Ratios that scatter: the standard error, not the floor, sets the margin.
  d = decide_pairs(pairs({{100.4, 100}, {104, 100}, {100.5, 100}}), rule);
  EXPECT_GT(d.margin, 1.5 * 0.002);
  EXPECT_EQ(d.decision, Decision::DISCARD) << d.reason;
}

TEST(Decide, PairsAreMeasuredInAbbaOrder) {
  using V = std::vector<std::string>;
  // After the candidate's own measurement: (c0, B), (B, C), (C, B).
  EXPECT_EQ(pair_order(0, 3), (V{"best", "best", "candidate", "candidate", "best"}));
  EXPECT_EQ(pair_order(1, 3), (V{"best", "candidate", "candidate", "best"}));
  EXPECT_EQ(pair_order(3, 3), V{});
}

TEST(Decide, NeverKeepsOnASingleSample) {
  auto d = decide(sample(150, 0.0, 1), sample(100, 0.01), DecisionRule{}, true);
  EXPECT_EQ(d.decision, Decision::DISCARD);
  EXPECT_NE(d.reason.find("repetition"), std::string::npos);
}

TEST(IdeaPlan, CombinationKeyIgnoresCaseSpacingAndParameterOrder) {
  IdeaPlan a, b;
  a.base = b.base = "iter003_x";
  a.params = {{"BM", "128"}, {"STAGES", "4"}};
  b.params = {{"stages", "4"}, {"bm", "128"}};
  a.structural = "Switch to  1p2c warp-specialisation!";
  b.structural = "switch to 1p2c warp-specialisation";
  EXPECT_EQ(a.combination_key(), b.combination_key());
  b.params["bm"] = "256";
  EXPECT_NE(a.combination_key(), b.combination_key());
}

TEST(History, ActiveBasesAreTheBestOfTwoStructures) {
  std::vector<RoundRecord> rs;
  rs.push_back(rec(0, "iter001_start", Decision::KEEP, 10));
  rs.push_back(rec(1, "iter002_vec8", Decision::KEEP, 12, {{"base", "iter001_start"}, {"params", {{"VEC", "8"}}}}));
  rs.push_back(rec(2, "iter003_bm128", Decision::KEEP, 11,
                   {{"base", "iter002_vec8"}, {"params", {{"BM", "128"}}}, {"structural", "change BM 64->128"}}));
  rs.push_back(rec(3, "iter004_nr32", Decision::KEEP, 11.5, {{"base", "iter003_bm128"}, {"params", {{"NR", "32"}}}}));
  rs.push_back(rec(4, "iter005_bk256", Decision::KEEP, 9,
                   {{"base", "iter002_vec8"}, {"params", {{"BK", "256"}}}, {"structural", "change BK"}}));
  History h = History::from_records(rs);
  auto bases = h.active_bases();
  ASSERT_EQ(bases.size(), 2u);
  EXPECT_EQ(bases[0].kernel, "iter002_vec8");
  EXPECT_EQ(bases[1].kernel, "iter004_nr32");  // best of the BM=128 structure
  EXPECT_EQ(h.structure_of("iter004_nr32"), h.structure_of("iter003_bm128"));
  EXPECT_NE(h.structure_of("iter003_bm128"), h.structure_of("iter002_vec8"));
}

TEST(History, CountsMacroStreakAndDiscardsPerBase) {
  std::vector<RoundRecord> rs;
  rs.push_back(rec(0, "iter001_start", Decision::KEEP, 10));
  for (int i = 1; i <= 7; ++i) {
    rs.push_back(rec(i, "iter00" + std::to_string(i + 1) + "_m" + std::to_string(i), Decision::DISCARD, 9,
                     {{"base", "iter001_start"}, {"params", {{"VEC", std::to_string(i)}}}}));
  }
  History h = History::from_records(rs);
  EXPECT_EQ(h.macro_streak(), 7);
  EXPECT_EQ(h.discard_streak(), 7);
  auto bases = h.active_bases();
  ASSERT_EQ(bases.size(), 1u);
  EXPECT_EQ(bases[0].discard_streak, 7);
  EXPECT_FALSE(bases[0].streak_since.empty());
  IdeaPlan p;
  p.base = "iter001_start";
  p.params = {{"VEC", "3"}};
  EXPECT_TRUE(h.tried(p.combination_key()));
}

class EnforcedTask : public ::testing::Test {
 protected:
  void SetUp() override {
    ws = std::make_unique<Workspace>(dir.path());
    task = make_task("cpu_x86_64", "cpp", "matmul_f32_256x256x256", "test");
    ProtocolConfig cfg;
    cfg.enforced = true;
    ensure_dir(ws->kind_dir(task, ArtifactKind::logs));
    write_protocol(*ws, task, cfg);
  }
  void store(const RoundRecord& r) {
    Ledger l(*ws, task);
    StoreOptions options;
    options.auto_round = false;
    l.store(r, options, std::chrono::milliseconds(1000));
  }
  void prepared() {
    store(rec(0, "iter000_openblas", Decision::BASELINE, 50));
    store(rec(0, "iter001_start", Decision::KEEP, 10));
  }
  Checkpoint plan(const std::string& iter, const std::string& base, json extra = json::object()) {
    Checkpoint cp;
    cp.iter = iter;
    cp.base = base;
    cp.bottleneck = "compute_bound";
    cp.idea = "widen vectors";
    cp.created_at = cp.updated_at = "2026-11-29T01:00:00.000Z";
    cp.extra = extra;
    return cp;
  }
  // The plan for `iter` on `base`, and a build of `kernel` recorded since.
  void planned_build(const std::string& iter, const std::string& kernel, const std::string& base = "iter001_start") {
    write_checkpoint(*ws, task, plan(iter, base));
    const fs::path f = ws->kind_dir(task, ArtifactKind::perf) / ("build_" + iter + ".json");
    atomic_write(f, "{}");
    record_evidence(*ws, task, EvidenceKind::build, kernel, f, {{"verdict", "OK"}});
  }
  // A passing measurement of `kernel` at `tflops` written to perf/<name> and recorded as evidence:
  // its document and its file's hash.
  std::pair<json, std::string> measured(const std::string& kernel, const std::string& name, double tflops) {
    const fs::path f = ws->kind_dir(task, ArtifactKind::perf) / name;
    json m = {{"verdict", "PASS"}, {"tflops", tflops}, {"timing", {{"median_ms", 1.0}, {"cv", 0.001}, {"reps", 50}}}};
    atomic_write(f, m.dump());
    record_evidence(*ws, task, EvidenceKind::measure, kernel, f, {{"verdict", "PASS"}, {"tflops", tflops}});
    return {m, sha256_file(f)};
  }
  void profile_evidence(const std::string& kernel, const std::string& bottleneck = "compute_bound") {
    fs::path f = ws->kind_dir(task, ArtifactKind::perf) / ("prof_" + kernel + ".json");
    atomic_write(f, "{}");
    record_evidence(*ws, task, EvidenceKind::profile, kernel, f, {{"bottleneck", bottleneck}});
  }
  TempDir dir;
  std::unique_ptr<Workspace> ws;
  TaskRef task;
};

TEST_F(EnforcedTask, IdeaIsRefusedBeforePrepareAndWithoutAProfile) {
  EXPECT_EQ(refusal_rule([&] { guard_idea(*ws, task, plan("iter002", "iter001_start")); }), "prepare_first");
  prepared();
  EXPECT_EQ(refusal_rule([&] { guard_idea(*ws, task, plan("iter002", "iter001_start")); }), "profile_before_idea");
  profile_evidence("iter001_start");
  EXPECT_EQ(refusal_rule([&] { guard_idea(*ws, task, plan("iter002", "iter001_start")); }), "");
}

TEST_F(EnforcedTask, IdeaMustDeriveFromAnActiveBaseAndMatchTheProfile) {
  prepared();
  profile_evidence("iter001_start", "memory_bound");
  EXPECT_EQ(refusal_rule([&] { guard_idea(*ws, task, plan("iter002", "iter009_nope")); }), "hill_climb_from_active_bases");
  EXPECT_EQ(refusal_rule([&] { guard_idea(*ws, task, plan("iter002", "iter001_start")); }), "bottleneck_from_profile");
}

TEST_F(EnforcedTask, RepeatsAndLongMacroStreaksAreRefused) {
  prepared();
  store(rec(1, "iter002_v8", Decision::DISCARD, 9, {{"base", "iter001_start"}, {"params", {{"VEC", "8"}}}}));
  profile_evidence("iter001_start");
  EXPECT_EQ(refusal_rule([&] { guard_idea(*ws, task, plan("iter003", "iter001_start", {{"params", {{"VEC", "8"}}}})); }),
            "no_repeat");
  store(rec(2, "iter003_v16", Decision::DISCARD, 9, {{"base", "iter001_start"}, {"params", {{"VEC", "16"}}}}));
  EXPECT_EQ(refusal_rule([&] { guard_idea(*ws, task, plan("iter004", "iter001_start", {{"params", {{"VEC", "4"}}}})); }),
            "structural_after_two_macro");
  EXPECT_EQ(refusal_rule([&] {
              guard_idea(*ws, task,
                         plan("iter004", "iter001_start", {{"params", {{"BM", "128"}}}, {"structural", "larger row blocks"}}));
            }),
            "");
}

TEST_F(EnforcedTask, AStartingKernelStoredAsRoundOneIsNotAMacroChange) {
  store(rec(0, "iter000_openblas", Decision::BASELINE, 50));
  store(rec(1, "iter001_start", Decision::KEEP, 10));
  store(rec(2, "iter002_v8", Decision::DISCARD, 9, {{"base", "iter001_start"}, {"params", {{"VEC", "8"}}}}));
  profile_evidence("iter001_start");
  // One macro change since the start: another is allowed.
  EXPECT_EQ(refusal_rule([&] { guard_idea(*ws, task, plan("iter003", "iter001_start", {{"params", {{"VEC", "16"}}}})); }),
            "");
}

TEST_F(EnforcedTask, SevenDiscardsRequireSassAndABaselineProfile) {
  prepared();
  for (int i = 1; i <= 7; ++i) {
    json extra = {{"base", "iter001_start"}, {"params", {{"K", std::to_string(i)}}}, {"structural", "s" + std::to_string(i)}};
    store(rec(i, "iter0" + std::to_string(10 + i) + "_s" + std::to_string(i), Decision::DISCARD, 9, extra));
  }
  profile_evidence("iter001_start");
  auto p = plan("iter020", "iter001_start", {{"params", {{"Z", "1"}}}, {"structural", "new tiling"}});
  EXPECT_EQ(refusal_rule([&] { guard_idea(*ws, task, p); }), "escalate_at_7");
  fs::path f = ws->kind_dir(task, ArtifactKind::perf) / "sass.json";
  atomic_write(f, "{}");
  record_evidence(*ws, task, EvidenceKind::sass_compare, "iter001_start", f);
  record_evidence(*ws, task, EvidenceKind::baseline_profile, "iter000_openblas", f);
  EXPECT_EQ(refusal_rule([&] { guard_idea(*ws, task, p); }), "");
}

// The streak thresholds are the task's protocol.json, not numbers in the code: with the
// escalation at 3 and the structural reset at 4, the guards refuse after 3 and 4 rounds not kept.
TEST_F(EnforcedTask, StreakThresholdsComeFromTheProtocolConfig) {
  ProtocolConfig cfg = *read_protocol(*ws, task);
  cfg.escalate_streak = 3;
  cfg.structural_reset_streak = 4;
  write_protocol(*ws, task, cfg);
  EXPECT_EQ(ProtocolConfig::from_json(cfg.to_json()).escalate_streak, 3);
  EXPECT_EQ(ProtocolConfig::from_json(json::object()).structural_reset_streak, 8) << "the default";
  prepared();
  auto discard = [&](int i) {
    json extra = {{"base", "iter001_start"}, {"params", {{"K", std::to_string(i)}}}, {"structural", "s" + std::to_string(i)}};
    store(rec(i, "iter0" + std::to_string(10 + i) + "_s" + std::to_string(i), Decision::DISCARD, 9, extra));
  };
  for (int i = 1; i <= 2; ++i) discard(i);
  profile_evidence("iter001_start");
  const auto structural = plan("iter020", "iter001_start", {{"params", {{"Z", "1"}}}, {"structural", "new tiling"}});
  const auto macro = plan("iter020", "iter001_start", {{"params", {{"Z", "2"}}}});
  EXPECT_EQ(refusal_rule([&] { guard_idea(*ws, task, structural); }), "") << "2 rounds not kept";
  discard(3);
  EXPECT_EQ(refusal_rule([&] { guard_idea(*ws, task, structural); }), "escalate_at_7") << "3 rounds not kept";
  fs::path f = ws->kind_dir(task, ArtifactKind::perf) / "sass.json";
  atomic_write(f, "{}");
  record_evidence(*ws, task, EvidenceKind::sass_compare, "iter001_start", f);
  record_evidence(*ws, task, EvidenceKind::baseline_profile, "iter000_openblas", f);
  EXPECT_EQ(refusal_rule([&] { guard_idea(*ws, task, macro); }), "");
  discard(4);
  record_evidence(*ws, task, EvidenceKind::sass_compare, "iter001_start", f);
  record_evidence(*ws, task, EvidenceKind::baseline_profile, "iter000_openblas", f);
  EXPECT_EQ(refusal_rule([&] { guard_idea(*ws, task, macro); }), "structural_reset_at_8") << "4 rounds not kept";
}

TEST_F(EnforcedTask, ImplementNeedsTheCheckpointAndStopsAfterFiveAttempts) {
  prepared();
  EXPECT_EQ(refusal_rule([&] { guard_implement(*ws, task, 2, false); }), "checkpoint_before_implement");
  write_checkpoint(*ws, task, plan("iter002", "iter001_start"));
  EXPECT_EQ(refusal_rule([&] { guard_implement(*ws, task, 3, false); }), "build_the_plan");
  EXPECT_EQ(refusal_rule([&] { guard_implement(*ws, task, 2, false); }), "");
  Ledger l(*ws, task);
  for (int i = 0; i < 5; ++i) {
    l.append_attempt(json{{"planned_iter", "iter002"}, {"timestamp", "2026-11-29T02:00:00.000Z"}}, "try",
                     std::chrono::milliseconds(1000));
  }
  EXPECT_EQ(refusal_rule([&] { guard_implement(*ws, task, 2, false); }), "abandon_after_5");
  EXPECT_EQ(derive_state(*ws, task).step, Step::STORE);
}

TEST_F(EnforcedTask, TypedNumbersAreRefusedInEnforcedMode) {
  prepared();
  write_checkpoint(*ws, task, plan("iter002", "iter001_start"));
  RoundRecord r = rec(1, "iter002_x", Decision::KEEP, 20);
  EXPECT_EQ(refusal_rule([&] { guard_store(*ws, task, r, json(nullptr)); }), "measured_numbers_only");
}

TEST_F(EnforcedTask, StateFollowsTheEvidence) {
  EXPECT_EQ(derive_state(*ws, task).step, Step::PREPARE);
  prepared();
  EXPECT_EQ(derive_state(*ws, task).step, Step::PROFILE);
  profile_evidence("iter001_start");
  EXPECT_EQ(derive_state(*ws, task).step, Step::IDEA);
  write_checkpoint(*ws, task, plan("iter002", "iter001_start"));
  EXPECT_EQ(derive_state(*ws, task).step, Step::IMPLEMENT);
}

// After a KEEP of another structure that is now the best, the next step profiles it: the state does
// not send the driver to the older, slower base because that one has a profile (a new user's trial).
TEST_F(EnforcedTask, AfterAKeepTheStateProfilesTheNewBestNotTheOlderBase) {
  prepared();
  profile_evidence("iter001_start");
  store(rec(1, "iter002_regblk", Decision::KEEP, 30,
            {{"base", "iter001_start"}, {"params", {{"MR", "4"}}}, {"structural", "register blocking"}}));
  TaskState s = derive_state(*ws, task);
  EXPECT_EQ(s.step, Step::PROFILE) << s.next_action;
  EXPECT_NE(s.next_action.find("--iter iter002_regblk"), std::string::npos) << s.next_action;
  profile_evidence("iter002_regblk");
  s = derive_state(*ws, task);
  EXPECT_EQ(s.step, Step::IDEA);
  EXPECT_NE(s.next_action.find("--base iter002_regblk"), std::string::npos) << s.next_action;
}

// A close call's KEEP is refused until the back-to-back pairs are measured, and then stands or
// falls on them; a DISCARD needs no pairs.
TEST_F(EnforcedTask, ACloseCallIsKeptOnlyOnItsPairs) {
  prepared();  // the best, iter001_start, at 10 TFLOPS
  planned_build("iter002", "iter002_x");
  const fs::path perf = ws->kind_dir(task, ArtifactKind::perf);
  auto measure = [&](const std::string& kernel, double tflops, const std::string& name) {
    return measured(kernel, name, tflops).first;
  };
  const json c0 = measure("iter002_x", 10.09, "measure_iter002_x.json");  // +0.9 %: a close call
  RoundRecord keep = rec(1, "iter002_x", Decision::KEEP, 10.09);
  RoundRecord discard = rec(1, "iter002_x", Decision::DISCARD, 10.09);
  EXPECT_EQ(refusal_rule([&] { guard_store(*ws, task, discard, c0); }), "");
  try {
    guard_store(*ws, task, keep, c0);
    ADD_FAILURE() << "a close call was kept without its pairs";
  } catch (const Error& e) {
    EXPECT_EQ(e.details().value("rule", ""), "noise_aware_decision");
    EXPECT_NE(e.details().dump().find("croq measure"), std::string::npos) << e.details().dump();
    EXPECT_NE(e.details().dump().find("pair_iter002_1_iter001_start.json"), std::string::npos) << e.details().dump();
  }
  measure("iter001_start", 10.0, "pair_iter002_1_iter001_start.json");
  measure("iter001_start", 10.01, "pair_iter002_2_iter001_start.json");
  measure("iter002_x", 10.1, "pair_iter002_3_iter002_x.json");
  EXPECT_EQ(refusal_rule([&] { guard_store(*ws, task, keep, c0); }), "noise_aware_decision") << "two pairs of three";
  measure("iter002_x", 10.09, "pair_iter002_4_iter002_x.json");
  measure("iter001_start", 10.0, "pair_iter002_5_iter001_start.json");
  EXPECT_EQ(refusal_rule([&] { guard_store(*ws, task, keep, c0); }), "");
  DecisionContext d = decide_for(*ws, task, "iter002_x", PerfSample::from_measurement(c0), false);
  EXPECT_EQ(d.result.decision, Decision::KEEP) << d.result.reason;
  ASSERT_EQ(d.result.pairs["measured"].size(), 3u);
  // A later pair against the candidate undoes it; a changed file no longer counts.
  measure("iter002_x", 9.98, "pair_iter002_6_iter002_x.json");
  measure("iter001_start", 10.0, "pair_iter002_7_iter001_start.json");
  EXPECT_EQ(refusal_rule([&] { guard_store(*ws, task, keep, c0); }), "noise_aware_decision");
  atomic_write(perf / "pair_iter002_6_iter002_x.json", json{{"verdict", "PASS"}, {"tflops", 10.2}}.dump());
  EXPECT_EQ(refusal_rule([&] { guard_store(*ws, task, keep, c0); }), "");
}

// Evidence is timed by croq's method: a measurement timed hot (--no-l2-flush: +14 % on the cpp
// backend for the same binary) or in another B layout than the baseline's is refused as evidence of
// a decision, KEEP or DISCARD, with the command that measures it the default way.
TEST_F(EnforcedTask, AMeasurementTimedHotOrInAnotherLayoutIsNotEvidence) {
  prepared();
  atomic_write(ws->baseline_result(task), json{{"b_layout", "row"}, {"tflops", 50}}.dump());
  write_checkpoint(*ws, task, plan("iter002", "iter001_start"));
  const fs::path perf = ws->kind_dir(task, ArtifactKind::perf);
  atomic_write(perf / "build_iter002.json", "{}");
  record_evidence(*ws, task, EvidenceKind::build, "iter002_x", perf / "build_iter002.json", {{"verdict", "OK"}});
  auto measured = [&](bool flush, const std::string& layout) {
    json m = {{"verdict", "PASS"},
              {"tflops", 20.0},
              {"problem", {{"b_layout", layout}}},
              {"timing", {{"median_ms", 1.0}, {"cv", 0.001}, {"reps", 50}, {"l2_flush", flush}}}};
    atomic_write(perf / "measure_iter002_x.json", m.dump());
    record_evidence(*ws, task, EvidenceKind::measure, "iter002_x", perf / "measure_iter002_x.json",
                    {{"verdict", "PASS"}, {"tflops", 20.0}});
    return m;
  };
  for (Decision d : {Decision::KEEP, Decision::DISCARD}) {
    RoundRecord r = rec(1, "iter002_x", d, 20.0);
    EXPECT_EQ(refusal_rule([&] { guard_store(*ws, task, r, measured(false, "row")); }), "measurement_method");
    EXPECT_EQ(refusal_rule([&] { guard_store(*ws, task, r, measured(true, "col")); }), "measurement_method");
  }
  try {
    guard_store(*ws, task, rec(1, "iter002_x", Decision::KEEP, 20.0), measured(true, "col"));
  } catch (const Error& e) {
    EXPECT_NE(e.details().dump().find("--b-layout row"), std::string::npos) << e.details().dump();
  }
  EXPECT_NE(refusal_rule([&] { guard_store(*ws, task, rec(1, "iter002_x", Decision::KEEP, 20.0), measured(true, "row")); }),
            "measurement_method");
}

// A round stores the kernel's newest measurement since its build: of five runs, a driver does not
// store the luckiest (pair files of a close call aside).
TEST_F(EnforcedTask, ARoundStoresTheNewestMeasurementNotTheLuckiest) {
  prepared();
  write_checkpoint(*ws, task, plan("iter002", "iter001_start"));
  const fs::path perf = ws->kind_dir(task, ArtifactKind::perf);
  atomic_write(perf / "build_iter002.json", "{}");
  record_evidence(*ws, task, EvidenceKind::build, "iter002_x", perf / "build_iter002.json", {{"verdict", "OK"}});
  auto measure = [&](const std::string& name, double tflops) {
    json m = {{"verdict", "PASS"}, {"tflops", tflops}, {"timing", {{"median_ms", 1.0}, {"cv", 0.001}, {"reps", 50}}}};
    atomic_write(perf / name, m.dump());
    record_evidence(*ws, task, EvidenceKind::measure, "iter002_x", perf / name, {{"verdict", "PASS"}, {"tflops", tflops}});
    return std::make_pair(m, sha256_file(perf / name));
  };
  auto [lucky, lucky_sha] = measure("try1.json", 30.0);
  auto [later, later_sha] = measure("try2.json", 20.0);
  measure("pair_iter002_1_iter002_x.json", 21.0);  // a pair file does not hide the round's own
  auto with_file = [&](const std::string& sha) {
    return rec(1, "iter002_x", Decision::KEEP, 30.0, {{"measurement", {{"sha256", sha}, {"file", "x"}}}});
  };
  EXPECT_EQ(refusal_rule([&] { guard_store(*ws, task, with_file(lucky_sha), lucky); }), "newest_measurement");
  EXPECT_NE(refusal_rule([&] { guard_store(*ws, task, with_file(later_sha), later); }), "newest_measurement");
  // The newest of all (a pair file, as croq state suggests after the pairs) stands too.
  auto [pair, pair_sha] = measure("pair_iter002_2_iter002_x.json", 20.5);
  EXPECT_NE(refusal_rule([&] { guard_store(*ws, task, with_file(pair_sha), pair); }), "newest_measurement");
  EXPECT_NE(refusal_rule([&] { guard_store(*ws, task, with_file(later_sha), later); }), "newest_measurement");
  EXPECT_EQ(refusal_rule([&] { guard_store(*ws, task, with_file(lucky_sha), lucky); }), "newest_measurement");
}

// Measuring again until one run comes out lucky does not move the decision: it takes the median of
// the kernel's measurements since its build. And once back-to-back pairs are measured they decide,
// whatever one measurement says against the best's older figure (before, storing the newest file
// (a lucky run, or a pair file with a narrow spread) cleared the margin the pairs had refused).
TEST_F(EnforcedTask, ReMeasuringUntilLuckyDoesNotMoveTheDecisionAndMeasuredPairsDecide) {
  prepared();  // the best, iter001_start, at 10 TFLOPS
  planned_build("iter002", "iter002_x");
  auto measure = [&](const std::string& kernel, const std::string& name, double tflops) {
    return measured(kernel, name, tflops);
  };
  auto keep = [&](const std::string& sha) {
    return rec(1, "iter002_x", Decision::KEEP, 11.0, {{"measurement", {{"sha256", sha}, {"file", "x"}}}});
  };
  measure("iter002_x", "try1.json", 9.9);
  measure("iter002_x", "try2.json", 10.0);
  auto [lucky, lucky_sha] = measure("iter002_x", "try3.json", 11.0);  // +10 %, the newest
  EXPECT_EQ(refusal_rule([&] { guard_store(*ws, task, keep(lucky_sha), lucky); }), "noise_aware_decision");
  EXPECT_EQ(decide_for(*ws, task, "iter002_x", PerfSample::from_measurement(lucky), false).result.decision,
            Decision::DISCARD);
  // A kernel measured once is decided on that measurement.
  planned_build("iter003", "iter003_y");
  auto [once, once_sha] = measure("iter003_y", "once.json", 11.0);
  auto keep3 = rec(1, "iter003_y", Decision::KEEP, 11.0, {{"measurement", {{"sha256", once_sha}, {"file", "x"}}}});
  EXPECT_EQ(refusal_rule([&] { guard_store(*ws, task, keep3, once); }), "");
  // Pairs measured against it that do not favour it decide: DISCARD, though the single run is +10 %.
  for (int i = 1; i <= 3; ++i) {
    measure("iter001_start", fmt::format("pair_iter003_{}_iter001_start.json", 2 * i - 1), 10.0);
    measure("iter003_y", fmt::format("pair_iter003_{}_iter003_y.json", 2 * i), 10.0);
  }
  EXPECT_EQ(refusal_rule([&] { guard_store(*ws, task, keep3, once); }), "noise_aware_decision");
}

// VERIFIED in the checkpoint is the checkpoint's word: the MEASURE guard also wants croq checkpoint
// verify's evidence for the iteration, of its source as it is now. A status written by hand into
// current_idea.json skipped the VERIFY step before.
TEST_F(EnforcedTask, AVerifiedStatusWrittenByHandDoesNotSkipVerify) {
  prepared();
  Checkpoint cp = plan("iter002", "iter001_start");
  cp.status = CheckpointStatus::VERIFIED;
  write_checkpoint(*ws, task, cp);
  const fs::path src = ws->kind_dir(task, ArtifactKind::srcs) / "iter002_wide.cpp";
  atomic_write(src, "// the candidate\n");
  EXPECT_EQ(refusal_rule([&] { guard_measure(*ws, task, "iter002_wide"); }), "verify_before_measure");
  record_verification(*ws, task, "iter002_wide", src, true);
  EXPECT_EQ(refusal_rule([&] { guard_measure(*ws, task, "iter002_wide"); }), "");
  atomic_write(src, "// the candidate, changed after it was verified\n");
  EXPECT_EQ(refusal_rule([&] { guard_measure(*ws, task, "iter002_wide"); }), "verify_before_measure");
  record_verification(*ws, task, "iter002", src, false);  // DRIFT
  EXPECT_EQ(refusal_rule([&] { guard_measure(*ws, task, "iter002_wide"); }), "verify_before_measure");
}

// The round budget counts the rounds stored since it began, not the highest round number: one
// record stored under a jumped number (store-round --round 30) is one round.
TEST_F(EnforcedTask, TheBudgetCountsStoredRoundsNotTheHighestNumber) {
  ProtocolConfig cfg;
  cfg.enforced = true;
  cfg.target_rounds = 26;
  write_protocol(*ws, task, cfg);
  prepared();
  store(rec(1, "iter002_a", Decision::DISCARD, 9));
  store(rec(30, "iter003_b", Decision::COMPILE_FAIL, 0));
  const json budget = derive_state(*ws, task).details["budget"];
  EXPECT_EQ(budget.value("completed", -1), 2) << budget.dump();
  EXPECT_EQ(budget.value("remaining", -1), 24) << budget.dump();
}

// A pair measurement that does not count (unstable under load, say) leaves its file; the renewed
// plan asks for the same kernels but never overwrites a file already written.
TEST_F(EnforcedTask, APairPlanNeverOverwritesAnEarlierPairFile) {
  prepared();
  const fs::path perf = ws->kind_dir(task, ArtifactKind::perf);
  const auto first = pair_plan(*ws, task, "iter002_x", "iter001_start", 0, 3);
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first.front().out.filename(), "pair_iter002_1_iter001_start.json");
  atomic_write(first.front().out, json{{"verdict", "UNSTABLE"}}.dump());
  const auto again = pair_plan(*ws, task, "iter002_x", "iter001_start", 0, 3);
  ASSERT_EQ(again.size(), first.size());
  for (size_t i = 0; i < again.size(); ++i) {
    EXPECT_EQ(again[i].kernel, first[i].kernel) << i;
    EXPECT_FALSE(fs::exists(again[i].out)) << again[i].out;
  }
  EXPECT_EQ(again.front().out.filename(), "pair_iter002_2_iter001_start.json");
  EXPECT_EQ(json::parse(*read_file(perf / "pair_iter002_1_iter001_start.json")).value("verdict", ""), "UNSTABLE");
}

TEST(ProtocolAdvisory, GuardsDoNothingWithoutProtocolFile) {
  TempDir dir;
  Workspace ws(dir.path());
  TaskRef t = make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "m");
  Checkpoint cp;
  cp.iter = "iter002";
  EXPECT_NO_THROW(guard_idea(ws, t, cp));
  EXPECT_NO_THROW(guard_implement(ws, t, 5, false));
}
