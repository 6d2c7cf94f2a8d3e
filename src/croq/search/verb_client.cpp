// The self-exec verb client (verb_client.hpp).
#include "croq/search/verb_client.hpp"

#include <signal.h>

#include "croq/util/process.hpp"

namespace croq {

std::string VerbResult::message() const {
  if (doc.is_object() && doc.contains("error") && doc["error"].is_object()) {
    std::string m = get_string(doc["error"], "message").value_or("");
    if (auto h = get_string(doc["error"], "hint")) m += " (" + *h + ")";
    return m;
  }
  return err;
}

SelfExecClient::SelfExecClient(ProcessRunner& runner, std::filesystem::path croq_exe, std::filesystem::path root)
    : m_runner(runner), m_exe(std::move(croq_exe)), m_root(std::move(root)) {}

VerbResult SelfExecClient::call(const std::vector<std::string>& args, std::chrono::seconds timeout) {
  ProcessSpec spec;
  spec.argv = {m_exe.string(), "--root", m_root.string(), "-q"};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  // A driver killed outright (croq sweep or croq tune under SIGKILL) takes its step with it; the
  // records are crash-safe, and the next run resumes from the evidence.
  spec.parent_death_signal = SIGKILL;
  ProcessResult r = m_runner.run(spec);
  VerbResult v;
  v.wall_ms = r.wall_ms;
  v.err = r.err;
  if (!r.started) {
    v.exit_code = -1;
    v.err = r.spawn_error;
    return v;
  }
  v.exit_code = r.timed_out ? 124 : (r.term_signal ? 128 + r.term_signal : r.exit_code);
  if (auto j = try_parse_json(r.out)) v.doc = *j;
  return v;
}

}  // namespace croq
