// croq measure --pairs and croq round: the mechanical steps of a round, run as croq's own verbs in
// child processes (as an agent would run them), so that every guard applies unchanged.
#include <memory>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/ledger/documents.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/protocol/command.hpp"
#include "croq/protocol/protocol.hpp"
#include "croq/search/verb_client.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"
#include "croq/workspace/ids.hpp"
#include "croq/workspace/sources.hpp"

namespace croq::cli {

namespace {

std::vector<std::string> task_words(const TaskRef& t) {
  return {"--gpu", t.gpu, "--dsl", t.dsl, "--shape-key", t.shape.text, "--model", t.model};
}

struct Steps {
  Context& ctx;
  TaskRef task;
  SelfExecClient client;
  json log = json::array();

  Steps(Context& c, TaskRef t) : ctx(c), task(std::move(t)), client(process_runner(), self_exe_dir() / "croq", c.ws().root()) {}

  // Runs `croq <verb> <task> args...`; records the step.
  VerbResult call(const std::string& step, std::vector<std::string> args) {
    std::vector<std::string> argv;
    size_t words = args.front() == "checkpoint" ? 2 : 1;
    argv.insert(argv.end(), args.begin(), args.begin() + static_cast<long>(words));
    auto tw = task_words(task);
    argv.insert(argv.end(), tw.begin(), tw.end());
    argv.insert(argv.end(), args.begin() + static_cast<long>(words), args.end());
    VerbResult r = client.call(argv, std::chrono::seconds(3600));
    json entry = {{"step", step}, {"exit_code", r.exit_code}, {"command", "croq " + shell_join(argv)}};
    if (!r.ok()) entry["error"] = r.message();
    log.push_back(entry);
    ctx.note(fmt::format("[{}] {} -> exit {}{}", step, entry["command"].get<std::string>(), r.exit_code,
                         r.ok() ? "" : ": " + r.message()));
    return r;
  }
};

// Measures what the decision needs (a back-to-back re-run, or the close call's pairs) and decides.
// Returns decide's JSON (pending only if a measurement failed).
json measure_pairs(Steps& s, const std::string& kernel) {
  // The candidate's own measurement first, if there is none since its build.
  // Decided on the candidate's own measurement (measure_<kernel>.json), as croq decide does by
  // default; the pairs' files are read from the evidence.
  const fs::path own = s.ctx.ws().kind_dir(s.task, ArtifactKind::perf) / ("measure_" + kernel + ".json");
  auto decide_now = [&](bool rerun) {
    std::vector<std::string> a = {"decide", "--kernel", kernel, "--measurement", own.string()};
    if (rerun) a.push_back("--rerun");
    return s.call("decide", a);
  };
  std::error_code ec;
  if (!fs::exists(own, ec)) {
    VerbResult m = s.call("measure", {"measure", "--iter", kernel});
    if (!m.ok()) return m.doc;
  }
  VerbResult d = decide_now(false);
  if (!d.ok()) return d.doc;
  bool rerun = false;
  if (d.doc.value("needs_rerun", false)) {
    // A suspicious change: the candidate and the best measured again back to back.
    const std::string base = d.doc.value("base_kernel", "");
    VerbResult m = s.call("measure", {"measure", "--iter", kernel});
    if (!m.ok()) return m.doc;
    if (!base.empty()) {
      VerbResult b = s.call("measure", {"measure", "--iter", base});
      if (!b.ok()) return b.doc;
    }
    rerun = true;
    d = decide_now(true);
    if (!d.ok()) return d.doc;
  }
  if (d.doc.value("needs_pairs", false)) {
    const std::string base = d.doc.value("base_kernel", "");
    const json& p = d.doc.contains("pairs") ? d.doc["pairs"] : json::object();
    const size_t have = p.contains("measured") ? p["measured"].size() : 0;
    const int needed = p.value("needed", 0);
    for (const auto& m : pair_plan(s.ctx.ws(), s.task, kernel, base, have, needed)) {
      VerbResult r = s.call("measure pair", {"measure", "--iter", m.kernel, "--out", m.out.string()});
      if (!r.ok()) return r.doc;
    }
    d = decide_now(rerun);
  }
  return d.doc;
}

}  // namespace

ExitCode run_measure_pairs(Context& ctx, const TaskRef& t, const std::string& kernel) {
  Steps s(ctx, t);
  json d = measure_pairs(s, kernel);
  json doc = d.is_object() ? d : json::object();
  doc["steps"] = s.log;
  ctx.emit(doc);
  if (doc.contains("error")) {
    return static_cast<ExitCode>(doc["error"].value("exit_code", static_cast<int>(ExitCode::failure)));
  }
  return ExitCode::ok;
}

VerbRunner setup_round(CLI::App& app) {
  struct Opts {
    TaskOptions task;
    std::string iter;
    bool no_store = false;
  };
  auto o = std::make_shared<Opts>();
  add_task_options(app, o->task);
  app.add_option("--iter", o->iter, "the candidate iter<NNN>_<tag> (default: the open plan's source in srcs/)");
  app.add_flag("--no-store", o->no_store, "stop after the decision (store-round is left to you)");
  return [o](Context& ctx) {
    TaskRef t = resolve_task(ctx, o->task);
    Workspace& ws = ctx.ws();
    std::string kernel = o->iter;
    std::optional<Checkpoint> cp;
    try {
      cp = read_checkpoint(ws, t);
    } catch (const Error& e) {
      ctx.note(std::string("round: the plan (checkpoint) could not be read and is ignored: ") + e.what() +
               " (croq session validate names the damage)");
    }
    if (kernel.empty()) {
      if (cp && cp->open()) {
        if (auto src = find_live_source(ws, t, cp->iter)) kernel = src->stem().string();
      }
      if (kernel.empty()) {
        // PREPARE: the starting kernel.
        if (!Ledger(ws, t).index().best) {
          if (auto src = find_live_source(ws, t, "iter001")) kernel = src->stem().string();
        }
      }
      if (kernel.empty()) {
        TaskState st = derive_state(ws, t);
        throw Error(ExitCode::not_found, "no candidate to run the round on: no open plan with a source in srcs/",
                    "the round starts after IMPLEMENT; croq state says: " + st.next_action);
      }
    }
    auto id = try_parse_iter_id(kernel);
    if (!id || id->tag.empty()) throw_usage("--iter " + kernel + " is not a kernel name", "pass --iter iter<NNN>_<tag>");
    const bool prepare = !Ledger(ws, t).index().best;
    Steps s(ctx, t);
    json doc = {{"kernel", kernel}, {"prepare", prepare}};
    auto finish = [&](const std::string& stopped_at, const VerbResult& r) {
      doc["steps"] = s.log;
      doc["stopped_at"] = stopped_at;
      doc["ok"] = stopped_at.empty();
      if (!stopped_at.empty()) {
        doc["error"] = r.doc.is_object() && r.doc.contains("error") ? r.doc["error"] : json(r.message());
        doc["next_action"] = derive_state(ws, t).next_action;
      }
      ctx.emit(doc);
      return stopped_at.empty() ? ExitCode::ok
                                : static_cast<ExitCode>(r.exit_code > 0 && r.exit_code < 12 ? r.exit_code : 1);
    };
    VerbResult b = s.call("build", {"build", "--iter", kernel});
    doc["build"] = b.doc;
    if (!b.ok()) return finish("build", b);
    if (!prepare) {
      VerbResult v = s.call("verify", {"checkpoint", "verify", "--iter", kernel});
      if (!v.ok()) return finish("verify", v);
    }
    VerbResult m = s.call("measure", {"measure", "--iter", kernel});
    doc["measurement"] = m.doc;
    const std::string verdict = m.doc.is_object() ? m.doc.value("verdict", "") : "";
    if (!m.ok() && (verdict.empty() || verdict == "PASS")) return finish("measure", m);
    std::string file = m.doc.is_object() && m.doc.contains("files") ? m.doc["files"].value("measurement", "") : "";
    std::string decision;
    if (verdict == "PASS") {
      if (prepare) {
        decision = "KEEP";
      } else {
        json d = measure_pairs(s, kernel);
        doc["decide"] = d;
        decision = d.is_object() ? d.value("decision", "") : "";
        if (decision != "KEEP" && decision != "DISCARD") {
          VerbResult r;
          r.exit_code = d.is_object() && d.contains("error") ? d["error"].value("exit_code", 1) : 1;
          r.doc = d;
          return finish("decide", r);
        }
      }
    }
    if (o->no_store) return finish({}, m);
    std::vector<std::string> store = {"store-round", "--iter", id->number_name(), "--kernel", kernel, "--measurement", file};
    if (!decision.empty()) store.insert(store.end(), {"--decision", decision});
    if (prepare) store.insert(store.end(), {"--round", "0"});
    VerbResult st = s.call("store", store);
    doc["store"] = st.doc;
    if (!st.ok()) return finish("store", st);
    doc["decision"] = st.doc.contains("record") ? st.doc["record"].value("decision", decision) : decision;
    doc["next_action"] = derive_state(ws, t).next_action;
    return finish({}, st);
  };
}

}  // namespace croq::cli
