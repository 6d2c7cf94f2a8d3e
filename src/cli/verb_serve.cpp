// Placeholder: replaced by the component's implementation.
#include "cli/verbs.hpp"

namespace croq::cli {

VerbRunner setup_serve(CLI::App&) {
  return [](Context&) -> ExitCode {
    throw Error(ExitCode::internal, "croq serve is not built yet");
  };
}

VerbRunner setup_report(CLI::App&) {
  return [](Context&) -> ExitCode {
    throw Error(ExitCode::internal, "croq report is not built yet");
  };
}

}  // namespace croq::cli
