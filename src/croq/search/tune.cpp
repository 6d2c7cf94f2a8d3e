// The tune driver (tune.hpp).
#include "croq/search/tune.hpp"

#include <random>
#include <set>

#include <fmt/format.h>

#include "croq/ledger/documents.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/protocol/evidence.hpp"
#include "croq/protocol/history.hpp"
#include "croq/protocol/protocol.hpp"
#include "croq/protocol/snapshot.hpp"
#include "croq/search/search.hpp"
#include "croq/workspace/sources.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/process.hpp"
#include "croq/util/text.hpp"
#include "croq/util/time.hpp"
#include "croq/workspace/ids.hpp"
#include "croq/workspace/operators.hpp"

namespace croq {

FamilyProblem problem_from_task(const TaskRef& task) {
  FamilyProblem p;
  p.op = operator_name(task.shape);
  p.m = task.shape.m();
  p.n = task.shape.n();
  p.k = task.shape.k();
  p.dtype = parse_dtype_pair_or_throw(task.shape.dtype_token);
  if (task.gpu.rfind("cpu_", 0) == 0) {
    p.arch = "cpu";
  } else if (task.gpu.rfind("sm", 0) == 0) {
    std::string cc = task.gpu.substr(2, task.gpu.find('_') - 2);
    p.arch = "sm_" + cc + (cc == "90" ? "a" : "");
  }
  return p;
}

std::shared_ptr<KernelFamily> choose_family(const std::string& requested, const std::string& dsl, const FamilyProblem& p) {
  if (!requested.empty()) {
    auto f = find_family(requested);
    if (!f) {
      std::string names;
      for (auto& x : kernel_families()) names += (names.empty() ? "" : ", ") + x->name();
      throw_usage(fmt::format("unknown kernel family '{}'", requested), "known families: " + names);
    }
    if (f->dsl() != dsl) throw_usage(fmt::format("family {} is for dsl {}, not {}", requested, f->dsl(), dsl));
    if (!f->supports(p)) throw_usage(fmt::format("family {} does not support this problem", requested));
    return f;
  }
  for (auto& f : kernel_families()) {
    if (f->dsl() == dsl && f->supports(p)) return f;
  }
  // The families there are, by dsl, from the table itself (a hand-written list forgot cpp_fp8).
  std::map<std::string, std::vector<std::string>> by_dsl;
  for (auto& f : kernel_families()) by_dsl[f->dsl()].push_back(f->name());
  std::string families;
  for (const auto& [d, names] : by_dsl) families += fmt::format("{}{}: {}", families.empty() ? "" : "; ", d, fmt::join(names, ", "));
  throw_usage(fmt::format("no kernel family of dsl {} supports {} {}", dsl, p.op, p.dtype.canonical),
              fmt::format("croq's search drives these families ({}); docs/dsl.md, gemm.md, gemm_sp.md and fp8.md "
                          "say what each covers, and an agent can drive any dsl",
                          families));
}

namespace {

FamilyConfig config_from_json(const json& j) {
  FamilyConfig c;
  if (!j.is_object()) return c;
  for (auto it = j.begin(); it != j.end(); ++it) {
    c[it.key()] = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
  }
  return c;
}

std::string source_extension(const std::string& dsl) {
  if (dsl == "cpp") return ".cpp";
  if (dsl == "triton") return ".py";
  if (dsl == "croqtile") return ".co";
  return ".cu";
}

}  // namespace

struct Tuner::Impl {
  VerbClient& client;
  ProcessRunner& runner;
  const Workspace& ws;
  TaskRef task;
  TuneOptions opt;
  Progress progress;
  FamilyProblem problem;
  std::shared_ptr<KernelFamily> family;
  std::unique_ptr<Search> search;
  json tune_doc;
  std::map<std::string, std::vector<double>> step_ms;  // verb -> wall times
  int rounds_this_run = 0;
  // The task's state (ledger, evidence, checkpoint, protocol.json) as the last child verb left
  // it: a new snapshot per step of the loop, after `croq state`, from which every decision of that
  // step reads (each file at most once). Child verbs that change the state run before the next
  // step's snapshot.
  TaskSnapshot snap;

  Impl(VerbClient& c, ProcessRunner& r, const Workspace& w, TaskRef t, TuneOptions o, Progress p)
      : client(c), runner(r), ws(w), task(std::move(t)), opt(std::move(o)), progress(std::move(p)), snap(ws, task) {}

  void load_snapshot() { snap = TaskSnapshot(ws, task); }

  std::vector<std::string> targs() const {
    return {"--gpu", task.gpu, "--dsl", task.dsl, "--shape-key", task.shape.text, "--model", task.model};
  }

  VerbResult call(const std::string& step, std::vector<std::string> args, bool with_task = true) {
    if (with_task) {
      auto t = targs();
      args.insert(args.end(), t.begin(), t.end());
    }
    VerbResult r = client.call(args, opt.step_timeout);
    step_ms[step].push_back(r.wall_ms);
    return r;
  }

  VerbResult must(const std::string& step, std::vector<std::string> args, bool with_task = true) {
    VerbResult r = call(step, args, with_task);
    if (!r.ok()) {
      throw Error(ExitCode::failure, fmt::format("croq {} failed (exit {}): {}", args.empty() ? step : args[0], r.exit_code,
                                                 r.message()),
                  "see the message above; `croq state` shows where the task stands");
    }
    return r;
  }

