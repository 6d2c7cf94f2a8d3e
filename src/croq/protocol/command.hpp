// A croq command line that croq prints for its user to run: a state's next action, a refusal's
// way out, a hint. Built from the verb and its options as data, never typed as text, so that one
// test runs every suggestion through croq's own parser (tests/cli/suggestions_cli_test.cpp) and
// a verb or option that does not exist cannot be suggested.
//
// A value written as <name> is a placeholder the user fills in (`--tag <tag>`); every other value
// is shell-quoted. With CROQ_SUGGESTION_LOG set, every command rendered is appended to that file as
// one JSON line {site, command} (the test's way to collect what croq suggested).
#pragma once
#include <source_location>
#include <string>
#include <utility>
#include <vector>

#include "croq/workspace/workspace.hpp"

namespace croq {

class CroqCommand {
 public:
  explicit CroqCommand(std::string verb, std::source_location site = std::source_location::current());

  // --gpu --dsl --shape-key --model of the task.
  CroqCommand& task(const TaskRef& t);
  CroqCommand& opt(const std::string& flag, const std::string& value);
  CroqCommand& opt(const std::string& flag, long long value);
  CroqCommand& flag(const std::string& flag);

  const std::string& verb() const { return m_verb; }
  const std::vector<std::string>& words() const { return m_words; }  // after the verb
  // "croq <verb> <words>", quoted for a POSIX shell (placeholders left as they are).
  std::string text() const;
  operator std::string() const { return text(); }

 private:
  std::string m_verb;
  std::vector<std::string> m_words;
  std::source_location m_site;
};

// Several commands to run in order, as one line ("A; then B").
std::string then(const std::vector<std::string>& steps);

// True for a placeholder value "<name>" (or "<name>_<tag>" forms like "iter002_<tag>").
bool is_placeholder(const std::string& value);

}  // namespace croq
