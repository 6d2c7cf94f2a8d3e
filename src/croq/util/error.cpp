// Exit-code names and the throw helpers of error.hpp.
#include "croq/util/error.hpp"

namespace croq {

const char* exit_code_name(ExitCode code) {
  switch (code) {
    case ExitCode::ok: return "ok";
    case ExitCode::failure: return "failure";
    case ExitCode::usage: return "usage";
    case ExitCode::drift: return "drift";
    case ExitCode::not_found: return "not_found";
    case ExitCode::refused: return "refused";
    case ExitCode::busy: return "busy";
    case ExitCode::no_device: return "no_device";
    case ExitCode::candidate_failed: return "candidate_failed";
    case ExitCode::conflict: return "conflict";
    case ExitCode::corrupt: return "corrupt";
    case ExitCode::internal: return "internal";
  }
  return "unknown";
}

void throw_usage(std::string message, std::string hint) {
  throw Error(ExitCode::usage, std::move(message), std::move(hint));
}
void throw_not_found(std::string message, std::string hint) {
  throw Error(ExitCode::not_found, std::move(message), std::move(hint));
}
void throw_corrupt(std::string message, std::string hint) {
  throw Error(ExitCode::corrupt, std::move(message), std::move(hint));
}

}  // namespace croq