  // croq measure or croq baseline, run again while its answer is contended (the GPU was shared:
  // exit 6 with "contended": a figure that decides nothing). After three contended answers in a
  // row the tune stops with the reason; run it again when the GPU is free (it resumes).
  VerbResult measured(const std::string& step, std::vector<std::string> args, bool required) {
    constexpr int k_tries = 3;
    for (int attempt = 1;; ++attempt) {
      VerbResult r = call(step, args);
      const bool contended = r.doc.is_object() && r.doc.value("contended", false);
      if (!contended) {
        if (required && !r.ok()) {
          throw Error(ExitCode::failure, fmt::format("croq {} failed (exit {}): {}", args.empty() ? step : args[0],
                                                     r.exit_code, r.message()),
                      "see the message above; `croq state` shows where the task stands");
        }
        return r;
      }
      std::string why;
      if (r.doc.contains("contention") && r.doc["contention"].is_object()) {
        for (const auto& x : r.doc["contention"].value("reasons", json::array())) {
          if (x.is_string()) why += (why.empty() ? "" : "; ") + x.get<std::string>();
        }
      }
      event({{"event", "contended"}, {"step", step}, {"attempt", attempt}, {"reason", why}});
      if (attempt >= k_tries) {
        throw Error(ExitCode::busy,
                    fmt::format("croq {} was contended {} times in a row: {}", args.empty() ? step : args[0], k_tries, why),
                    "the GPU is shared: `croq gpu contention` names who is on it; run croq tune again when it is free "
                    "(it resumes where it stopped)");
      }
    }
  }

  void event(json e) {
    e["timestamp"] = now_iso8601();
    e["task"] = task.id();
    if (progress) progress(e);
  }

  // A configuration from a record or checkpoint, completed with the parameters the family added since.
  FamilyConfig recorded(const json& params) const { return with_recorded_defaults(*family, config_from_json(params)); }

  fs::path tune_path() const { return ws.kind_dir(task, ArtifactKind::logs) / "tune.json"; }

  void save_tune_doc() { atomic_write(tune_path(), dump_pretty(tune_doc)); }

  fs::path source_path(const std::string& kernel) const {
    return ws.kind_dir(task, ArtifactKind::srcs) / (kernel + source_extension(task.dsl));
  }

  // ---- PREPARE ----
  void prepare() {
    // The environment first: a machine that cannot build or run the dsl gets no task made for it.
    VerbResult env = call("env", {"env", "validate", "--dsl", task.dsl}, false);
    if (!env.ok() || !env.doc.value("pass", false)) {
      // One line per missing piece, with its fix (before: a raw JSON array); exit 7, a missing
      // device or tool, as the exit-code table says.
      std::string errors;
      for (const auto& e : env.doc.value("errors", json::array())) {
        if (!e.is_object()) continue;
        errors += fmt::format("\n  - {}: {}", e.value("check", "?"), e.value("message", ""));
        if (e.contains("fix")) errors += fmt::format("\n    fix: {}", e.value("fix", ""));
      }
      if (errors.empty()) errors = " " + env.message();
      throw Error(ExitCode::no_device, "the environment is not ready for dsl " + task.dsl + ":" + errors,
                  "fix what `croq env validate --dsl " + task.dsl + "` reports, then run croq tune again");
    }
    std::vector<std::string> init = {"task", "init"};
    if (!opt.task_uid.empty()) {
      init.push_back("--task-uid");
      init.push_back(opt.task_uid);
    }
    VerbResult cfg = must("task", init);
    std::string uid = get_string(cfg.doc, "task_uid").value_or("");

    // The invocation: resume an unfinished one, else start a new one.
    bool resume = false;
    if (auto text = read_file(tune_path())) {
      if (auto j = try_parse_json(*text); j && j->is_object() && !j->value("completed", true)) {
        tune_doc = *j;
        resume = true;
      }
    }
    if (resume) {
      opt.seed = static_cast<uint64_t>(get_integer(tune_doc, "seed").value_or(static_cast<long long>(opt.seed)));
      event({{"event", "resume"},
             {"seed", opt.seed},
             {"start_round", tune_doc.value("start_round", 0)},
             {"rounds", tune_doc.value("rounds", opt.rounds)}});
    } else {
      if (opt.seed == 0) opt.seed = std::random_device{}() | 1u;
      VerbResult pb = must("protocol", {"protocol", "begin", "--rounds", std::to_string(opt.rounds)});
      tune_doc = {{"schema", "croq-tune-v1"}, {"seed", opt.seed}, {"family", family->name()}, {"rounds", opt.rounds},
                  {"start_round", pb.doc.value("start_round", 0)}, {"started_at", now_iso8601()}, {"completed", false}};
      save_tune_doc();
      event({{"event", "start"}, {"seed", opt.seed}, {"family", family->name()}, {"rounds", opt.rounds}});
    }
    std::vector<std::string> base = {"baseline"};
    if (!uid.empty()) {
      base.push_back("--task-uid");
      base.push_back(uid);
    }
    VerbResult measured_base = measured("baseline", base, true);
    load_snapshot();
    const LedgerIndex& bi = snap.index();
    search = std::make_unique<Search>(family, problem, opt.seed + static_cast<uint64_t>(bi.max_round));
    // The baseline's warnings (noisy, implausible) go with it: every ratio of the tune is taken against it.
    json warnings = json::array();
    if (measured_base.doc.is_object() && measured_base.doc.contains("warnings") &&
        measured_base.doc["warnings"].is_array()) {
      warnings = measured_base.doc["warnings"];
    }
    event({{"event", "baseline"},
           {"kernel", bi.baseline ? json(bi.baseline->kernel) : json(nullptr)},
           {"tflops", bi.baseline && bi.baseline->tflops ? json(*bi.baseline->tflops) : json(nullptr)},
           {"warnings", warnings}});

    if (!bi.best) starting_kernel();
  }

