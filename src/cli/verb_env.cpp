// Placeholder: replaced by the component's implementation.
#include "cli/verbs.hpp"

namespace croq::cli {

VerbRunner setup_env_validate(CLI::App&) {
  return [](Context&) -> ExitCode {
    throw Error(ExitCode::internal, "croq env validate is not built yet");
  };
}

}  // namespace croq::cli
