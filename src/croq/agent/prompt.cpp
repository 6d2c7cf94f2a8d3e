// The prompts of agent sessions (prompt.hpp).
#include "croq/agent/prompt.hpp"

#include <fmt/format.h>

#include "croq/ledger/ledger.hpp"
#include "croq/protocol/evidence.hpp"
#include "croq/protocol/history.hpp"
#include "croq/protocol/protocol.hpp"
#include "croq/protocol/stop.hpp"
#include "croq/session/resume.hpp"

namespace croq::agent {

namespace {

std::string task_options(const TaskRef& t) {
  return fmt::format("--gpu {} --dsl {} --shape-key {} --model {}", t.gpu, t.dsl, t.shape.text, t.model);
}

std::string str_or(const json& j, const char* key, const std::string& fallback = "none") {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

}  // namespace

ResumeSummary resume_summary(const Workspace& ws, const TaskRef& task) {
  json resume = resume_state(ws, task);
  TaskState state = derive_state(ws, task);
  StopCheck stop = stop_condition(ws, task, state);
  std::string t;
  t += fmt::format("Task {} (task uid {}).\n", task.id(), str_or(resume, "task_uid"));
  t += fmt::format("Best: {} at {} TFLOPS; baseline {} TFLOPS.\n", str_or(resume, "current_best_kernel"),
                   str_or(resume, "current_best_tflops"), str_or(resume, "baseline_tflops"));
  t += fmt::format("Last stored round: {} ({} {} {}). Next iteration number: {}.\n", str_or(resume, "last_round", "0"),
                   str_or(resume, "last_iter"), str_or(resume, "last_decision"), str_or(resume, "last_bottleneck"),
                   str_or(resume, "next_iter_number"));
  // The immediate next action first: it is what a driver that lost its context needs most.
  t = fmt::format("NEXT: {} (protocol step {}).\n", state.next_action, step_name(state.step)) + t;
  // The last rounds, so the session knows which ideas were tried.
  Ledger ledger(ws, task);
  json recent = json::array();
  json bases_json = json::array();
  if (ledger.exists()) {
    History history = History::load(ledger);
    const ProtocolConfig cfg = config_or_default(ws, task);
    auto bases = history.active_bases(static_cast<size_t>(cfg.max_active_bases));
    if (!bases.empty()) t += "Active bases (derive every candidate from one of them):\n";
    for (const auto& b : bases) {
      bases_json.push_back(b.to_json());
      t += fmt::format("  {} at {:.2f} TFLOPS, {} round(s) not kept since its last KEEP\n", b.kernel, b.tflops,
                       b.discard_streak);
    }
    if (history.macro_streak() >= cfg.macro_streak_limit) {
      t += fmt::format("  strategy: the last {} rounds were macro-only; the next must be structural\n",
                       history.macro_streak());
    }
    auto records = ledger.tail(10);
    if (!records.empty()) t += "Recent rounds:\n";
    for (size_t i = 0; i < records.size(); ++i) {
      const auto& r = records[i];
      json rj = r.to_json();
      recent.push_back(rj);
      t += fmt::format("  round {} {} {} {} TFLOPS: {}\n", str_or(rj, "round"), str_or(rj, "kernel"),
                       str_or(rj, "decision"), str_or(rj, "tflops"), str_or(rj, "idea"));
    }
  }
  if (resume.contains("open_checkpoint") && !resume["open_checkpoint"].is_null()) {
    t += fmt::format("Open plan (checkpoint): {}\n", resume["open_checkpoint"].dump());
  }
  if (resume.contains("warnings") && !resume["warnings"].empty()) {
    t += fmt::format("Warnings to address first: {}\n", resume["warnings"].dump());
  }
  t += fmt::format("Protocol step now: {}. Next: {}\n", step_name(state.step), state.next_action);
  for (const auto& n : state.notes) t += "  strategy note: " + n + "\n";
  t += fmt::format("Stop allowed: {} ({}).\n", stop.stop_allowed ? "yes" : "no", stop.reason);
  // The files to re-read, newest evidence first.
  json files = json::array();
  files.push_back(ws.display(ws.idea_log(task)));
  files.push_back(ws.display(ws.results_tsv(task)));
  if (auto prof = latest_valid_evidence(ws, task, EvidenceKind::profile)) files.push_back(prof->file);
  const fs::path checkpoint = ws.kind_dir(task, ArtifactKind::checkpoints) / "current_idea.json";
  std::error_code ec;
  if (fs::exists(checkpoint, ec)) files.push_back(ws.display(checkpoint));
  t += "Re-read: ";
  for (size_t i = 0; i < files.size(); ++i) t += (i ? ", " : "") + files[i].get<std::string>();
  t += "\n";
  t += "Do not: type a TFLOPS number (store with --measurement); repeat a stored combination; plan an idea without "
       "a profile of the current best newer than the last KEEP; store a round that was not measured from the built "
       "source; stop before `stop allowed` says yes.\n";
  json doc = {{"text", t},          {"resume", resume},  {"state", state.to_json()}, {"recent", recent},
              {"active_bases", bases_json}, {"files", files},
              {"stop_allowed", stop.stop_allowed}, {"stop_reason", stop.reason}};
  return {t, doc};
}

std::string initial_prompt(const Workspace& ws, const TaskRef& task, const PromptContext& ctx) {
  std::string opts = task_options(task);
  return fmt::format(
      "Tune the kernel task {shape} with croq: dsl {dsl}, device key {gpu}, model name {model}, task uid {uid}.\n"
      "Read {skills}/croq-tune/SKILL.md and {skills}/croq-dsl-{dsl}/SKILL.md first and follow them.\n"
      "The workspace root is {root}; croq is `{croq}`. Pass these task options to every task verb:\n"
      "  {opts}\n"
      "Begin with `croq state {opts}`: its JSON names the step and the exact next command (`next_action`).\n"
      "When croq refuses a step (exit 5) its JSON says which rule and what to do instead: do that.\n"
      "Never type a TFLOPS number: store rounds with `croq store-round ... --measurement <file from croq measure>`.\n"
      "Do not ask questions and do not stop until `croq state {opts}` says `stop_allowed: true`.\n",
      fmt::arg("shape", task.shape.text), fmt::arg("dsl", task.dsl), fmt::arg("gpu", task.gpu),
      fmt::arg("model", task.model), fmt::arg("uid", ctx.task_uid.empty() ? "(none)" : ctx.task_uid),
      fmt::arg("skills", ctx.skills_dir), fmt::arg("root", ws.root().string()), fmt::arg("croq", ctx.croq_exe),
      fmt::arg("opts", opts));
}

std::string resume_prompt(const Workspace& ws, const TaskRef& task, const PromptContext& ctx) {
  return initial_prompt(ws, task, ctx) +
         "\nYou are resuming: an earlier session ended before the stop condition held. Where the task stands "
         "(`croq resume --summary`):\n\n" +
         resume_summary(ws, task).text;
}

}  // namespace croq::agent