  // An attempt-log entry of a starting kernel that failed (with the parameters it was built with).
  static bool failed_start(const json& a) {
    return a.is_object() && a.contains("starting_kernel") && a["starting_kernel"] == true && a.contains("params") &&
           a["params"].is_object();
  }

  // A starting kernel to try: a whole configuration, its idea sentence and its tag.
  struct StartCandidate {
    FamilyConfig cfg;
    std::string idea;
    std::string tag;
  };

  // What PREPARE may start from, in order: the configuration of another shape's best (croq sweep
  // --mode from-current-best) when it is legal here, the family's default, then the family's
  // alternatives (its other archetypes for the problem).
  std::vector<StartCandidate> start_candidates() {
    std::vector<StartCandidate> out;
    std::set<std::string> seen;
    auto add = [&](FamilyConfig cfg, std::string idea, std::string tag) {
      if (tag.size() > 31) tag.resize(31);
      if (seen.insert(config_to_json(cfg).dump()).second) out.push_back({std::move(cfg), std::move(idea), std::move(tag)});
    };
    if (opt.start_params.is_object() && !opt.start_params.empty()) {
      FamilyConfig from = recorded(opt.start_params);
      if (auto why = family->violation(from, problem)) {
        event({{"event", "start_params_illegal"}, {"from", opt.start_from}, {"reason", *why}});
      } else {
        add(from,
            fmt::format("starting kernel: the best kernel of {} ({}), its configuration on this shape", opt.start_from,
                        family->name()),
            "from_best");
      }
    }
    FamilyConfig def = family->default_config(problem);
    if (auto why = family->violation(def, problem)) {
      throw Error(ExitCode::internal, fmt::format("family {} default configuration is illegal: {}", family->name(), *why));
    }
    add(def, fmt::format("starting kernel: {} default configuration", family->name()), family->name() + "_default");
    for (const auto& alt : family->alternatives(problem)) {
      if (family->violation(alt.config, problem)) continue;
      add(alt.config, fmt::format("starting kernel: {} alternative, {}", family->name(), alt.name), alt.tag);
    }
    return out;
  }

  // PREPARE's starting kernel (iter001 when the first one passes): built, measured and stored as
  // round 0. A candidate that does not build or does not pass verification is logged as a failed
  // attempt (attempt-log.jsonl, with its parameters) and the next one is tried; a resumed tune
  // skips those already logged. Only when every candidate failed does the tune stop, naming each.
  void starting_kernel() {
    std::set<std::string> failed_before;
    for (const auto& a : snap.attempts()) {
      if (failed_start(a)) {
        failed_before.insert(config_to_json(recorded(a["params"])).dump());
      }
    }
    std::vector<std::string> failures;
    for (const auto& c : start_candidates()) {
      if (failed_before.count(config_to_json(c.cfg).dump())) {
        failures.push_back(c.tag + ": failed in an earlier run (attempt-log.jsonl)");
        continue;
      }
      std::string failure = try_starting_kernel(c);
      if (failure.empty()) return;
      failures.push_back(c.tag + ": " + failure);
      event({{"event", "starting_kernel_failed"}, {"tag", c.tag}, {"reason", failure}});
    }
    throw Error(ExitCode::failure,
                fmt::format("no starting kernel of family {} passed ({} tried): {}", family->name(), failures.size(),
                            fmt::format("{}", fmt::join(failures, "; "))),
                "each failure is in attempt-log.jsonl and its build/measure files under perf/; fix the family or the "
                "environment, or start from a kernel of your own with `croq prepare --from FILE`");
  }

