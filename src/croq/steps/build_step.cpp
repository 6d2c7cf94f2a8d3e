// croq build as a function (build_step.hpp).
#include "croq/steps/build_step.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "croq/build/toolchain.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/protocol/evidence.hpp"
#include "croq/protocol/protocol.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/hash.hpp"
#include "croq/workspace/ids.hpp"

namespace croq {

StepResult run_build(const Workspace& ws, const TaskRef& task, const BuildStepOptions& o, const StepDeps& deps) {
  auto note = [&](const std::string& line) {
    if (deps.note) deps.note(line);
  };
  Toolchain tc = Toolchain::from_env();
  CompilerVersions versions(ws.tuning_dir() / ".cache" / "compilers.json");

  // Resolve every target first: a typo in one --iter changes nothing.
  std::vector<BuildTarget> targets;
  for (const auto& it : o.iters) targets.push_back(locate_build_target(ws, task, it));
  // The protocol: a build implements the open plan (no-op for advisory tasks). The one other
  // build allowed is restoring a stored kernel's lost binary (a workspace copied without bin/):
  // its source is built again so that it can be re-measured or profiled as a base.
  std::set<std::string> stored;
  for (const auto& r : Ledger(ws, task).read_all().records) {
    if (r.decision == Decision::KEEP) stored.insert(r.kernel);
  }
  for (const auto& t : targets) {
    std::error_code ec;
    const bool restore = stored.count(t.kernel) > 0 &&
                         !std::filesystem::exists(ws.kind_dir(task, ArtifactKind::bin) / (t.kernel + ".so"), ec);
    if (restore) continue;
    if (auto id = try_parse_iter_id(t.kernel)) guard_implement(ws, task, id->number, false);
    else guard_implement(ws, task, 0, true);
  }

  std::vector<json> docs(targets.size());
  std::vector<std::exception_ptr> failures(targets.size());
  std::atomic<size_t> next{0};
  std::mutex note_mutex;
  auto worker = [&] {
    for (size_t i = next++; i < targets.size(); i = next++) {
      try {
        docs[i] = build_target(ws, targets[i], o.options, tc, versions);
        std::lock_guard<std::mutex> lock(note_mutex);
        note(fmt::format("[build] {} {} in {:.0f} ms{}", targets[i].kernel, docs[i].value("verdict", ""),
                             docs[i].value("total_ms", 0.0), docs[i].value("cached", false) ? " (cached)" : ""));
        if (docs[i].contains("warnings") && docs[i]["warnings"].is_array()) {
          for (const auto& w : docs[i]["warnings"]) {
            if (w.is_string()) note(fmt::format("[build] warning: {}", w.get<std::string>()));
          }
        }
        // The compiler's errors, where a person sees them (the JSON has them as `errors`).
        if (docs[i].value("verdict", "") != "OK" && docs[i].contains("errors") && docs[i]["errors"].is_array()) {
          for (const auto& e : docs[i]["errors"]) note("  " + (e.is_string() ? e.get<std::string>() : e.dump()));
          if (docs[i].contains("log")) note("  (whole log: " + docs[i].value("log", "") + ")");
        }
      } catch (...) {
        failures[i] = std::current_exception();
      }
    }
  };
  size_t n_threads = std::min<size_t>(size_t(std::max(1, o.jobs)), targets.size());
  std::vector<std::thread> threads;
  for (size_t i = 1; i < n_threads; ++i) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  for (auto& f : failures) {
    if (f) std::rethrow_exception(f);
  }

  // Evidence for the protocol: what was built from which source.
  for (size_t i = 0; i < targets.size(); ++i) {
    json summary = {{"verdict", docs[i].value("verdict", "")}, {"source", ws.display(targets[i].source)},
                    {"source_sha256", sha256_file(targets[i].source)}};
    if (docs[i].contains("outputs") && docs[i]["outputs"].is_array() && !docs[i]["outputs"].empty()) {
      std::string out = docs[i]["outputs"].back().get<std::string>();
      for (const auto& x : docs[i]["outputs"]) {
        std::string s = x.get<std::string>();
        if (s.size() > 3 && s.compare(s.size() - 3, 3, ".so") == 0) out = s;
      }
      fs::path op = fs::path(out).is_absolute() ? fs::path(out) : ws.root() / out;
      std::error_code ec;
      if (fs::exists(op, ec)) {
        summary["output"] = out;
        summary["output_sha256"] = sha256_file(op);
      }
    }
    fs::path doc_file = ws.kind_dir(task, ArtifactKind::perf) / ("build_" + targets[i].kernel + ".json");
    std::error_code ec;
    if (!fs::exists(doc_file, ec)) atomic_write(doc_file, dump_pretty(docs[i]));
    record_evidence(ws, task, EvidenceKind::build, targets[i].kernel, doc_file, summary);
  }

  bool all_ok = true;
  for (const auto& d : docs) all_ok = all_ok && d.value("verdict", "") == "OK";
  StepResult res;
  if (docs.size() == 1) {
    res.doc = docs.front();
  } else {
    json builds = json::array();
    for (auto& d : docs) builds.push_back(d);
    res.doc = json{{"verdict", all_ok ? "OK" : "FAILED"}, {"builds", builds}};
  }
  res.code = all_ok ? ExitCode::ok : ExitCode::candidate_failed;
  return res;
}

}  // namespace croq
