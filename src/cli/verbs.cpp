// The one table of croq verbs: name, summary, details (JSON output and exit codes) and setup.
// Parsing, --help, "did you mean" and docs/cli.md all come from here.
#include "cli/verbs.hpp"

namespace croq::cli {

const std::vector<VerbSpec>& verbs() {
  static const std::vector<VerbSpec> table = {
      {"where", "show the workspace root and where it came from",
       "Output: `{root, origin, tuning_dir, tasks}`. Exit 2 when no root can be found.",
       setup_where},
      {"task init", "create a task's logs/task_config.json (task_uid first, as the seeds require)",
       "Writes `logs/<key>/<model>/task_config.json` with the given `--task-uid` (or a new one) before "
       "anything else of the task exists. Idempotent; a different task_uid for an existing task is "
       "refused (exit 9).\n\nOutput: the task config document.",
       setup_task_init},
      {"next-iter", "reserve the next iteration id (or attempt id) for a task",
       "The seeds' next_iter. Reserves atomically: two callers at the same moment never get the same "
       "id. Iteration numbers are used only by measured rounds; `--attempt` hands out attempt ids "
       "(attemptAAAA, attemptAAAB, ...) that never consume an iteration number.\n\n"
       "Output: `{iter, kernel, number}` or `{attempt, kernel, index}`; `kernel` is the canonical "
       "name to use for files (iter<NNN>_<tag>). `--peek` shows the next id without reserving it.",
       setup_next_iter},
      {"store-round", "store one round: idea-log.jsonl record and results.tsv row, atomically",
       "The seeds' store_round. Decisions: BASELINE (iter000), KEEP, DISCARD, COMPILE_FAIL, "
       "VERIFY_FAIL, RUNTIME_FAIL, SEGFAULT, HANG. Bottleneck: memory_bound, compute_bound, "
       "latency_bound, launch_bound or mixed (never unknown; `n/a` only for round 0). A failure "
       "given an iteration id is stored under a fresh attempt id and frees the iteration number. "
       "`--round` defaults to the next round. The TFLOPS typed on the command line is stored with "
       "`source: reported`.\n\nOutput: `{ok, record, files, line}`; stderr gets "
       "`[store_round] STORE complete ...`. Exit 9 if the iteration, attempt or round is already "
       "stored; exit 2 on bad input (nothing is written).",
       setup_store_round},
      {"attempt", "log a failed attempt of the current idea (attempt-log.jsonl) without ending the round",
       "Reserves the next attempt id and appends `{attempt, kernel, reason, idea, planned_iter, "
       "timestamp, ...}` to attempt-log.jsonl. Output: the stored attempt record.",
       setup_attempt},
      {"checkpoint write", "write the IDEA checkpoint (current_idea.json, status PLANNED)",
       "The last action of IDEA. Output: the checkpoint document.", setup_checkpoint_write},
      {"checkpoint read", "read the checkpoint at the start of IMPLEMENT (status -> IMPLEMENTING)",
       "Output: the checkpoint document. Exit 4 if there is none.", setup_checkpoint_read},
      {"checkpoint verify", "compare the plan with what was built; exit 3 on significant drift",
       "Compares the planned iteration with `--iter`, and the planned levers with the lines that "
       "changed between the candidate's source and its base's. Significant drift: another "
       "iteration number, no source for the iteration, a source identical to its base, or none of "
       "the planned levers among the changed lines. Minor drift (reported, exit 0): some levers "
       "untouched, or macros changed that the plan did not name.\n\nOutput: `{status, significant, "
       "findings, levers_found, levers_missing, changed_macros, diff}`. Exit 3 on significant drift, "
       "4 without a checkpoint.",
       setup_checkpoint_verify},
      {"resume", "where a task stands: the seeds' resume JSON",
       "The seeds' resume_state. Fields: dsl, shape_key, current_best_tflops, current_best_kernel, "
       "current_best_iter, last_round, last_iter, last_decision, last_bottleneck, next_iter_number, "
       "src_count, open_checkpoint, memory_files_ok, warnings; plus gpu, model, task_uid, "
       "baseline_tflops, pct_of_baseline, rounds, decisions, fresh_start and similar_keys. "
       "Exact-match guard: a shape key with no srcs/ folder is a fresh start, even when a key with "
       "the same dimensions in another order exists (named in `similar_keys`).",
       setup_resume},
      {"reinforce", "the one-line progress summary printed after every STORE",
       "Output: `{line, round, best, last, next_iter, reread}`; the line also goes to stderr.",
       setup_reinforce},
      {"session validate", "check the ledgers of one task or every task of a dsl",
       "The seeds' validate_tuning_session. Checks that records parse, ids and rounds are unique, "
       "bottlenecks are valid, results.tsv is in step with idea-log.jsonl, measured iterations "
       "have sources, and checkpoints and task configs read. Output: `{pass, tasks:[{task, "
       "errors, warnings}]}`; exit 1 if any error.",
       setup_session_validate},
      {"session clean", "repair (--invalid-only) or set aside (--reset-all --yes) a dsl's work state",
       "The seeds' clean_kernel_work_state. `--invalid-only` drops unreadable records (the old file "
       "is kept as `.bak.<time>`), rebuilds results.tsv and the index, and removes a damaged "
       "checkpoint. `--reset-all` moves the dsl's whole tree to `tuning/.trash/<time>/` and is "
       "refused without `--yes`. Nothing is deleted outright. Output: `{actions}`.",
       setup_session_clean},
      {"gpu key", "the device key of the GPU (the seeds' detect_gpu): sm90_NVIDIA_H200",
       "Output: `{key, name, uuid, compute_cap, driver}`. Exit 7 without a GPU.",
       setup_gpu_key},
      {"gpu check", "GPU health: idle, memory, clocks (--wait until idle)",
       "Output: `{idle, gpus:[...]}`.",
       setup_gpu_check},
      {"gpu contention", "processes on the GPU, ours and foreign (--kill ends only croq's own stale ones)",
       "Output: `{processes:[{pid, name, ours}]}`.",
       setup_gpu_contention},
      {"env validate", "check the toolchain for a dsl (the seeds' validate_env)",
       "Output: `{dsl, pass, errors, warnings}`; exit 1 when errors.",
       setup_env_validate},
      {"baseline", "measure and store the library baseline (iter000) with the candidates' harness",
       "Output: the baseline result document.",
       setup_baseline},
      {"discover", "find a starting kernel: bundled (tier A), earlier sessions (tier B), or scratch (tier C)",
       "Output: `{tier, candidates, recommendation}`.",
       setup_discover},
      {"prepare", "copy the chosen starting kernel to iter001 with its build and run scripts",
       "Output: `{iter, source, scripts}`.",
       setup_prepare},
      {"build", "build an iteration's source into the candidate the runner loads (cached)",
       "Output: `{verdict, outputs, flags, compile_ms, resources, cached}`.",
       setup_build},
      {"measure", "verify and time a candidate with croq's own harness; writes a measurement file",
       "Output: the measurement document.",
       setup_measure},
      {"profile", "profile exactly one launch of the candidate with Nsight Compute",
       "Output: `{kernel, report, csv}`.",
       setup_profile},
      {"classify", "classify an Nsight Compute CSV: bottleneck, confidence, evidence, hints",
       "Output: `{bottleneck, confidence, evidence, hints}`.",
       setup_classify},
      {"sass dump", "dump the SASS of a candidate or of the library baseline",
       "Output: `{kernels, instruction_mix}`.",
       setup_sass_dump},
      {"sass compare", "compare candidate and baseline SASS; divergences ranked by severity",
       "Output: `{divergences}`.",
       setup_sass_compare},
      {"serve", "the monitor: tasks, scheduler, live dashboard, REST API",
       "Runs until stopped (SIGINT/SIGTERM). Indexes every task of the workspace into a database (SQLite "
       "in WAL mode, default <root>/.croq/monitor.db) kept in step with the ledgers by polling; the ledgers "
       "stay the source of truth and tasks found on disk are adopted. Schedules tasks as child processes (one "
       "per device slot) with budgets, pause/resume/cancel/retry, restarts after crashes and parking after a "
       "rate limit (exit code 75, or a rate-limit message in the output); children outlive the server and are "
       "adopted by the next one. Serves the dashboard, the REST API and the event stream of docs/api.md. "
       "Loopback only unless --bind names another address, which requires a token (--token-file, or one "
       "generated and shown once). See docs/monitor.md.\n\n"
       "Output: once listening, `{ok, url, bind, port, db, root, auth, scheduler, tasks, adopted, "
       "records_indexed, index_ms, pid}`. `--check`: `{clean, tasks_on_disk, tasks_in_db, rounds_on_disk, "
       "rounds_in_db, differences, pending}`, exit 1 if the database differs from the ledgers. `--once`: the "
       "sync statistics. Exit 6 if another croq serve uses the database or the port is taken.",
       setup_serve},
      {"report", "a static HTML report with SVG figures and CSV tables",
       "Reads the ledgers directly (no server needed) and writes into --out: index.html, summary.csv "
       "(baseline, best, ratio, rounds, KEEP/DISCARD/failed counts, median time per round), "
       "convergence_all.svg, and per task <shape_key>__<model>__<dsl>__<gpu>/ with convergence.svg "
       "(every round, best so far, baseline), progression.svg (idea categories and bottlenecks per round), "
       "bottlenecks.svg (bottleneck distribution over the run), rounds.csv, progression.csv and "
       "bottlenecks.csv. The figures are the dashboard's.\n\n"
       "Output: `{ok, out, tasks, files, summary}`. Exit 4 if a --task matches nothing.",
       setup_report},
      {"help", "print the verb list, or the full reference as Markdown (--markdown)",
       "`croq help --markdown` prints docs/cli.md.", setup_help},
  };
  return table;
}

}  // namespace croq::cli