  // Builds, measures and stores one starting candidate; returns "" when it was stored, else why
  // it failed (the failure is logged as an attempt).
  std::string try_starting_kernel(const StartCandidate& c) {
    VerbResult ni = must("next-iter", {"next-iter", "--tag", c.tag});
    std::string kernel = get_string(ni.doc, "kernel").value_or("");
    atomic_write(source_path(kernel), family->render_source(c.cfg, problem));
    json b = build(kernel, c.cfg, /*attempt_tag=*/"");
    std::string verdict = get_string(b, "verdict").value_or("");
    std::string reason;
    if (verdict != "OK") {
      reason = get_string(b, "reason").value_or(get_string(b, "error").value_or(""));
      if (verdict.empty()) verdict = "COMPILE_FAIL";
    } else {
      VerbResult me = measured("measure", {"measure", "--iter", kernel}, false);
      if (!me.doc.is_object() || !me.doc.contains("verdict")) {
        throw Error(ExitCode::failure, "croq measure failed: " + me.message(),
                    "see the message above; `croq state` shows where the task stands");
      }
      verdict = get_string(me.doc, "verdict").value_or("");
      if (verdict == "PASS") {
        IdeaPlan plan;
        plan.params = config_to_json(c.cfg);
        plan.family = family->name();
        plan.structure = kernel;
        must("store", {"store-round", "--iter", iter_of(kernel), "--kernel", kernel, "--round", "0", "--decision", "KEEP",
                       "--measurement", measurement_file(kernel), "--idea", c.idea, "--extra", dump_compact(plan.to_json())});
        event({{"event", "starting_kernel"}, {"kernel", kernel}, {"tflops", me.doc.value("tflops", 0.0)}});
        return "";
      }
      reason = get_string(me.doc, "reason").value_or("");
    }
    json extra = {{"params", config_to_json(c.cfg)}, {"starting_kernel", true}, {"verdict", verdict}};
    must("attempt", {"attempt", "--tag", c.tag, "--reason", to_lower(verdict), "--idea", c.idea, "--planned-iter",
                     iter_of(kernel), "--extra", dump_compact(extra)});
    return fmt::format("{} {}{}", kernel, verdict, reason.empty() ? "" : " (" + reason + ")");
  }

  static std::string iter_of(const std::string& kernel) { return kernel.substr(0, kernel.find('_')); }

  std::string measurement_file(const std::string& kernel) const {
    return (ws.kind_dir(task, ArtifactKind::perf) / ("measure_" + kernel + ".json")).string();
  }

  // Builds a candidate; returns the build document (verdict OK or COMPILE_FAIL).
  json build(const std::string& kernel, const FamilyConfig& cfg, const std::string&) {
    std::vector<std::string> args = {"build", "--iter", kernel};
    auto flags = family->build_flags(cfg, problem);
    if (!flags.empty()) args.push_back("--flags=" + shell_join(flags));
    auto choreo = family->choreo_flags(cfg, problem);
    if (!choreo.empty()) args.push_back("--choreo-flags=" + shell_join(choreo));
    VerbResult r = call("build", args);
    if (!r.doc.is_object()) {
      throw Error(ExitCode::failure, "croq build failed: " + r.message());
    }
    return r.doc;
  }

  // ---- the rounds ----
  // The thresholds are the task's protocol.json (the defaults for a task without one): the same
  // ones the guards apply, from the same snapshot.
  const ProtocolConfig& rules_cfg() const { return snap.config(); }

  // The first active base, or the other one once the first has gone structural_reset_streak
  // rounds without a KEEP.
  std::optional<ActiveBase> pick_base(const History& h) const {
    auto bases = h.active_bases(static_cast<size_t>(rules_cfg().max_active_bases));
    if (bases.empty()) return std::nullopt;
    if (bases.front().discard_streak >= rules_cfg().structural_reset_streak && bases.size() > 1) return bases[1];
    return bases.front();
  }

  void profile(const std::string& kernel) {
    ensure_built(kernel);
    int round = snap.index().max_round + 1;
    std::vector<std::string> args = {"profile", "--iter", kernel, "--round", std::to_string(round)};
    if (task.dsl != "cpp") args.insert(args.end(), {"--preset", opt.profile_preset});
    VerbResult r = must("profile", args);
    event({{"event", "profile"}, {"kernel", kernel}, {"bottleneck", r.doc.value("bottleneck", json(nullptr))}});
  }

