// Suggested croq command lines (command.hpp).
#include "croq/protocol/command.hpp"

#include <cstdlib>
#include <fstream>

#include "croq/util/json.hpp"
#include "croq/util/process.hpp"

namespace croq {

CroqCommand::CroqCommand(std::string verb, std::source_location site) : m_verb(std::move(verb)), m_site(site) {}

CroqCommand& CroqCommand::task(const TaskRef& t) {
  opt("--gpu", t.gpu);
  opt("--dsl", t.dsl);
  opt("--shape-key", t.shape.text);
  opt("--model", t.model);
  return *this;
}

CroqCommand& CroqCommand::opt(const std::string& flag, const std::string& value) {
  m_words.push_back(flag);
  m_words.push_back(value);
  return *this;
}

CroqCommand& CroqCommand::opt(const std::string& flag, long long value) { return opt(flag, std::to_string(value)); }

CroqCommand& CroqCommand::flag(const std::string& f) {
  m_words.push_back(f);
  return *this;
}

bool is_placeholder(const std::string& value) {
  return value.find('<') != std::string::npos && !value.empty() && value.back() == '>' &&
         value.find_first_of("'\"$`\\") == std::string::npos;
}

std::string CroqCommand::text() const {
  std::string s = "croq " + m_verb;
  for (const auto& w : m_words) {
    if (!is_placeholder(w)) s += " " + shell_quote(w);
    else if (w.find(' ') != std::string::npos) s += " \"" + w + "\"";
    else s += " " + w;
  }
  if (const char* log = std::getenv("CROQ_SUGGESTION_LOG"); log && *log) {
    json line = {{"site", std::string(m_site.file_name()) + ":" + std::to_string(m_site.line())},
                 {"verb", m_verb},
                 {"command", s}};
    std::ofstream f(log, std::ios::app);
    f << dump_compact(line) << "\n";
  }
  return s;
}

std::string then(const std::vector<std::string>& steps) {
  std::string s;
  for (size_t i = 0; i < steps.size(); ++i) s += (i == 0 ? "" : i + 1 == steps.size() ? "; then " : "; ") + steps[i];
  return s;
}

}  // namespace croq
