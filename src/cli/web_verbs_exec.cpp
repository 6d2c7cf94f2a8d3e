// croq serve and croq report in the croq executable: the monitor is in croq-web beside croq, so
// that the verbs an agent calls in a loop do not load the HTTP server's and SQLite's libraries at
// every start. The arguments are already checked (help and usage errors come from croq itself);
// the process is replaced by croq-web with the same command line, keeping its pid, standard
// streams and exit code.
#include <fmt/format.h>

#include "cli/web_verbs.hpp"
#include "croq/util/error.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"

namespace croq::cli {

namespace {

[[noreturn]] void exec_web(Context& ctx) {
#if !CROQ_HAS_MONITOR
  throw Error(ExitCode::not_found,
              fmt::format("croq {} needs the monitor, and this croq was built without it (-DCROQ_WITH_WEB=OFF)", ctx.verb),
              "rebuild with -DCROQ_WITH_WEB=ON (needs SQLite and cpp-httplib: scripts/setup.sh installs them); every "
              "other verb works without it");
#endif
  const std::filesystem::path exe = self_exe_dir() / k_web_executable;
  std::error_code ec;
  if (!std::filesystem::exists(exe, ec)) {
    throw Error(ExitCode::not_found,
                fmt::format("croq {} runs in {}, which is not beside croq ({})", ctx.verb, k_web_executable,
                            exe.parent_path().string()),
                "build it (cmake --build build --target croq-web) or install it in the same folder as croq");
  }
  std::vector<std::string> args;
  args.push_back(exe.string());
  for (const auto& a : ctx.argv) args.push_back(a);
  ctx.out.flush();
  ctx.err.flush();
  const std::string why = replace_process(args);
  throw Error(ExitCode::internal, fmt::format("cannot start {}: {}", exe.string(), why));
}

}  // namespace

ExitCode run_serve(Context& ctx, const ServeOptions&) { exec_web(ctx); }
ExitCode run_report(Context& ctx, const ReportVerbOptions&) { exec_web(ctx); }

}  // namespace croq::cli