  void idea() {
    const auto& records = snap.records();
    const History& h = snap.history();
    auto base = pick_base(h);
    if (!base) throw Error(ExitCode::internal, "no active base although a starting kernel is stored");
    auto prof = snap.latest_valid(EvidenceKind::profile, base->kernel);
    if (!prof || prof->timestamp < base->timestamp) {
      profile(base->kernel);
      return;  // the next pass of the loop plans the idea
    }
    if (base->discard_streak >= rules_cfg().escalate_streak) escalate(*base);
    std::string bottleneck = get_string(prof->summary, "bottleneck").value_or("mixed");
    FamilyConfig base_cfg;
    for (auto it = records.rbegin(); it != records.rend(); ++it) {
      if (it->kernel == base->kernel) {
        base_cfg = recorded(it->extra.value("params", json::object()));
        break;
      }
    }
    if (base_cfg.empty()) throw Error(ExitCode::internal, "the base kernel " + base->kernel + " has no recorded parameters");
    SearchRules rules;
    rules.explore = opt.explore;
    // Every configuration this task has built (whatever its base and outcome), starting kernels
    // that failed included.
    auto measured = std::make_shared<std::set<std::string>>();
    for (const auto& r : records) {
      if (r.extra.contains("params") && r.extra["params"].is_object()) {
        measured->insert(config_to_json(recorded(r.extra["params"])).dump());
      }
    }
    for (const auto& a : snap.attempts()) {
      if (failed_start(a)) {
        measured->insert(config_to_json(recorded(a["params"])).dump());
      }
    }
    rules.measured = [measured](const FamilyConfig& c) { return measured->count(config_to_json(c).dump()) > 0; };
    rules.must_be_structural = h.macro_streak() >= rules_cfg().macro_streak_limit ||
                               base->discard_streak >= rules_cfg().structural_reset_streak;
    auto tried = [&h](const std::string& c) { return h.tried(c); };
    auto p = search->propose(base->kernel, base_cfg, bottleneck, tried, rules);
    // Every step and pair around the base measured: a random legal configuration near it, so a
    // sweep's round budget is spent searching (the seeds' driver never stops early) until the
    // draws find nothing untried.
    if (!p) p = search->restart(base->kernel, base_cfg, bottleneck, tried, rules);
    if (!p) {
      exhausted = true;
      event({{"event", "exhausted"}, {"base", base->kernel},
             {"reason", rules.must_be_structural ? "no untried structural move is left" : "no untried move is left"}});
      return;
    }
    int next = snap.next_iter();
    json extra = {{"params", p->plan.params}, {"structural", p->plan.structural}, {"family", family->name()}, {"tag", p->tag},
                  {"category", p->category}};
    std::vector<std::string> args = {"checkpoint", "write", "--iter", iter_number_name(next), "--base", base->kernel,
                                     "--bottleneck", bottleneck, "--idea", p->idea, "--expected-gain", p->expected_gain,
                                     "--levers", fmt::format("{}", fmt::join(p->changed, ","))};
    args.push_back("--params");
    args.push_back(dump_compact(p->plan.params));
    if (!p->plan.structural.empty()) {
      args.push_back("--structural");
      args.push_back(p->plan.structural);
    }
    args.push_back("--extra");
    args.push_back(dump_compact(extra));
    must("checkpoint", args);
    event({{"event", "idea"}, {"base", base->kernel}, {"bottleneck", bottleneck}, {"idea", p->idea},
           {"structural", p->structural}});
  }

  // At escalate_streak consecutive rounds not kept: a fresh baseline profile and (GPU dsls) the
  // SASS comparison of the base against the library kernel that profile captured, both newer than
  // the streak. The idea is planned in the same pass.
  void escalate(const ActiveBase& base) {
    bool did = false;
    const bool gpu = task.dsl != "cpp";
    auto abs_path = [&](const std::string& p) {
      fs::path f = p;
      return f.is_relative() ? ws.root() / f : f;
    };
    auto bp = snap.latest_valid(EvidenceKind::baseline_profile);
    bool need_profile = !bp || bp->timestamp < base.streak_since;
    const fs::path baseline_sass = ws.kind_dir(task, ArtifactKind::perf) / "sass_baseline.sass";
    std::error_code ec;
    fs::path report;
    if (!need_profile && gpu && !fs::exists(baseline_sass, ec)) {
      // The baseline's SASS comes from the report of that profile; profile again if it is gone.
      report = abs_path(get_string(bp->summary, "report").value_or(""));
      if (report.empty() || !fs::exists(report, ec)) need_profile = true;
    }
    if (need_profile) {
      VerbResult r = must("profile", {"profile", "--baseline"});
      report = abs_path(get_string(r.doc, "report").value_or(""));
      did = true;
    }
    if (gpu && (need_profile || !fs::exists(baseline_sass, ec))) {
      must("sass", {"sass", "dump", "--baseline", "--report", report.string()});
    }
    if (gpu) {
      auto sc = snap.latest_valid(EvidenceKind::sass_compare);
      if (!sc || sc->timestamp < base.streak_since) {
        ensure_built(base.kernel);  // a workspace carried without its binaries (a sweep resumed elsewhere)
        must("sass", {"sass", "compare", "--iter", base.kernel});
        did = true;
      }
    }
    if (did) event({{"event", "escalation"}, {"base", base.kernel}, {"discard_streak", base.discard_streak}});
  }

  // The open plan of this step's snapshot (a damaged checkpoint is no plan: `croq state` reports it).
  Checkpoint plan(const char* step) const {
    auto cp = snap.open_checkpoint();
    if (!cp) {
      throw Error(ExitCode::internal, fmt::format("{} without an open plan{}", step,
                                                  snap.checkpoint_error().empty() ? "" : ": " + snap.checkpoint_error()));
    }
    return *cp;
  }

  // The kernel built (or to build) for the open plan: <iter>_<tag>, named apart from every stored
  // failure of the same number (failed_kernel_names: their files keep that name) by a count after the
  // tag where needed, so that it writes over none of their files. A source of the plan's own name is
  // the plan's (a step resumed).
  std::string kernel_of_plan(const Checkpoint& cp) {
    const std::string tag = get_string(cp.extra, "tag").value_or("idea");
    const std::set<std::string> failed = failed_kernel_names(snap.records());
    std::string name_tag = tag;
    for (int n = 2; failed.count(cp.iter + "_" + name_tag); ++n) name_tag = fmt::format("{}_{}", tag, n);
    const std::string kernel = cp.iter + "_" + name_tag;
    if (!find_sources(ws, task, kernel).empty()) return kernel;
    VerbResult ni = must("next-iter", {"next-iter", "--tag", name_tag});
    return get_string(ni.doc, "kernel").value_or("");
  }

