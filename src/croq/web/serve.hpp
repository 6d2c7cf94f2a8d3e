// croq serve as a function: --check (the database compared with the ledgers), --once (the
// database brought in step with the disk, then exit), or the monitor itself (scheduler, REST API,
// event stream, dashboard) until SIGINT, SIGTERM or SIGHUP. Only croq-web runs it (the monitor's
// libraries stay out of croq).
#pragma once
#include <functional>

#include "croq/util/json.hpp"
#include "croq/util/step.hpp"
#include "croq/web/serve_options.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq::web {

// `emit` gets the verb's document: at the end for --check and --once, once the server listens
// otherwise (its URL, port, token source). Returns the exit code (failure: differences found, or
// the server could not serve).
ExitCode run_serve(const Workspace& ws, const ServeOptions& o, const std::function<void(const json&)>& emit,
                   const StepDeps& deps);

}  // namespace croq::web
