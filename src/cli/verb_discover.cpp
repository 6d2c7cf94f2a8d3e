// Placeholder: replaced by the component's implementation.
#include "cli/verbs.hpp"

namespace croq::cli {

VerbRunner setup_discover(CLI::App&) {
  return [](Context&) -> ExitCode {
    throw Error(ExitCode::internal, "croq discover is not built yet");
  };
}

VerbRunner setup_prepare(CLI::App&) {
  return [](Context&) -> ExitCode {
    throw Error(ExitCode::internal, "croq prepare is not built yet");
  };
}

}  // namespace croq::cli