  void implement() {
    auto cp = std::optional<Checkpoint>(plan("IMPLEMENT"));
    must("checkpoint", {"checkpoint", "read"});
    FamilyConfig cfg = recorded(cp->extra.value("params", json::object()));
    std::string kernel = kernel_of_plan(*cp);
    if (kernel.rfind(cp->iter + "_", 0) != 0) {
      throw Error(ExitCode::internal, fmt::format("next-iter gave {} but the plan is for {}", kernel, cp->iter));
    }
    atomic_write(source_path(kernel), family->render_source(cfg, problem));
    json b = build(kernel, cfg, "");
    std::string verdict = get_string(b, "verdict").value_or("");
    if (verdict != "OK") {
      // croq's search cannot repair code: the idea is abandoned at once.
      std::string tag = kernel.substr(kernel.find('_') + 1);
      call("attempt", {"attempt", "--tag", tag, "--reason", verdict == "" ? "build_error" : to_lower(verdict),
                       "--idea", cp->idea, "--planned-iter", cp->iter});
      store_failure(*cp, kernel, "COMPILE_FAIL", json(nullptr));
    }
  }

  void verify() {
    std::string kernel = kernel_of_plan(plan("VERIFY"));
    VerbResult r = call("verify", {"checkpoint", "verify", "--iter", kernel});
    if (r.exit_code == static_cast<int>(ExitCode::drift)) {
      throw Error(ExitCode::internal, "croq's own candidate drifted from its plan: " + r.doc.dump());
    }
    if (!r.ok()) throw Error(ExitCode::failure, "checkpoint verify failed: " + r.message());
  }

  // Resumed with a built kernel gone (a workspace copied without its binaries, a cleaned bin/):
  // its source is built again (the build cache makes that cheap when it can), the plan's
  // candidate checked against the plan again, as the protocol asks.
  void ensure_built(const std::string& kernel) {
    if (task.dsl != "cuda" && task.dsl != "cpp" && task.dsl != "croqtile") return;  // what croq's search builds
    std::error_code ec;
    if (fs::exists(ws.kind_dir(task, ArtifactKind::bin) / (kernel + ".so"), ec)) return;
    event({{"event", "rebuild"}, {"kernel", kernel}});
    FamilyConfig cfg;
    auto cp = snap.open_checkpoint();
    // The open plan's candidate (not kernel_of_plan, which would reserve an id when no source exists).
    const bool plans_candidate = cp && kernel.rfind(cp->iter + "_", 0) == 0;
    if (plans_candidate) {
      cfg = recorded(cp->extra.value("params", json::object()));
    } else if (const RoundRecord* r = snap.record_of(kernel)) {
      cfg = recorded(r->extra.value("params", json::object()));
    }
    json b = build(kernel, cfg, "");
    if (get_string(b, "verdict").value_or("") != "OK") {
      throw Error(ExitCode::failure, fmt::format("{} was built before, but building it again failed: {}", kernel, b.dump()),
                  "see perf/<key>/<model>/build_<iter>.txt; `croq build --iter " + kernel + "` shows the errors");
    }
    if (plans_candidate) verify();
  }

  void measure_and_store() {
    auto cp = std::optional<Checkpoint>(plan("MEASURE"));
    std::string kernel = kernel_of_plan(*cp);
    ensure_built(kernel);
    VerbResult m = measured("measure", {"measure", "--iter", kernel}, false);

    if (!m.doc.is_object() || !m.doc.contains("verdict")) throw Error(ExitCode::failure, "croq measure failed: " + m.message());
    std::string verdict = get_string(m.doc, "verdict").value_or("");
    if (verdict != "PASS") {
      std::string decision = verdict == "IMPOSSIBLE" || verdict == "UNSUPPORTED" || verdict == "LIBRARY_CALL_FORBIDDEN"
                                 ? "VERIFY_FAIL"
                                 : verdict;
      store_failure(*cp, kernel, decision, m.doc);
      return;
    }
    std::string file = measurement_file(kernel);
    VerbResult d = must("decide", {"decide", "--measurement", file, "--kernel", kernel});
    bool rerun = false;  // decided as a re-run: so are the pairs that settle it
    if (d.doc.value("needs_rerun", false)) {
      event({{"event", "rerun"}, {"kernel", kernel}, {"reason", d.doc.value("reason", "")}});
      measured("measure", {"measure", "--iter", kernel}, true);
      std::string base = d.doc.value("base_kernel", "");
      if (!base.empty()) {
        ensure_built(base);
        measured("measure", {"measure", "--iter", base}, true);
      }
      // Decided as store-round's guard decides: on the new figures first; only where they are still
      // suspicious, as a re-run (against the best's new measurement).
      d = must("decide", {"decide", "--measurement", file, "--kernel", kernel});
      if (d.doc.value("needs_rerun", false)) {
        d = must("decide", {"decide", "--measurement", file, "--kernel", kernel, "--rerun"});
        rerun = true;
      }
    }
    if (d.doc.value("needs_pairs", false)) measure_pairs(kernel, file, d, rerun);
    std::string decision = d.doc.value("decision", "DISCARD");
    store(*cp, kernel, decision, file, d.doc.value("reason", ""));
  }

