// Placeholder: replaced by the component's implementation.
#include "cli/verbs.hpp"

namespace croq::cli {

VerbRunner setup_measure(CLI::App&) {
  return [](Context&) -> ExitCode {
    throw Error(ExitCode::internal, "croq measure is not built yet");
  };
}

VerbRunner setup_baseline(CLI::App&) {
  return [](Context&) -> ExitCode {
    throw Error(ExitCode::internal, "croq baseline is not built yet");
  };
}

}  // namespace croq::cli
