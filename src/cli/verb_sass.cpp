// Placeholder: replaced by the component's implementation.
#include "cli/verbs.hpp"

namespace croq::cli {

VerbRunner setup_sass_dump(CLI::App&) {
  return [](Context&) -> ExitCode {
    throw Error(ExitCode::internal, "croq sass dump is not built yet");
  };
}

VerbRunner setup_sass_compare(CLI::App&) {
  return [](Context&) -> ExitCode {
    throw Error(ExitCode::internal, "croq sass compare is not built yet");
  };
}

}  // namespace croq::cli