  // A close call (docs/protocol.md "Decisions"): the best and the candidate measured back to back
  // until the rule's pairs are there, then decided on them. A pair measurement that is not evidence
  // (unstable under load, contended, failed) does not count, so the plan is renewed from what decide
  // still asks for, a bounded number of times; a close call still open after that is stored as the
  // DISCARD decide reports, with its reason.
  // `rerun`: the close call came from a re-run's decision (a suspicious change re-measured), so the
  // pairs are weighed as one too; decided afresh, the first figures' jump would ask for the re-run
  // again and the pairs would never be looked at (a confirmed gain was stored as that pending DISCARD).
  void measure_pairs(const std::string& kernel, const std::string& file, VerbResult& d, bool rerun) {
    constexpr int k_pair_attempts = 3;
    const std::string base = d.doc.value("base_kernel", "");
    if (base.empty() || !d.doc.contains("pairs")) return;
    event({{"event", "close_call"}, {"kernel", kernel}, {"best", base}, {"reason", d.doc.value("reason", "")}});
    ensure_built(base);
    for (int attempt = 0; attempt < k_pair_attempts && d.doc.value("needs_pairs", false) && d.doc.contains("pairs");
         ++attempt) {
      const json& p = d.doc["pairs"];
      const size_t have = p.contains("measured") ? p["measured"].size() : 0;
      const int needed = p.value("needed", 0);
      for (const auto& m : pair_plan(ws, task, kernel, base, have, needed)) {
        measured("measure", {"measure", "--iter", m.kernel, "--out", m.out.string()}, false);
      }
      std::vector<std::string> args = {"decide", "--measurement", file, "--kernel", kernel};
      if (rerun) args.push_back("--rerun");
      d = must("decide", args);
      event({{"event", "paired"}, {"kernel", kernel}, {"decision", d.doc.value("decision", "")},
             {"reason", d.doc.value("reason", "")}});
    }
  }

  void store(const Checkpoint& cp, const std::string& kernel, std::string decision, const std::string& file,
             std::string why) {
    (void)snap.index();  // as before this store: after_store folds the stored record into it
    const std::string category = get_string(cp.extra, "category").value_or("misc");
    auto args = [&] {
      json extra = {{"harness_ms", harness_json()}, {"decision_reason", why}};
      return std::vector<std::string>{"store-round", "--iter", iter_of(kernel), "--kernel", kernel, "--decision",
                                      decision, "--measurement", file, "--bottleneck", cp.bottleneck, "--idea", cp.idea,
                                      "--category", category, "--expected-gain", cp.expected_gain, "--extra",
                                      dump_compact(extra)};
    };
    VerbResult r = call("store", args());
    if (!r.ok() && decision == "KEEP" && refusal_rule(r) == "noise_aware_decision") {
      // store-round's guard weighs the evidence again when the round is stored, and it does not
      // back this KEEP (on a loaded machine a re-run can leave a gain inside the noise margin). The
      // round is stored as the DISCARD the guard offers, with its reason: nothing is kept that the
      // guard does not back, and the tune goes on.
      const std::string refusal = r.doc["error"].value("reason", r.message());
      event({{"event", "keep_refused"}, {"kernel", kernel}, {"reason", refusal}});
      decision = "DISCARD";
      why = "store-round's guard did not back the KEEP: " + refusal;
      r = call("store", args());
    }
    if (!r.ok()) {
      throw Error(ExitCode::failure, fmt::format("croq store-round failed (exit {}): {}", r.exit_code, r.message()),
                  "see the message above; `croq state` shows where the task stands");
    }
    after_store(r, kernel, decision);
  }

  // The protocol rule behind a refusal (exit 5), as croq's CLI writes it in the error; "" otherwise.
  static std::string refusal_rule(const VerbResult& r) {
    if (r.exit_code != static_cast<int>(ExitCode::refused) || !r.doc.is_object() || !r.doc.contains("error") ||
        !r.doc["error"].is_object()) {
      return {};
    }
    return r.doc["error"].value("rule", "");
  }

  void store_failure(const Checkpoint& cp, const std::string& kernel, const std::string& decision, const json& measurement) {
    (void)snap.index();  // as before this store: after_store folds the stored record into it
    std::string category = get_string(cp.extra, "category").value_or("misc");
    std::vector<std::string> args = {"store-round", "--iter", iter_of(kernel), "--kernel", kernel, "--decision", decision,
                                     "--bottleneck", cp.bottleneck, "--idea", cp.idea, "--category", category,
                                     "--extra", dump_compact(json{{"harness_ms", harness_json()}})};
    if (measurement.is_object()) {
      args.push_back("--measurement");
      args.push_back(measurement_file(kernel));
    }
    VerbResult r = must("store", args);
    after_store(r, kernel, decision);
  }

