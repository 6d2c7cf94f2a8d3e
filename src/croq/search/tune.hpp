// `croq tune`: croq's own driver of the tuning loop. It is a client of the protocol like any
// agent: every step is a croq verb run as a child process (VerbClient), so the same guards,
// records and evidence apply. The loop asks `croq state` what comes next and does it, which makes
// a killed run resume exactly where it stopped.
//
// logs/<key>/<model>/tune.json (croq-tune-v1) records the invocation: seed, family, round budget,
// the round it started from, and whether it completed.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "croq/search/family.hpp"
#include "croq/search/verb_client.hpp"
#include "croq/util/json.hpp"
#include "croq/util/process.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq {

struct TuneOptions {
  std::string shape_key;
  std::string dsl;
  std::string model = "croq-search";
  std::string gpu;         // device key (resolved by the caller)
  std::string family;      // empty: the dsl's default family for the problem
  std::string task_uid;
  int rounds = 50;
  uint64_t seed = 0;       // 0: a fresh seed (recorded)
  double explore = 0.15;
  bool git_commit = false;
  std::string profile_preset = "full";  // croq profile --preset: full or quick (GPU dsls)
  std::chrono::seconds step_timeout{900};
  // The starting kernel's parameters (a family configuration as recorded in `params`), from the
  // best kernel of another shape (croq sweep --mode from-current-best); empty: the family's
  // default. An illegal configuration for this problem falls back to the default.
  json start_params;
  std::string start_from;  // what they come from, for the record's idea ("<shape> <kernel>")
};

// Picks the family for a problem (throws Error(usage) when none supports it).
std::shared_ptr<KernelFamily> choose_family(const std::string& requested, const std::string& dsl, const FamilyProblem& p);
FamilyProblem problem_from_task(const TaskRef& task);

class Tuner {
 public:
  using Progress = std::function<void(const json& event)>;
  // `client` runs croq's verbs (SelfExecClient: as child processes; a fake in tests), `runner` the
  // tuner's own commands (git for --git-commit).
  Tuner(VerbClient& client, ProcessRunner& runner, const Workspace& ws, TaskRef task, TuneOptions options,
        Progress progress);
  // Runs until the round budget is met or no idea is left; returns the summary document. PREPARE
  // stores the first starting kernel that passes (the family's default, else its alternatives in
  // order) and stops with an error naming each failure only when none does.
  json run();

 private:
  struct Impl;
  std::shared_ptr<Impl> m;
};

}  // namespace croq
