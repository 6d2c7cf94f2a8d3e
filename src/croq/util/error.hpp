// Errors, in the three tiers of STYLE.md:
//  (1) expected failures return a value (croq::Result, see result.hpp);
//  (2) a candidate's failure is data (a verdict, see measure/verdict.hpp);
//  (3) misuse and fatal conditions throw croq::Error, caught once in main, which prints one line
//      saying what went wrong and what to do, and exits with the error's documented code.
#pragma once
#include <stdexcept>
#include <string>

#include "croq/util/json.hpp"

namespace croq {

// Process exit codes of every croq verb (documented in docs/cli.md).
enum class ExitCode : int {
  ok = 0,
  failure = 1,        // the verb ran but its outcome is a failure (e.g. validation found errors)
  usage = 2,          // bad arguments or bad input: nothing was changed
  drift = 3,          // checkpoint verify: significant drift between plan and build (seed contract)
  not_found = 4,      // the task, record or file asked for does not exist
  refused = 5,        // the protocol refused the step (see the JSON reason)
  busy = 6,           // a lock or GPU lease could not be taken in time
  no_device = 7,      // no GPU (or the tool it needs) is available
  candidate_failed = 8,  // the candidate did not build, verify or run (its verdict is in the JSON)
  conflict = 9,       // the record already exists (e.g. store-round of an iteration already stored)
  corrupt = 10,       // a stored file is damaged beyond what the tolerant readers accept
  internal = 70,      // a bug in croq
};

const char* exit_code_name(ExitCode code);

// A fatal condition: a message (what went wrong), a hint (what to do) and an exit code.
class Error : public std::runtime_error {
 public:
  Error(ExitCode code, std::string message, std::string hint = {}, json details = nullptr)
      : std::runtime_error(std::move(message)), m_code(code), m_hint(std::move(hint)), m_details(std::move(details)) {}
  ExitCode code() const { return m_code; }
  const std::string& hint() const { return m_hint; }
  // Structured detail for the JSON error document (e.g. the protocol's refusal: step, rule).
  const json& details() const { return m_details; }

 private:
  ExitCode m_code;
  std::string m_hint;
  json m_details;
};

// Shorthands for the common kinds.
[[noreturn]] void throw_usage(std::string message, std::string hint = {});
[[noreturn]] void throw_not_found(std::string message, std::string hint = {});
[[noreturn]] void throw_corrupt(std::string message, std::string hint = {});

}  // namespace croq
