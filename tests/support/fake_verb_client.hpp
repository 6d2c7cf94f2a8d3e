// A fake of croq's verbs for testing `croq tune`'s decisions without compiling or timing kernels.
//
// The tuner is a client of croq's verbs (search/verb_client.hpp). This client answers them in the
// test's process with croq's own components — the ledger's store_round, the evidence log, the
// checkpoint, the protocol's derive_state, guard_idea and decide_for — so the state on disk is the
// state real verbs would leave, and the protocol's rules apply as they do for real. Only what
// needs a compiler or a device is scripted: a build's verdict, a measurement's verdict and TFLOPS,
// a profile's bottleneck (the `outcome` and `bottleneck` hooks).
//
// The fake stands for child processes: its own reads of the task's state are not counted in
// util/read_count.hpp, so a test counts the tuner's reads alone.
#pragma once
#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "croq/ledger/documents.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/ledger/store.hpp"
#include "croq/protocol/evidence.hpp"
#include "croq/protocol/history.hpp"
#include "croq/protocol/protocol.hpp"
#include "croq/workspace/sources.hpp"
#include "croq/search/verb_client.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/read_count.hpp"
#include "croq/util/text.hpp"
#include "croq/util/time.hpp"
#include "croq/workspace/ids.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq::test {

class FakeVerbClient : public VerbClient {
 public:
  // What a build or a measurement of one kernel gives.
  struct Call {
    std::string kernel;   // iter003_bm64
    std::string tag;      // bm64
    json params;          // the configuration (the plan's, or the stored record's); null if unknown
    std::string structural;  // the plan's structural change ("" for a macro-only change or no plan)
    int nth = 0;          // 1 for the first measurement of this kernel, 2 for the next, ...
  };
  struct Outcome {
    std::string build = "OK";       // OK or COMPILE_FAIL
    std::string verdict = "PASS";   // PASS, VERIFY_FAIL, RUNTIME_FAIL, ...
    double tflops = 1.0;
    double cv = 0.005;
    std::string reason;
  };

  FakeVerbClient(const Workspace& ws, TaskRef task) : m_ws(ws), m_task(std::move(task)) {
    outcome = [](const Call&) { return Outcome{}; };
    bottleneck = [](const std::string&) { return std::string("compute_bound"); };
  }

  // Scripts (replace them in a test).
  std::function<Outcome(const Call&)> outcome;
  std::function<std::string(const std::string& kernel)> bottleneck;
  double baseline_tflops = 10.0;
  // A refusal of store-round's noise-aware guard (rule noise_aware_decision) for a KEEP of this
  // kernel, as croq's guard words it; "" stores the round.
  std::function<std::string(const std::string& kernel)> keep_refusal = [](const std::string&) { return std::string(); };
  // Thresholds written by `croq protocol begin` (target_rounds and start_round are set from it).
  ProtocolConfig protocol;

  // Every call, as the tuner made it (the task's own words left out).
  std::vector<std::vector<std::string>> calls;
  std::vector<std::string> verbs() const {
    std::vector<std::string> v;
    for (const auto& c : calls) v.push_back(c.empty() ? "" : c[0]);
    return v;
  }

  // The driver's reads (util/read_count.hpp) at each `croq state` call: the loop asks it at the start
  // of every step, so consecutive entries bound one step's reads.
  std::vector<StateReads> reads_at_state;

