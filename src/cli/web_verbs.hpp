// croq serve and croq report: their options (parsed by every croq executable, so that help, the
// verb reference and argument errors are the same everywhere) and the functions that run them.
//
// The monitor's code (HTTP server, SQLite, the dashboard) lives in a second executable, croq-web,
// beside croq: the verbs an agent calls in a loop start without loading those libraries. In croq,
// run_serve/run_report replace the process with croq-web and the same command line
// (web_verbs_exec.cpp); in croq-web they run the monitor (web_verbs_impl.cpp).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "croq/web/serve_options.hpp"

namespace croq::cli {

using web::ServeOptions;  // croq/web/serve_options.hpp: the same struct the monitor runs with

struct ReportVerbOptions {
  std::vector<std::string> tasks;
  bool all = false;
  std::string out;
  int window = 0;
  bool sweep = false;
};

ExitCode run_serve(Context& ctx, const ServeOptions& o);
ExitCode run_report(Context& ctx, const ReportVerbOptions& o);

// The name of the executable that holds the monitor.
inline constexpr const char* k_web_executable = "croq-web";

}  // namespace croq::cli