  void after_store(const VerbResult& r, const std::string& kernel, const std::string& decision) {
    ++rounds_this_run;
    call("reinforce", {"reinforce"});  // the protocol's reinforce step after every store; its output is not used here
    json rec = r.doc.value("record", json::object());
    // The index after the store: this step's (loaded before the store), folded with the record the
    // store answered with.
    LedgerIndex idx = snap.index();
    if (auto stored = RoundRecord::from_json(rec)) idx.fold(*stored);
    json e = {{"event", "round"},
              {"round", rec.value("round", 0)},
              {"kernel", kernel},
              {"decision", decision},
              {"tflops", rec.value("tflops", json(nullptr))},
              {"bottleneck", rec.value("bottleneck", "")},
              {"best", idx.best && idx.best->tflops ? json(*idx.best->tflops) : json(nullptr)},
              {"baseline", idx.baseline && idx.baseline->tflops ? json(*idx.baseline->tflops) : json(nullptr)},
              {"harness_ms", harness_json()}};
    // Which of this invocation's rounds it is (its budget counts from the round it started after).
    e["run_round"] = rec.value("round", 0) - static_cast<int>(get_integer(tune_doc, "start_round").value_or(0));
    if (idx.best && idx.best->tflops && idx.baseline && idx.baseline->tflops && *idx.baseline->tflops > 0) {
      e["pct_of_baseline"] = std::round(*idx.best->tflops / *idx.baseline->tflops * 1000.0) / 10.0;
    }
    event(e);
    step_ms.clear();
    if (decision == "KEEP" && opt.git_commit) git_commit(kernel, rec);
  }

  json harness_json() const {
    json j = json::object();
    for (const auto& [k, v] : step_ms) {
      double total = 0;
      for (double x : v) total += x;
      j[k] = std::round(total * 10) / 10;
    }
    return j;
  }

  void git_commit(const std::string& kernel, const json& rec) {
    ProcessSpec add;
    add.argv = {"git", "-C", ws.root().string(), "add", "-A", "tuning/"};
    add.timeout = std::chrono::milliseconds(60000);
    ProcessResult a = runner.run(add);
    ProcessSpec commit;
    double tflops = rec.value("tflops", 0.0);
    commit.argv = {"git", "-C", ws.root().string(), "commit", "-q", "-m",
                   fmt::format("tune({}): {} {} {} - {} {:.2f} TFLOPS (KEEP)\n\n{}", task.dsl, task.shape.op,
                               task.shape.dtype_token, task.shape.text, kernel, tflops, rec.value("idea", ""))};
    commit.timeout = std::chrono::milliseconds(60000);
    ProcessResult c = runner.run(commit);
    event({{"event", "git_commit"}, {"ok", a.ok() && c.ok()}, {"detail", c.ok() ? "" : c.err + c.out}});
  }

  bool exhausted = false;

  json run() {
    problem = problem_from_task(task);
    family = choose_family(opt.family, task.dsl, problem);
    prepare();
    Stopwatch clock;
    int guard = 0;
    while (true) {
      if (++guard > 20 * std::max(1, opt.rounds) + 100) throw Error(ExitCode::internal, "tune made no progress");
      VerbResult st = must("state", {"state"});
      std::string step = st.doc.value("step", "");
      load_snapshot();  // one load per step, after the verbs of the last one
      if (step == "SHAPE_COMPLETE" || exhausted) break;
      if (step == "PREPARE") {
        prepare();
      } else if (step == "PROFILE" || step == "IDEA") {
        idea();
      } else if (step == "IMPLEMENT") {
        implement();
      } else if (step == "VERIFY") {
        verify();
      } else if (step == "MEASURE" || step == "DECIDE") {
        measure_and_store();
      } else if (step == "STORE") {
        Checkpoint cp = plan("STORE");
        store_failure(cp, kernel_of_plan(cp), "COMPILE_FAIL", json(nullptr));
      } else {
        throw Error(ExitCode::internal, "unknown protocol step " + step);
      }
    }
    tune_doc["completed"] = true;
    tune_doc["finished_at"] = now_iso8601();
    save_tune_doc();
    const LedgerIndex& idx = snap.index();
    json summary = {{"task", task.id()},
                    {"family", family->name()},
                    {"seed", opt.seed},
                    {"rounds", idx.max_round},
                    {"rounds_this_run", rounds_this_run},
                    {"best", idx.best ? idx.best->to_json() : json(nullptr)},
                    {"baseline", idx.baseline ? idx.baseline->to_json() : json(nullptr)},
                    {"exhausted", exhausted},
                    {"wall_s", std::round(clock.elapsed_ms() / 100.0) / 10.0}};
    summary["decisions"] = json::object();
    for (const auto& [k, v] : idx.decisions) summary["decisions"][k] = v;
    if (idx.best && idx.best->tflops && idx.baseline && idx.baseline->tflops && *idx.baseline->tflops > 0) {
      summary["pct_of_baseline"] = std::round(*idx.best->tflops / *idx.baseline->tflops * 1000.0) / 10.0;
    }
    if (idx.best) {
      // The best kernel's source and parameters, for the final summary.
      if (auto src = find_primary_source(ws, task, idx.best->kernel)) summary["best_source"] = ws.display(*src);
      if (const RoundRecord* r = snap.record_of(idx.best->kernel); r && r->extra.contains("params")) {
        summary["best_params"] = r->extra["params"];
      }
    }
    event({{"event", "done"}, {"summary", summary}});
    return summary;
  }
};

Tuner::Tuner(VerbClient& client, ProcessRunner& runner, const Workspace& ws, TaskRef task, TuneOptions options,
             Progress progress)
    : m(std::make_shared<Impl>(client, runner, ws, std::move(task), std::move(options), std::move(progress))) {}

json Tuner::run() { return m->run(); }

}  // namespace croq
