// Declarations of each verb's setup function; the table itself is in verbs.cpp.
#pragma once
#include <filesystem>

#include "cli/cli.hpp"
#include "croq/measure/measurement.hpp"

namespace croq::cli {

VerbRunner setup_where(CLI::App&);
VerbRunner setup_help(CLI::App&);
VerbRunner setup_next_iter(CLI::App&);
VerbRunner setup_store_round(CLI::App&);
VerbRunner setup_attempt(CLI::App&);
VerbRunner setup_checkpoint_write(CLI::App&);
VerbRunner setup_checkpoint_read(CLI::App&);
VerbRunner setup_checkpoint_verify(CLI::App&);
VerbRunner setup_resume(CLI::App&);
VerbRunner setup_reinforce(CLI::App&);
VerbRunner setup_session_validate(CLI::App&);
VerbRunner setup_session_clean(CLI::App&);
VerbRunner setup_task_init(CLI::App&);
VerbRunner setup_protocol_begin(CLI::App&);
VerbRunner setup_state(CLI::App&);
VerbRunner setup_decide(CLI::App&);
VerbRunner setup_tune(CLI::App&);
VerbRunner setup_measure(CLI::App&);
VerbRunner setup_baseline(CLI::App&);
VerbRunner setup_gpu_key(CLI::App&);
VerbRunner setup_gpu_check(CLI::App&);
VerbRunner setup_gpu_contention(CLI::App&);
VerbRunner setup_gpu_lease(CLI::App&);
VerbRunner setup_build(CLI::App&);
VerbRunner setup_env_validate(CLI::App&);
VerbRunner setup_discover(CLI::App&);
VerbRunner setup_prepare(CLI::App&);
VerbRunner setup_profile(CLI::App&);
VerbRunner setup_classify(CLI::App&);
VerbRunner setup_sass_dump(CLI::App&);
VerbRunner setup_sass_compare(CLI::App&);
VerbRunner setup_serve(CLI::App&);
VerbRunner setup_report(CLI::App&);
VerbRunner setup_init(CLI::App&);
VerbRunner setup_agent_run(CLI::App&);
VerbRunner setup_sweep_run(CLI::App&);
VerbRunner setup_sweep_submit(CLI::App&);
VerbRunner setup_sweep_task(CLI::App&);
VerbRunner setup_sweep_status(CLI::App&);
VerbRunner setup_sweep_stop(CLI::App&);
VerbRunner setup_round(CLI::App&);
VerbRunner setup_use(CLI::App&);
VerbRunner setup_status(CLI::App&);
VerbRunner setup_export(CLI::App&);

// croq measure --pairs: measures what the decision of `kernel` needs and prints decide's JSON.
ExitCode run_measure_pairs(Context& ctx, const TaskRef& t, const std::string& kernel);

}  // namespace croq::cli
