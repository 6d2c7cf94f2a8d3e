// Placeholder: replaced by the component's implementation.
#include "cli/verbs.hpp"

namespace croq::cli {

VerbRunner setup_gpu_key(CLI::App&) {
  return [](Context&) -> ExitCode {
    throw Error(ExitCode::internal, "croq gpu key is not built yet");
  };
}

VerbRunner setup_gpu_check(CLI::App&) {
  return [](Context&) -> ExitCode {
    throw Error(ExitCode::internal, "croq gpu check is not built yet");
  };
}

VerbRunner setup_gpu_contention(CLI::App&) {
  return [](Context&) -> ExitCode {
    throw Error(ExitCode::internal, "croq gpu contention is not built yet");
  };
}

}  // namespace croq::cli