  VerbResult call(const std::vector<std::string>& args, std::chrono::seconds) override {
    if (!args.empty() && args[0] == "state") reads_at_state.push_back(state_reads());
    StateReadsPaused paused;  // a child process's reads are not the driver's
    // Real verbs run one after another: keep the evidence's timestamps in order.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::vector<std::string> words;
    std::map<std::string, std::string> opts;
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a.rfind("--", 0) == 0) {
        auto eq = a.find('=');
        if (eq != std::string::npos) {
          opts[a.substr(0, eq)] = a.substr(eq + 1);
        } else if (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
          opts[a] = args[++i];
        } else {
          opts[a] = "";
        }
      } else {
        words.push_back(a);
      }
    }
    for (const char* k : {"--gpu", "--dsl", "--shape-key", "--model"}) opts.erase(k);
    std::vector<std::string> logged = words;
    for (const auto& [k, v] : opts) logged.push_back(k + "=" + v);
    calls.push_back(logged);
    VerbResult r;
    try {
      r.doc = answer(words, opts);
      r.exit_code = r.doc.value("fake_exit", 0);
      r.doc.erase("fake_exit");
    } catch (const Error& e) {
      r.exit_code = static_cast<int>(e.code());
      r.doc = {{"error", {{"message", e.what()}, {"hint", e.hint()}}}};
      // As croq's CLI writes an error: the details' fields beside the message (cli.cpp).
      if (e.details().is_object()) {
        for (auto it = e.details().begin(); it != e.details().end(); ++it) r.doc["error"][it.key()] = it.value();
      }
      r.err = e.what();
    }
    return r;
  }

 private:
  std::string opt(const std::map<std::string, std::string>& o, const std::string& k, std::string def = "") const {
    auto it = o.find(k);
    return it == o.end() ? def : it->second;
  }

  fs::path perf(const std::string& name) const { return m_ws.kind_dir(m_task, ArtifactKind::perf) / name; }

  // The configuration a kernel was planned or stored with.
  json params_of(const std::string& kernel, std::string* structural = nullptr) const {
    if (auto cp = read_checkpoint(m_ws, m_task); cp && cp->open() && kernel.rfind(cp->iter + "_", 0) == 0) {
      if (structural) *structural = cp->extra.value("structural", "");
      return cp->extra.value("params", json(nullptr));
    }
    for (const auto& r : Ledger(m_ws, m_task).read_all().records) {
      if (r.kernel == kernel && r.extra.contains("params")) return r.extra["params"];
    }
    return nullptr;
  }

  Call call_of(const std::string& kernel, bool count) {
    Call c;
    c.kernel = kernel;
    auto id = try_parse_iter_id(kernel);
    c.tag = id ? id->tag : kernel;
    c.params = params_of(kernel, &c.structural);
    if (count) c.nth = ++m_measures[kernel];
    return c;
  }

  json answer(const std::vector<std::string>& w, const std::map<std::string, std::string>& o) {
    const std::string verb = w.empty() ? "" : w[0];
    const std::string sub = w.size() > 1 ? w[1] : "";
    Ledger ledger(m_ws, m_task);
    const auto lock = std::chrono::milliseconds(5000);
    if (verb == "task") return {{"task_uid", "fake-task-uid"}};
    if (verb == "env") return {{"pass", true}};
    if (verb == "reinforce" || (verb == "sass" && sub == "dump")) return json::object();
    if (verb == "state") return derive_state(m_ws, m_task).to_json();
    if (verb == "protocol") {
      ProtocolConfig cfg = protocol;
      cfg.enforced = true;
      cfg.target_rounds = std::stoi(opt(o, "--rounds", "50"));
      cfg.start_round = ledger.index().max_round;
      cfg.started_at = now_iso8601();
      write_protocol(m_ws, m_task, cfg);
      return {{"start_round", cfg.start_round}};
    }
    if (verb == "baseline") {
      StoreRequest req;
      req.iter = "iter000";
      req.kernel = "iter000_reference";
      req.decision = "BASELINE";
      req.tflops = baseline_tflops;
      req.round = 0;
      req.bottleneck = k_no_bottleneck;
      req.idea = "library baseline (fake)";
      if (!ledger.index().baseline) store_round(ledger, req, lock);
      return {{"verdict", "PASS"}, {"tflops", baseline_tflops}};
    }
    if (verb == "next-iter") {
      int n = ledger.reserve_iter(lock);
      return {{"kernel", iter_number_name(n) + "_" + opt(o, "--tag", "idea")}};
    }
    if (verb == "build") {
      const std::string kernel = opt(o, "--iter");
      Outcome out = outcome(call_of(kernel, false));
      fs::path log = perf("build_" + kernel + ".txt");
      atomic_write(log, "fake build of " + kernel + ": " + out.build + "\n");
      if (out.build == "OK") atomic_write(m_ws.kind_dir(m_task, ArtifactKind::bin) / (kernel + ".so"), "fake");
      record_evidence(m_ws, m_task, EvidenceKind::build, kernel, log, {{"verdict", out.build}});
      json doc = {{"verdict", out.build}, {"kernel", kernel}};
      if (out.build != "OK") doc["reason"] = out.reason.empty() ? "fake compile error" : out.reason;
      return doc;
    }
    if (verb == "measure") {
      const std::string kernel = opt(o, "--iter");
      Outcome out = outcome(call_of(kernel, true));
      fs::path file = o.count("--out") ? fs::path(opt(o, "--out")) : perf("measure_" + kernel + ".json");
      if (file.is_relative()) file = m_ws.root() / file;
      json doc = {{"kernel", kernel}, {"verdict", out.verdict}, {"source", "measured"}};
      if (out.verdict == "PASS") {
        doc["tflops"] = out.tflops;
        doc["timing"] = {{"median_ms", 1.0 / out.tflops}, {"cv", out.cv}, {"reps", 50}};
      } else {
        doc["reason"] = out.reason.empty() ? "fake verification failure" : out.reason;
      }
      atomic_write(file, dump_pretty(doc));
      json summary = {{"verdict", out.verdict}};
      if (out.verdict == "PASS") summary["tflops"] = out.tflops;
      record_evidence(m_ws, m_task, EvidenceKind::measure, kernel, file, summary);
      if (out.verdict != "PASS") doc["fake_exit"] = static_cast<int>(ExitCode::candidate_failed);
      return doc;
    }
    if (verb == "profile") {
      if (o.count("--baseline")) {
        fs::path f = perf("ncu_baseline.csv");
        atomic_write(f, "fake baseline profile " + now_iso8601() + "\n");
        record_evidence(m_ws, m_task, EvidenceKind::baseline_profile, "iter000_reference", f, {{"bottleneck", "compute_bound"}});
        return {{"report", m_ws.display(f)}};
      }
      const std::string kernel = opt(o, "--iter");
      const std::string b = bottleneck(kernel);
      fs::path f = perf("ncu_" + kernel + "_round" + opt(o, "--round", "0") + ".csv");
      atomic_write(f, "fake profile of " + kernel + " " + now_iso8601() + "\n");
      record_evidence(m_ws, m_task, EvidenceKind::profile, kernel, f, {{"bottleneck", b}});
      return {{"bottleneck", b}, {"kernel", kernel}};
    }
    if (verb == "sass" && sub == "compare") {
      const std::string kernel = opt(o, "--iter");
      fs::path f = perf("sass_compare_" + kernel + ".json");
      atomic_write(f, "{}\n");
      record_evidence(m_ws, m_task, EvidenceKind::sass_compare, kernel, f);
      return json::object();
    }
    if (verb == "checkpoint" && sub == "write") {
      Checkpoint cp;
      cp.status = CheckpointStatus::PLANNED;
      cp.iter = iter_number_name(parse_iter_number(opt(o, "--iter")));
      cp.round = ledger.index().max_round + 1;
      cp.bottleneck = opt(o, "--bottleneck");
      cp.idea = opt(o, "--idea");
      cp.expected_gain = opt(o, "--expected-gain");
      std::string lever;
      for (char ch : opt(o, "--levers") + ",") {
        if (ch != ',') {
          lever += ch;
        } else if (!lever.empty()) {
          cp.levers.push_back(lever);
          lever.clear();
        }
      }
      cp.base = opt(o, "--base");
      cp.created_at = cp.updated_at = now_iso8601();
      cp.extra = o.count("--extra") ? json::parse(opt(o, "--extra")) : json::object();
      if (o.count("--params")) cp.extra["params"] = json::parse(opt(o, "--params"));
      cp.extra["structural"] = opt(o, "--structural");
      IdeaPlan plan = IdeaPlan::from_json(cp.extra);
      plan.base = cp.base;
      plan = complete_plan(History::load(ledger), plan, "");
      const json completed = plan.to_json();
      for (auto& [k, v] : completed.items()) cp.extra[k] = v;
      guard_idea(m_ws, m_task, cp);
      write_checkpoint(m_ws, m_task, cp, /*durable=*/false);
      return cp.to_json();
    }
    if (verb == "checkpoint" && (sub == "read" || sub == "verify")) {
      auto cp = read_checkpoint(m_ws, m_task);
      if (!cp) throw Error(ExitCode::not_found, "no checkpoint");
      cp->status = sub == "read" && cp->status == CheckpointStatus::PLANNED ? CheckpointStatus::IMPLEMENTING
                                                                              : CheckpointStatus::VERIFIED;
      cp->updated_at = now_iso8601();
      write_checkpoint(m_ws, m_task, *cp, /*durable=*/false);
      if (sub == "verify") {
        const std::string built = opt(o, "--iter");
        if (auto src = find_primary_source(m_ws, m_task, built)) record_verification(m_ws, m_task, built, *src, true);
      }
      return cp->to_json();
    }
    if (verb == "decide") {
      fs::path file = opt(o, "--measurement");
      if (file.is_relative()) file = m_ws.root() / file;
      json m = json::parse(*read_file(file));
      DecisionContext d = decide_for(m_ws, m_task, opt(o, "--kernel"), PerfSample::from_measurement(m), o.count("--rerun") > 0);
      return d.to_json();
    }
    if (verb == "store-round") {
      StoreRequest req;
      req.iter = opt(o, "--iter");
      req.kernel = opt(o, "--kernel");
      req.decision = opt(o, "--decision");
      req.bottleneck = opt(o, "--bottleneck", k_no_bottleneck);
      req.idea = opt(o, "--idea", "an idea");
      req.category = opt(o, "--category");
      req.expected_gain = opt(o, "--expected-gain");
      if (o.count("--round")) req.round = std::stoi(opt(o, "--round"));
      if (o.count("--extra")) req.extra = json::parse(opt(o, "--extra"));
      json measurement = nullptr;
      if (o.count("--measurement")) {
        fs::path file = opt(o, "--measurement");
        if (file.is_relative()) file = m_ws.root() / file;
        measurement = json::parse(*read_file(file));
        if (auto t = get_number(measurement, "tflops")) req.tflops = *t;
      }
      // The protocol's own guard, as croq store-round asks it before it stores.
      guard_store(m_ws, m_task, make_round_record(req), measurement);
      if (req.decision == "KEEP") {
        if (std::string why = keep_refusal(req.kernel); !why.empty()) {
          throw Error(ExitCode::refused, "STORE refused (noise_aware_decision): " + why,
                      "measure the pairs, then store again; or store this round as DISCARD",
                      json{{"step", "STORE"}, {"rule", "noise_aware_decision"}, {"reason", why}});
        }
      }
      StoreRoundResult r = store_round(ledger, req, lock);
      return {{"ok", true}, {"record", r.outcome.record.to_json()}};
    }
    if (verb == "attempt") {
      json rec = o.count("--extra") ? json::parse(opt(o, "--extra")) : json::object();
      rec["reason"] = opt(o, "--reason");
      rec["idea"] = opt(o, "--idea");
      if (o.count("--planned-iter")) rec["planned_iter"] = opt(o, "--planned-iter");
      rec["timestamp"] = now_iso8601();
      return ledger.append_attempt(rec, opt(o, "--tag"), lock);
    }
    throw Error(ExitCode::usage, "the fake has no verb " + verb + " " + sub);
  }

  const Workspace& m_ws;
  TaskRef m_task;
  std::map<std::string, int> m_measures;
};

}  // namespace croq::test
