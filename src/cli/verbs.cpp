// The one table of croq verbs: name, summary, details (JSON output and exit codes) and setup.
// Parsing, --help, "did you mean" and docs/cli.md all come from here.
#include "cli/verbs.hpp"

#include <map>

namespace croq::cli {

const std::vector<VerbSpec>& verbs() {
  static const std::vector<VerbSpec> table = {
      {"where", "show the workspace root and where it came from",
       "The root is `--root`, else `CROQ_ROOT`, else the nearest folder above the current one that "
       "holds `tuning/`, else the enclosing git root; never silently the current folder.\n\n"
       "Output: `{root, origin, tuning_dir, tasks}` (`tasks`: every `<gpu>/<dsl>/<shape_key>/<model>` "
       "with a logs folder). Exit 2 when no root can be found or the root is not a folder.",
       setup_where},
      {"use", "choose the task the next commands act on (then --dsl, --shape-key and --model may be left out)",
       "Writes `.croq/current-task.json` with the task; every verb that names a task takes the parts not given from "
       "it. Inside one of a task's folders (`tuning/<gpu>/<dsl>/<kind>/<key>/<model>/...`) that folder's task is the "
       "context instead. `croq use` alone shows the context, `--clear` forgets it. A task that does not exist yet "
       "whose shape key or model is one letter away from an existing task's (a typo) is refused, here and in every "
       "verb, unless `--new`.\n\n"
       "Output: `{ok, task, gpu, dsl, shape_key, model, file}`; alone `{task, ..., origin}` (origin `cwd` or "
       "`croq use`). Exit 4 when no task is chosen, or for a near-miss name without --new.",
       setup_use},
      {"status", "a table of the workspace's tasks: best, baseline, ratio, rounds, step",
       "On a terminal a table (figures in a unit that fits: TFLOPS, GFLOPS); `--json` or a pipe gives "
       "`{root, tasks:[{task, gpu, dsl, shape_key, model, best, baseline, ratio, rounds, step, next_action}]}`.",
       setup_status},
      {"task init", "create a task's logs/task_config.json (task_uid first, before anything else of the task)",
       "Writes `logs/<key>/<model>/task_config.json` (`croq-task-v1`) with the given `--task-uid` (or "
       "a new one) before anything else of the task exists. Idempotent.\n\n"
       "Output: the task config document `{schema, task_uid, gpu, dsl, shape_key, model, created_at}`. "
       "Exit 9 if the task already has another task_uid; 2 on an invalid name; 10 if the existing "
       "task_config.json is damaged (nothing is changed).",
       setup_task_init},
      {"protocol begin", "start an invocation: the protocol's mode and round budget for a task",
       "Writes logs/<key>/<model>/protocol.json (croq-protocol-v1): `--mode enforced` (default: out-of-order or "
       "evidence-free steps are refused, exit 5) or `advisory`, and the invocation's budget (`--rounds`, default 50, "
       "counted from the last stored round). Output: the protocol document with the task's state.",
       setup_protocol_begin},
      {"state", "where a task stands in the protocol and the next action",
       "Derived from evidence (ledger, checkpoint, evidence log), never from flags. Output: `{step, next_action, notes, "
       "details:{mode, round, budget, best, active_bases, checkpoint, attempts}, stop_allowed, stop_reason}`. Steps: "
       "PREPARE, PROFILE, IDEA, IMPLEMENT, VERIFY, MEASURE, DECIDE, STORE, SHAPE_COMPLETE.",
       setup_state},
      {"decide", "the noise-aware KEEP/DISCARD decision for a measured candidate",
       "Compares the candidate's measurement with the best of its base: KEEP only when the gain exceeds "
       "1.5 x sqrt(noise_c^2 + noise_b^2) (noise = the robust CV of the repetitions, 1.4826 MAD / median, floored at "
       "0.5 %; a short kernel timed in several processes uses their spread); ties are DISCARD; a change beyond +/-50 % "
       "needs a back-to-back re-run first (`needs_rerun`). A close call -- a gain inside the margin but above 0.3 % -- "
       "is settled on 3 back-to-back pairs of the best and the candidate (`needs_pairs`; `pairs.next` lists the "
       "`croq measure ... --out perf/<key>/<model>/pair_<iter>_<n>_<kernel>.json` commands still to run): KEEP only "
       "when every pair favours the candidate and the median ratio beats 1.5 x max(0.2 %, its standard error). "
       "A re-run or a close call is not a decision yet: `pending: true` (and `decision` the safe fallback, DISCARD); "
       "`croq measure --iter <kernel> --pairs` measures what it needs in one command. `next` lists the command to run "
       "next (that one, or the store-round of the decision). Without `--measurement`, the candidate's own "
       "measurement file (of `--kernel`, else of the open plan's candidate). Output: "
       "`{decision, pending, next, reason, needs_rerun, needs_pairs, gain, margin, pairs, best, base_kernel, candidate, kernel}`.",
       setup_decide},
      {"tune", "tune a shape automatically with croq's own search (no LLM)",
       "Runs PREPARE (task, protocol, env validate, baseline, starting kernel: the family's default, or, when it "
       "does not build or verify, its alternatives in order, each failure logged in attempt-log.jsonl) and then "
       "rounds PROFILE -> IDEA -> IMPLEMENT -> VERIFY -> MEASURE -> DECIDE -> STORE through the same verbs an agent "
       "uses, with model `croq-search`. Ideas: the family's alternatives, then single steps and pairs around "
       "the best kernel (the bottleneck's levers first); once those are all tried, restarts at random legal "
       "configurations near it; the task is exhausted when none is left untried. Resumes where it stopped. "
       "Progress on a terminal; JSON lines on stderr "
       "otherwise. Output: `{task, rounds, best, baseline, pct_of_baseline, decisions, seed}`; for several shapes "
       "`{shapes: [...]}`. With `--jobs N` several shapes are tuned at once, each by its own `croq tune <shape>` "
       "process: their builds overlap on the CPU while the GPU lease lets one measurement or profile run at a time, "
       "so a sweep is bounded by its GPU work, not by the sum of its builds. Output then "
       "`{shapes: [...], jobs, failed, stopped}` (a shape that failed has `error`; the others go on). SIGINT or "
       "SIGTERM stops every shape's process; each resumes where it stopped on the next run. Exit 1 if any shape failed.",
       setup_tune},
      {"sweep run", "tune a manifest of shapes x dtypes non-stop on every device, resumable (the from-scratch sweep)",
       "The croq-tune-from-scratch skill's sweep, run by croq (docs/sweep.md). The shapes come from `--manifest`: "
       "`typical` (built in: the skill's 14 typical shapes for each dtype of `--op`, gemm_sp by default), a croq "
       "manifest in JSON (`croq-sweep-manifest-v1`: operator, dtypes, shapes, keys) or TOML, or the skill's "
       "kernels/manifest.json as is (`typical_shapes_for_scratch`). `tuning/state.json` keeps each shape in the "
       "skill's format (status, mode, current_iter, region, ...), written atomically by one writer: a shape done at "
       "`--rounds` (default 150) is skipped, one closed below it reopened, one begun resumed (the active ones first), "
       "then the far and needs_scratch shapes of state.json follow. From scratch the keys are the skill's "
       "`<dtype>_<M>x<N>x<K>_fs`; `--mode from_current_best` starts each new shape from the best kernel of the nearest "
       "tuned shape. Workers per device (`--gpus all|0,2`; `--workers-per-device`, auto: several for croq's search on "
       "a GPU, their builds side by side), pinned with `--device`, CUDA_VISIBLE_DEVICES and the device's lease, which "
       "keeps measurements one at a time; the driver is croq's search (`croq tune`), an agent (`croq agent run`, one per shape, restarted "
       "when it dies, `--max-restarts`) or `--command`. A device that fails its health check is skipped and reported, "
       "never reset; its shape goes to another worker. SIGINT/SIGTERM (`croq sweep stop`) stops every driver; a sweep "
       "killed at any moment loses no stored round and resumes on the next run. Events in tuning/sweep-log.jsonl.\n\n"
       "Output: `{shapes: [{key, status, current_iter, best_tflops, baseline_tflops, outcome}], devices, done, failed, "
       "pending, stopped, wall_s}`. Exit 1 if a shape failed; 6 if a sweep already runs on the workspace; 7 if no "
       "device is (or stays) healthy; 2 on a bad manifest (nothing is run).",
       setup_sweep_run},
      {"sweep submit", "submit the sweep to Slurm: a job array, one task per shape, on a shared workspace",
       "`--slurm` (required): plans the shapes as `croq sweep run` does (the same manifest and options; tuning/state.json "
       "and the ledgers: a shape done at `--rounds` is left out, one closed below it reopened, one begun resumed), "
       "writes tuning/slurm/<stamp>/ (submission.json, job.sh with `--array=0-<n-1>`, `--gres=gpu:1`, logs/) and "
       "submits it with sbatch; tuning/slurm.json names the job. Each task runs `croq sweep task` on the workspace, "
       "which must be on a file system the nodes share, with the croq executable at the same path. `--partition`, "
       "`--account`, `--time`, `--cpus-per-task`, `--max-parallel` (`%M`) and any `--sbatch-arg` are passed through "
       "to sbatch. `--dry-run` writes the script and submits nothing (docs/sweep.md).\n\n"
       "Output: `{job_id, dir, script, tasks: [{index, key, plan, stored_rounds}], skipped_done, dry_run}`. Exit 6 "
       "while a local sweep runs on the workspace or the previous job still has tasks queued or running; 1 when "
       "sbatch refuses the job (nothing is kept); 7 when sbatch cannot be started; 2 on a bad option or manifest.",
       setup_sweep_submit},
      {"sweep task", "run one shape of a Slurm submission (what each task of the job array runs)",
       "Run by the job script `croq sweep submit --slurm` writes: the sweep of the shape at `--index` (default "
       "SLURM_ARRAY_TASK_ID) of `--submission`, on the GPU Slurm gave the task (SLURM_STEP_GPUS / SLURM_JOB_GPUS, "
       "else CUDA_VISIBLE_DEVICES), with the driver and options of the submission. Many tasks share the workspace: "
       "each works under its shape's lock (a shape another process holds is left to it) and writes its own entry "
       "of tuning/state.json; the events go to tuning/sweep-log.jsonl with `slurm_job` and `slurm_task`. SIGTERM "
       "(scancel, the time limit) stops the driver; the shape resumes on the next run or submission.\n\n"
       "Output: `croq sweep run`'s, with `slurm_job`, `slurm_task` and `key`. Exit 1 if the shape failed; 7 if the "
       "device is not healthy; 10 if the submission is damaged.",
       setup_sweep_task},
      {"sweep status", "the sweep's shapes: status, rounds, baseline, best; whether a sweep runs now; its Slurm job",
       "Reads tuning/state.json, each shape's rounds and TFLOPS refreshed from its ledger (nothing is written). "
       "Where a Slurm job was submitted (tuning/slurm.json), joins its array tasks as squeue (queued, running), sacct "
       "(ended) or, where accounting is off, `scontrol show job` see them. "
       "A table on stderr; output: `{state_file, shapes: [{key, status, mode, current_iter, target_rounds, "
       "best_tflops, baseline_tflops, device, error, slurm}], counts, running, pid, sweep, slurm: {job_id, "
       "submitted_at, dir, accounting, tasks: [{index, key, state, reason, node, exit_code, elapsed}], counts, live, "
       "notes}}`. A Slurm command that fails is a note, not an error. Exit 10 if state.json is damaged.",
       setup_sweep_status},
      {"sweep stop", "stop the running sweep (its drivers stop and resume on the next run) and cancel its Slurm job",
       "Sends SIGTERM to the sweep that holds the workspace (tuning/sweep.json names it); it stops every driver and "
       "writes its state. Where the workspace's Slurm job (tuning/slurm.json) still has tasks queued or running, "
       "cancels it (scancel): each task stops its driver. `--wait` waits until both have ended (exit 6 if not within "
       "`--timeout`). Output: `{was_running, pid, stopped, slurm: {job_id, was_live, live_tasks, cancelled, "
       "stopped}}`.",
       setup_sweep_stop},
      {"round", "run a round's mechanical steps after IMPLEMENT: build, verify, measure, decide, store",
       "For the open plan's candidate (its source in srcs/, or `--iter`), runs as child processes, in order, the "
       "verbs an agent would: `croq build`, `croq checkpoint verify`, `croq measure`, what the decision needs "
       "(`croq measure --pairs`: a back-to-back re-run, the close call's pairs) and `croq decide`, then "
       "`croq store-round` with the decision, the measurement and the plan's bottleneck and idea. Every verb's "
       "guard applies as when it is run by hand; the first step that fails stops the round (a failed verdict of "
       "the candidate is stored as the round's decision). In PREPARE it builds, measures and stores the starting "
       "kernel iter001 as round 0.\n\n"
       "Output: `{ok, kernel, prepare, steps:[{step, exit_code, command, error}], build, measurement, decide, store, "
       "decision, stopped_at, error, next_action}`. Exit: 0 when the round was stored; otherwise the failed step's "
       "exit code (8 for a candidate that did not build, 3 for drift, 5 for a refusal).",
       setup_round},
      {"next-iter", "reserve the next iteration id (or attempt id) for a task",
       "Replaces the original croq-tune skill's `next_iter` tool (docs/agents.md). Reserves atomically: two callers at the same moment never get the same "
       "id. Iteration numbers are used only by measured rounds; `--attempt` hands out attempt ids "
       "(attemptAAAA, attemptAAAB, ...) that never consume an iteration number.\n\n"
       "Output: `{iter, kernel, number, reserved}` or, with `--attempt`, `{attempt, kernel, index, "
       "reserved}`; `kernel` is the canonical name to use for files (`iter<NNN>_<tag>`, "
       "`attempt<AAAA>_<tag>`). `--peek` shows the next id without reserving it. The next number "
       "follows the highest stored or reserved one and every `iter<NNN>` in the names of the task's files in "
       "srcs/, bin/, cmd/ and perf/ (a folder of other tools can hold sources its ledger never recorded); a number "
       "freed by a failure (see store-round) is handed out again unless a file carries it.\n\nExit 2 on an invalid tag or task name; 6 if the task lock stays busy "
       "(`--lock-timeout`); 10 if idea-log.jsonl has unreadable lines or reservations.json is damaged "
       "(nothing is changed; `croq session clean --invalid-only` repairs).",
       setup_next_iter},
      {"store-round", "store one round: idea-log.jsonl record and results.tsv row, atomically",
       "Replaces the original croq-tune skill's `store_round` tool (docs/agents.md). Decisions: BASELINE (iter000), KEEP, DISCARD, COMPILE_FAIL, "
       "VERIFY_FAIL, RUNTIME_FAIL, SEGFAULT, HANG. Bottleneck: memory_bound, compute_bound, "
       "latency_bound, launch_bound or mixed (never unknown; `n/a` only for round 0). A failure "
       "given an iteration id is stored under a fresh attempt id and frees the iteration number. Its "
       "files keep the name they were built under (`iter<NNN>_<tag>`: the source, the build log, the "
       "measurement its record points to), so the next plan of that number needs a name of its own "
       "(`croq tune` adds a count to a tag a failure of the number used: `iter002_alt_tma_halves_2`), "
       "and where croq resolves a bare `iter<NNN>` (`checkpoint verify`, `state`, `round`) it takes the "
       "source no stored failure was built as. "
       "`--round` defaults to the next round (0 for BASELINE). The TFLOPS typed on the command line "
       "is stored with `source: reported` (an enforced task refuses it, the baseline's included). With "
       "`--measurement FILE` (from `croq measure`) the TFLOPS and the verdict come from the file "
       "(source: measured, and `measurement` provenance in the record): a failed verdict is stored as "
       "its failure decision, and KEEP or DISCARD with a failed measurement is refused. The file must "
       "be one croq wrote for this task and kernel, unchanged, of the binary `croq build` made: "
       "anything else (written by hand, edited, copied, another task's) is refused in an enforced task "
       "(rule measurement_from_croq) and stored as `source: unverified` otherwise. `--extra` adds "
       "fields: it may not set the record's own fields (schema, source, measurement, planned_iter, "
       "...) nor contradict the plan's (base, params, ...). Ids more than 100 past the next free one "
       "are refused. Idea text of any content (quotes, tabs, newlines, "
       "non-ASCII; at most 16 KiB of UTF-8) is stored exactly; `--idea-file FILE` (or `-` for "
       "standard input) avoids shell quoting.\n\n"
       "The record is appended to idea-log.jsonl as one line with one write and fsynced, under the "
       "task lock; then the results.tsv row is appended (the view is rebuilt first if it was out of "
       "step), the reservation released and the checkpoint of this iteration closed. A torn last "
       "line left by an interrupted store is cut off first.\n\n"
       "Output: `{ok, record, files, tsv_rebuilt, repaired_torn_tail, imported_tsv, planned_iter, "
       "released_reservation, checkpoint_closed, line}`; stderr always gets `[store_round] STORE "
       "complete: round <R> <kernel> <decision> <tflops> TFLOPS <bottleneck>` (even with --quiet).\n\n"
       "Exit 9 if the iteration, attempt or round is already stored; 2 on bad input; 4 if "
       "`--idea-file` is missing; 5 if the protocol refuses the round; 6 if the lock stays busy; 10 if "
       "the ledger is damaged (unreadable lines, a damaged reservations.json or a legacy results.tsv "
       "with unreadable rows), its ids are used up, or one of its files is a symbolic or hard link. On "
       "every error nothing is written.",
       setup_store_round},
      {"attempt", "log a failed attempt of the current idea (attempt-log.jsonl) without ending the round",
       "Reserves the next attempt id and appends `{attempt, kernel, reason, idea, planned_iter, "
       "build_log, timestamp, ...}` to attempt-log.jsonl (one line, fsynced). Use it for each failed "
       "fix of the current idea; the round itself ends with store-round.\n\nOutput: the stored "
       "attempt record. Exit 2 on bad input, 6 busy, 10 damaged ledger.",
       setup_attempt},
      {"checkpoint write", "write the IDEA checkpoint (current_idea.json, status PLANNED)",
       "The last action of IDEA. Writes `checkpoints/<key>/<model>/current_idea.json` "
       "(`croq-checkpoint-v1`) atomically: `{schema, status, iter, round, bottleneck, idea, "
       "expected_gain, levers, base, created_at, updated_at}`; `base` defaults to the current best "
       "kernel and `round` to the next round. An open plan it replaces is kept in `replaces`; a "
       "damaged checkpoint file is replaced.\n\nOutput: the checkpoint document. Exit 2 on bad input "
       "(bottleneck `unknown` included).", setup_checkpoint_write},
      {"checkpoint read", "read the checkpoint at the start of IMPLEMENT (status -> IMPLEMENTING)",
       "Moves a PLANNED checkpoint to IMPLEMENTING; other statuses are shown unchanged.\n\n"
       "Output: the checkpoint document. Exit 4 if there is none; 10 if it cannot be read (the file "
       "is left as it is; `checkpoint write` replaces it).", setup_checkpoint_read},
      {"checkpoint verify", "compare the plan with what was built; exit 3 on significant drift",
       "Compares the planned iteration with `--iter`, and the planned levers with the lines that "
       "changed between the candidate's source and its base's. Significant drift: another "
       "iteration number, no source for the iteration, a source identical to its base, or none of "
       "the planned levers among the changed lines. Minor drift (reported, exit 0): some levers "
       "untouched, or macros changed that the plan did not name.\n\nOutput: `{status, significant, "
       "findings, levers_found, levers_missing, changed_macros, diff, planned_iter, built_iter, "
       "candidate, base}`; the checkpoint's status becomes VERIFIED or DRIFT. Exit 3 on significant "
       "drift, 4 without a checkpoint, 10 if the checkpoint cannot be read.",
       setup_checkpoint_verify},
      {"init", "install the skills a coding agent loads (and, with --compat, shims of the original skill's tools)",
       "Writes the croq skills into the workspace at the path each agent loads them from: claude "
       "`.claude/skills/`, cursor `.cursor/skills/`, opencode `.opencode/skills/`, codex `.agents/skills/` "
       "(`--agent`, repeatable; default claude). Skills: croq-tune (the loop), croq-dsl-cuda, croq-dsl-croqtile, "
       "croq-dsl-triton, croq-dsl-cpp, base-tune (a folder of kernels) and croq-tune-from-scratch (the shape "
       "sweep); each step names the croq verb to call, what its JSON says and what to do when croq refuses. "
       "`--compat` also installs `.claude/skills/croq-tune/tools/<tool>.sh` (and .py) for every tool the original croq-tune skill "
       "names, plus `.claude/skills/fsm-engine/scripts/{state-transition,pre-step-check,post-step-check}.sh`: "
       "each takes the original tool's arguments and calls croq, so existing skills run unchanged (docs/agents.md). "
       "Creates `tuning/` and, when absent, `.croq/agents.json` (the agent command templates of `croq agent run`).\n\n"
       "Re-running init updates croq's files in place: `.croq/init-manifest.json` records the hash of every file "
       "croq wrote; a file edited since (or not written by croq) is left alone and reported as `kept_modified` "
       "(`--force` replaces it); a file croq no longer ships is removed unless edited. `--dry-run` writes nothing.\n\n"
       "Output: `{root, manifest, counts:{created, updated, unchanged, kept_modified, removed, kept_obsolete}, "
       "kept_user_files, files:[{path, action, group, source}], agents_config, skills, dry_run, notes}`. "
       "Exit 2 for an unknown agent.",
       setup_init},
      {"agent run", "run a coding agent on a task and supervise it until the protocol's stop condition",
       "Starts the agent's command line (a template in `.croq/agents.json`, else croq's defaults for claude, "
       "cursor, opencode and codex; placeholders {prompt} {prompt_file} {root} {croq} {gpu} {dsl} {shape_key} "
       "{model} {task_uid} {session} {skills_dir}) in the workspace root with the loop's prompt for the task. "
       "Begins the protocol (enforced, `--rounds`, else CROQ_BUDGET_ROUNDS, else 50) when the task has none. "
       "Progress is read from the task's files (ledger, evidence log, checkpoint, sources), never from the "
       "agent's prose: a session without progress for `--stall-seconds` is stopped; a session that ends before "
       "the stop condition holds is started again with `croq resume --summary` as its prompt, up to "
       "`--max-sessions`; a rate limit (exit 75, or a rate-limit message in the output of a failed session) is "
       "waited out (`--rate-limit-wait`, doubling) up to `--rate-limit-retries` times; once `croq state` allows "
       "the stop, the session is ended and the run finishes. Output of each session: "
       "memory/<key>/<model>/sessions/<session>.log, its prompt <session>.prompt.md, one line per session in "
       "sessions/index.jsonl.\n\n"
       "Output: `{task, agent, exit_code, stop_reason, sessions:[{session, prompt, outcome, exit_code, how, "
       "rounds_before, rounds_after, log}], rounds_at_start, rounds, sessions_dir}`. Exit 0 when the stop "
       "condition holds, 75 when still rate limited (the monitor parks the task), 1 when the sessions ran out "
       "first, 127 when the agent cannot be started, 2 for an unknown agent. Usable as the monitor's `agent` "
       "driver (`croq agent run --dsl ... --shape-key ... --model ... --task-uid ... --agent NAME`).",
       setup_agent_run},
      {"resume", "where a task stands: its resume JSON",
       "Replaces the original croq-tune skill's `resume_state` tool (docs/agents.md). Fields: dsl, shape_key, current_best_tflops, current_best_kernel, "
       "current_best_iter, last_round, last_iter, last_decision, last_bottleneck, next_iter_number, "
       "src_count, open_checkpoint, memory_files_ok, warnings; plus gpu, model, task_uid, "
       "baseline_tflops, pct_of_baseline, rounds, decisions, fresh_start and similar_keys. "
       "Exact-match guard: a shape key with no srcs/ folder is a fresh start, even when a key with "
       "the same dimensions in another order exists (named in `similar_keys`, never resumed).\n\n"
       "Read-only and tolerant: malformed or torn lines, a damaged checkpoint, task config or "
       "reservations file become `warnings`, not errors. `--summary` adds `summary` (the same facts as a few "
       "lines of text, with the recent rounds, the protocol's next step and the stop condition: the prompt "
       "that resumes an agent session), `state`, `stop_allowed` and `stop_reason`. Exit 0 unless the "
       "arguments are invalid (2).",
       setup_resume},
      {"reinforce", "the one-line progress summary printed after every STORE",
       "Output: `{line, round, best, last, discard_streak, next_iter, next_round, reread}`; the line "
       "also goes to stderr. Exit 4 if the task has no stored rounds.",
       setup_reinforce},
      {"session validate", "check the ledgers of one task or every task of a dsl",
       "Replaces the original croq-tune skill's `validate_tuning_session` tool (docs/agents.md). Checks that records parse, ids and rounds are unique, "
       "bottlenecks are valid, results.tsv is in step with idea-log.jsonl, measured iterations "
       "have sources, and checkpoints, task configs, reservations and attempt logs read; temporary "
       "files left by interrupted writes are reported. `--shape-key`/`--model` narrow it to one task.\n\n"
       "Output: `{pass, gpu, dsl, tasks:[{task, pass, errors, warnings}]}`; errors also go to stderr. "
       "Exit 1 if any error.",
       setup_session_validate},
      {"session clean", "repair (--invalid-only) or set aside (--reset-all --yes) a dsl's work state",
       "Replaces the original croq-tune skill's `clean_kernel_work_state` tool (docs/agents.md). `--invalid-only` drops unreadable records (the old file "
       "is kept as `.bak.<time>`; repeated rounds or ids keep their first record), imports a legacy "
       "TSV-only ledger, rebuilds results.tsv and the index, sets a damaged checkpoint or "
       "reservations.json aside and removes temporary files of dead writers. `--reset-all` moves the "
       "dsl's whole tree to `tuning/.trash/<time>/` and is refused without `--yes`. Nothing is "
       "deleted outright.\n\nOutput: `{actions}` (per task) or `{actions, moved_to}`. Exit 2 without "
       "exactly one of the two flags or without `--yes`; 4 if there is nothing to reset.",
       setup_session_clean},
      {"gpu key", "the device key of the GPU (the original skill's `detect_gpu`): sm90_NVIDIA_H200",
       "The GPU is `--device` (index or UUID), else the first entry of CUDA_VISIBLE_DEVICES, else 0; "
       "read from nvidia-smi. Output: `{index, name, uuid, key, compute_cap, driver, memory_total_mib, "
       "memory_used_mib, utilization_pct, temperature_c, sm_clock_mhz, max_sm_clock_mhz}`; the key also "
       "goes to stderr. Exit 7 without a GPU (or when the device asked for is not there).",
       setup_gpu_key},
      {"gpu check", "GPU health: idle, memory, clocks (--wait until idle)",
       "Idle means no compute process on the GPU and utilization at most 5 %. Output: `{idle, device, "
       "reasons, warnings, processes, lease:{held, holder, file}, waited_ms}`. Exit 0 when idle, 1 when "
       "busy, 6 when `--wait` ran out of time, 7 without a GPU. The original skill's `--reset` and `--kill-others` "
       "are refused: croq never resets a GPU or ends another user's process.",
       setup_gpu_check},
      {"gpu contention", "processes on the GPU, ours and foreign (--kill ends only croq's own stale ones)",
       "Ours: the same user's croq programs and what they started; stale: a runner or candidate binary "
       "whose croq parent is gone. `--kill` sends SIGTERM (then SIGKILL after 3 s) to stale processes "
       "only, never to a foreign one, and never uses sudo. Output: `{processes:[{pid, name, "
       "used_memory_mib, gpu_uuid, ours, stale, why, uid, exe, killed}], ours, foreign, stale, killed, "
       "idle}`. `--json` is accepted for the original skill's scripts (the output is always JSON).",
       setup_gpu_contention},
      {"gpu lease", "run a command while holding the device's lease (scripts, GPU tests); --history: who held it when",
       "The device's one lease (`/tmp/croq-gpu-<uuid>.lock`, CROQ_LEASE_DIR overrides the folder) is the lock that "
       "croq measure, croq baseline, croq profile and the GPU tests take, so that two of them never run on one GPU "
       "at once. `croq gpu lease [--device N|UUID|cpu] [--timeout S] -- COMMAND ARGS...` waits for it (saying whom "
       "it waits for), runs the command with its stdout sent to stderr, and lets go when the command ends. Output: "
       "`{device_id, command, waited_ms, held_ms, exit_code, signal}`. `--history` prints the lease history "
       "instead: `{device_id, file, history:[{event: acquire|release, device_id, pid, user, purpose, at, t_ms, "
       "waited_ms|held_ms}], state}` -- every acquisition and release, appended while the lease was held. Exit 0 "
       "when the command succeeded, 1 when it failed, 6 when the lease was not free in time.",
       setup_gpu_lease},
      {"env validate", "check the toolchain for a dsl (the original skill's `validate_env`)",
       "Replaces the original croq-tune skill's `validate_env` tool (docs/agents.md). GPU dsls: nvcc (12+), a visible GPU (nvidia-smi), ncu, and whether GPU "
       "counters are readable (the driver's RmProfilingAdminOnly unless root; perf_event_paranoid as a warning). "
       "croqtile: CHOREO_HOME, `choreo --help`, CUTE_HOME with CuTe/CUTLASS headers (4.2.1 expected). triton: "
       "python3, `import torch` with CUDA, `import triton` (in a child process with a time limit). cpp: g++ and "
       "OpenBLAS (no GPU needed).\n\nOutput: `{dsl, pass, errors, warnings, checks}`; each error and warning is "
       "`{check, message, fix}`. Exit 1 when there is an error.",
       setup_env_validate},
      {"baseline", "measure and store the library baseline (iter000) with the candidates' harness",
       "Replaces the original croq-tune skill's `store_baseline` + `cublas_baseline` tool (docs/agents.md). Writes logs/.../task_config.json with `--task-uid` "
       "first, then measures the library with the same runner and statistics as a candidate: on a GPU "
       "the cuBLAS default (cublasGemmEx) and the cuBLASLt heuristic algorithms, screened and the best "
       "re-measured; the baseline is the faster of the default and the best (both are recorded); on "
       "the cpp dsl OpenBLAS sgemm. A 2:4 sparse task (gemm_sp) measures cuSPARSELt (loaded at run time: "
       "`--cusparselt PATH`, CROQ_CUSPARSELT, the loader's path or the nvidia-cusparselt Python package; "
       "its algorithms screened with croq's own timing, A compressed once off the clock) and the dense "
       "libraries on the same pruned inputs, each one's best recorded, and iter000 is the faster "
       "(iter000_cusparselt); `--library` picks one library instead. FP8 tasks pass their scales (e4m3 matmul: "
       "per tensor, cuBLASLt's A/B_SCALE_POINTER; blockscaled_e4m3bf16_...: per 1x128 and 128x128 block, "
       "cuBLASLt's VEC128/BLK128x128 modes, else croq's reference marked not library-grade; docs/fp8.md). "
       "The output dtype is the shape key's. Writes "
       "baseline/<key>/<model>/cublas_result.json (openblas_result.json for cpp: dtype, m, n, k, tflops, "
       "time_ms, library, algo, statistics, device, seed, task_uid, measurement) and the measurement "
       "file beside it, and stores iter000_cublas (iter000_openblas) with decision BASELINE. "
       "Idempotent: an existing baseline is kept (`{skipped: true}`) unless `--force`. As for `croq measure`, "
       "the GPU is checked for other work before and after (waiting up to `--idle-timeout`); a contended baseline "
       "is shown but neither stored nor written as the result (exit 6). Output: "
       "`{skipped, result, record, files}`; exit 8 when the library run failed.",
       setup_baseline},
      {"discover", "find a starting kernel: bundled (tier A), earlier sessions (tier B), or scratch (tier C)",
       "Replaces the original croq-tune skill's `discover_baseline` tool (docs/agents.md). Tier A: croq's bundled kernels in kernels/<dsl>/<operator>/ (never files "
       "named *_aitune_*), filtered by --dtype and ordered by their `croq-kernel:` rank. Tier B: every other task "
       "of the operator in the workspace offers its best KEEP (highest TFLOPS in its ledger, not its "
       "highest-numbered file), same GPU first. Tier C: a from-scratch recommendation with references.\n\n"
       "Output: `{dsl, operator, dtype, gpu, tier, candidates:[{index, tier, name, path, companions, rank, meta, "
       "tflops}], recommendation:{tier, pick, path, why}, scratch}`; `index` is what `croq prepare --pick` takes.",
       setup_discover},
      {"prepare", "copy the chosen starting kernel to iter001 with its build and run scripts",
       "Copies the recommended (or `--pick N`, or `--from FILE`) kernel to srcs/<key>/<model>/iter001_<tag>.<ext> "
       "(a croqtile .co with its .cu), reserves iter001 in the ledger, and writes cmd/.../build_iter001.sh and "
       "run_iter001.sh. Refused (exit 9) when iter001 has a source, unless --force, and always once it is stored.\n\n"
       "Output: `{iter, kernel, source, files, from, scripts, next}`. Exit 4 when nothing is found (tier C).",
       setup_prepare},
      {"build", "build an iteration's source into the candidate the runner loads (cached)",
       "Replaces the original croq-tune skill's `build_iter` and `co2cu` tool (docs/agents.md). Adapters: cuda (.cu -> nvcc --shared -> bin/.../<kernel>.so, arch from "
       "--arch or the device key, sm90_* -> sm_90a), cpp (.cpp -> g++ -O3 -march=native -> .so), triton (.py: parse, "
       "AST purity and import check in a child process), croqtile (phase 1: choreo -gs -t cute -> .cute.result -> "
       "the .cu next to the .co; phase 2: nvcc with the script's CFLAGS -> bin/.../<kernel> with choreo's harness "
       "and, for a plain matmul .co, <kernel>.so bound to the ABI). Sources are checked for library calls first "
       "(LIBRARY_CALL_FORBIDDEN). Outputs are cached by the hash of source, included headers, flags and compiler "
       "version. Writes cmd/.../build_iter<NNN>.sh, run_iter<NNN>.sh, perf/.../build_iter<NNN>.txt and "
       "build_<kernel>.json. See docs/dsl.md.\n\nOutput: `{verdict: OK|COMPILE_FAIL|LIBRARY_CALL_FORBIDDEN, "
       "outputs, command, flags, compile_ms, cached, cache_key, resources:[{kernel, registers, shared_bytes, "
       "stack_bytes, spill_stores, spill_loads}], errors, purity, scripts, phase1, abi}`; several --iter give "
       "`{verdict, builds}`. Exit 8 when a candidate failed to build.",
       setup_build},
      {"measure", "verify and time a candidate with croq's own harness; writes a measurement file",
       "Runs the candidate in a runner child process (croq-gpu-runner, croq-cpu-runner for cpp, "
       "src/python/croq_runner.py for triton) with a time limit, under the device's exclusive lease: "
       "fresh random inputs (recorded seed), output poisoned with NaN, every element checked against "
       "an f32-accumulated library reference (for gemm_sp: 2:4 sparse A with poison outside its pattern, "
       "the reference the dense product of the pruned A), timing with the L2 flushed before each repetition until "
       "the spread is low, a re-check after timing and a second seed (docs/measurement.md). A checked "
       "launch is made exactly as a timed one (a fresh B and C poisoned before every launch) and "
       "timed launches are compared at random after they ran (VERIFY_FAIL timed_mismatch). A candidate "
       "that links or names cuBLAS/cuBLASLt/cuDNN/CUTLASS device GEMMs is refused before it runs; in an "
       "enforced task so is one that calls a synchronising or host-reading CUDA function "
       "(cudaDeviceSynchronize, cudaMemcpy, ...) or whose launch waits for the stream "
       "(LIBRARY_CALL_FORBIDDEN synchronising_call). "
       "Candidate: `--iter iter<NNN>[_tag]` (bin/<key>/<model>/<kernel>.so; the .py for triton) or "
       "`--candidate PATH`; `--legacy` runs a self-timed program and parses its `TFLOPS:`/`VERIFY:` "
       "lines (source: reported). Writes perf/<key>/<model>/measure_<kernel>.json (or `--out`) and "
       "timing_iter<NNN>.txt. Output: the measurement (croq-measurement-v1) plus `files`. Verdicts: "
       "PASS, VERIFY_FAIL, RUNTIME_FAIL, SEGFAULT, HANG, IMPOSSIBLE, LIBRARY_CALL_FORBIDDEN, UNSUPPORTED; "
       "Around the run the GPU is checked for other work (nvidia-smi: any compute process on the device, "
       "utilization, clock limits; the runner's own NVML samples): croq waits, holding the lease, up to "
       "`--idle-timeout` (60 s) for the device to be idle; a device still shared then, or shared after, makes the "
       "measurement contended (`contended: true`, flag `contended`, the `contention` record with the processes): "
       "shown, but store-round and decide refuse it as evidence. On the CPU (cpp) the runner records how long "
       "it waited for a CPU during its launches (`device.cpu_wait_share`); above 10 % the measurement is "
       "flagged `cpu_shared` with a warning (kept, not refused). "
       "Exit 0 for PASS, 8 for any other verdict, 7 without a device, 6 when the lease was not free in "
       "time or the PASS is contended.",
       setup_measure},
      {"profile", "profile exactly one launch of the candidate with Nsight Compute",
       "Replaces the original croq-tune skill's `ncu_profile` tool (docs/agents.md). Runs `ncu --nvtx --nvtx-include croq_candidate/ --clock-control none --set full "
       "--launch-count 1 --target-processes all --export ...` on `croq-gpu-runner --mode profile` (the runner "
       "warms up, then launches the candidate once inside the NVTX range `croq_candidate`), so only the "
       "candidate's launch is captured: never the input initialisation, the reference or a warm-up. "
       "`--baseline` (or `--library cublas`) profiles the library baseline; `--binary` a legacy self-timed "
       "executable (kernel-name filter and `--launch-skip` instead of NVTX). `--preset quick` reads only the "
       "sections the classifier needs. Holds the device's lease while ncu runs (the same lease as croq measure "
       "and croq baseline: a profile and a timing never overlap on one GPU). Writes "
       "perf/<key>/<model>/ncu_<kernel>_round<R>.{ncu-rep,csv} atomically (R defaults to the task's next round), "
       "classifies the CSV and records it in the task's evidence log (kind profile, or baseline_profile).\n\n"
       "The cpp dsl has no Nsight Compute: croq profile measures the candidate (or, with `--baseline`, "
       "OpenBLAS) with the CPU runner and classifies the timing against the machine's roofline "
       "(docs/classifier.md, \"The CPU profile\"); it writes perf/<key>/<model>/cpuprof_<kernel>_round<R>.json "
       "and records the same evidence, with preset `cpu-timing`.\n\n"
       "Output: `{ok, kernel, kernel_origin, candidate, round, report, csv, preset, ncu_argv, profile_s, "
       "export_s, classification, bottleneck, confidence}`; `kernel` is the captured kernel's name as ncu reports it. Exit 7 when ncu "
       "or the runner is missing; 1 when the counters are not permitted (ERR_NVGPUCTRPERM; the hint says how "
       "to allow them) or ncu timed out; 4 when no kernel matched the filters; 5 when the captured kernel is a "
       "library or harness kernel instead of the candidate; 6 when the GPU lease stays busy; 8 when the "
       "profiled program itself failed.",
       setup_profile},
      {"classify", "classify an Nsight Compute CSV: bottleneck, confidence, evidence, hints",
       "Replaces the original croq-tune skill's `profile_extract` tool (docs/agents.md). Reads the raw page (`ncu --import R --page raw --csv`) or the "
       "per-section form (`--section X --csv`, `--page details --csv`) or the summary form "
       "(`--print-summary per-kernel --csv`: Minimum, Maximum, Average; the Average is read); numbers with thousands separators "
       "(\"1,234.5\") are read, files written with a decimal comma are refused. With several kernels in the "
       "file, `--kernel REGEX` chooses, else the longest kernel that is not a library or harness kernel (the "
       "choice and its reason are in evidence.kernel_selection). The rules and thresholds are in "
       "docs/classifier.md.\n\n"
       "Output: `{iter, bottleneck, confidence, score, kernel, reason, evidence:{key_metrics, rules:[{rule, "
       "metric, value, op, threshold, fired, role, meaning}], margin_pts, ncu_rep, csv, csv_form, "
       "kernel_selection}, metrics:{sm_throughput_pct, memory_throughput_pct, dram_throughput_pct, ..., "
       "warp_stalls, warp_stalls_unit, achieved_tflops, pct_of_peak}, hints:[{idea, menu, why}], warnings}`. "
       "bottleneck is memory_bound, compute_bound, latency_bound, launch_bound or mixed, never unknown. "
       "Exit 2 for a file that is not an ncu CSV, lacks the throughput figures, is empty or uses decimal "
       "commas; 10 for a truncated file; 4 when the CSV or the --kernel pattern is not found.",
       setup_classify},
      {"sass dump", "dump the SASS of a candidate or of the library baseline",
       "SASS of a candidate (`--candidate X.so`: cuobjdump -sass and -res-usage), of the kernel an ncu "
       "report captured (`--report R.ncu-rep`: ncu's source page, e.g. the cuBLAS kernel actually launched), "
       "or of a saved text (`--sass-file`). With the task options (`--iter` or `--baseline`) the text is kept "
       "as perf/<key>/<model>/sass_<kernel>.sass or sass_baseline.sass.\n\n"
       "Output: `{origin, kernel, functions, mix:{instructions, registers, registers_source, by_class, "
       "tensor_family, tensor_ops, global_load_widths_bits, global_store_widths_bits, shared_*_widths_bits, "
       "ldsm, stsm, ldgsts, tma, barriers, local_loads, local_stores, tensor_loops, local_in_tensor_loops, opcodes}, "
       "sass_file}`. Exit 7 when "
       "cuobjdump or ncu is missing.",
       setup_sass_dump},
      {"sass compare", "compare candidate and baseline SASS; divergences ranked by severity",
       "Replaces the original croq-tune skill's `sass_compare` tool (docs/agents.md). Compares the candidate's instruction mix with the baseline's: tensor-core "
       "instructions (HGMMA/QGMMA/HMMA/IMMA vs FFMA), local memory (LDL/STL), TMA, global load width, "
       "ldmatrix use, registers, barrier density and instruction count; each divergence has a severity "
       "(high/medium/low) and a one-line reason (rules in docs/classifier.md).\n\n"
       "With the task options and `--iter`, the candidate defaults to bin/<key>/<model>/<kernel>.so (or its kept "
       "sass_<kernel>.sass), the baseline to perf/<key>/<model>/sass_baseline.sass, and the result is kept as "
       "perf/<key>/<model>/sass_compare_<kernel>.json and recorded as sass_compare evidence.\n\n"
       "Output: `{candidate:{origin, kernel, mix}, baseline:{...}, divergences:[{rank, severity, category, "
       "reason, candidate, baseline}], top, file}`.",
       setup_sass_compare},
      {"serve", "the monitor: tasks, scheduler, live dashboard, REST API",
       "Runs until stopped (SIGINT/SIGTERM). Indexes every task of the workspace into a database (SQLite "
       "in WAL mode, default <root>/.croq/monitor.db) kept in step with the ledgers by polling; the ledgers "
       "stay the source of truth and tasks found on disk are adopted. Schedules tasks as child processes (one "
       "per device slot) with budgets, pause/resume/cancel/retry, restarts after crashes and parking after a "
       "rate limit (exit code 75, or a rate-limit message in the output); children outlive the server and are "
       "adopted by the next one. Serves the dashboard, the REST API and the event stream of docs/api.md. "
       "Loopback only unless --bind names another address, which requires a token (--token-file, or one "
       "generated and shown once). Adding, starting or changing a task needs the token on loopback too: "
       "without --token-file the dashboard and the API only read. Requests are read whole within time "
       "limits before a thread takes them, each client address has a cap on connections and event streams, "
       "and the API is answered by threads that event streams never hold. Servers of several machines may "
       "share one PostgreSQL database, each for its own workspace: each syncs and schedules only the tasks it "
       "owns (owner `<host>:<root>`, or CROQ_SERVE_OWNER), shows every server's, and records actions on "
       "another server's task for that server to carry out. See docs/monitor.md.\n\n"
       "Output: once listening, `{ok, url, bind, port, db, root, owner, auth, scheduler, tasks, adopted, "
       "records_indexed, index_ms, pid}`. `--check`: `{clean, owner, tasks_on_disk, tasks_in_db, "
       "tasks_of_other_servers, tasks_unclaimed, rounds_on_disk, rounds_in_db, differences, pending}` (this "
       "server's tasks only), exit 1 if the database differs from the ledgers. `--once`: the sync statistics. "
       "Exit 6 if another croq serve uses the database or the port is taken.",
       setup_serve},
      {"report", "a static HTML report with SVG figures and CSV tables",
       "Reads the ledgers directly (no server needed) and writes into --out: index.html, summary.csv "
       "(baseline, best, ratio, rounds, KEEP/DISCARD/failed counts, median time per round, and whether the "
       "baseline and the best are measured by croq or reported: typed by hand or printed by the program, marked "
       "\"(reported)\" on the page), "
       "convergence_all.svg, and per task <shape_key>__<model>__<dsl>__<gpu>/ with convergence.svg "
       "(every round, best so far, baseline), progression.svg (idea categories and bottlenecks per round), "
       "bottlenecks.svg (bottleneck distribution over the run), rounds.csv, progression.csv and "
       "bottlenecks.csv. The figures are the dashboard's. A CSV cell that a spreadsheet would run as a "
       "formula (it starts with = + - @, tab or CR and is not a number) gets a leading '.\n\n"
       "Output: `{ok, out, tasks, files, summary}`. Exit 4 if a --task matches nothing.\n\n"
       "`--sweep` reports across the sweep instead (tuning/state.json, docs/sweep.md): index.html with the "
       "shapes x dtypes table (best / baseline, rounds), sweep.csv (baseline, best, ratio, rounds, GPU hours and the "
       "bottleneck mix per shape), progress.csv and progress.svg (rounds stored and shapes done over time), "
       "bottlenecks.svg. Output: `{ok, out, files, shapes}`; exit 4 when the workspace has no sweep.",
       setup_report},
      {"export", "the best KEEP of one or many tasks as one library for users (C, CMake, PyTorch)",
       "For each task (`<gpu>/<dsl>/<shape_key>/<model>`, a shape key with --gpu/--dsl/--model, or `--all`), the "
       "best KEEP (resume's current_best_kernel) is built from its source with the flags it was tuned with. Every "
       "kernel's symbols are renamed with its own prefix, so kernels of one template with different configurations "
       "live in one library. `--out DIR` receives `lib/lib<name>.so` and `lib/lib<name>.a` (exporting only "
       "`<name>_*`), `include/<name>.h` with `<name>_matmul(problem, a, b, c, workspace, workspace_bytes, stream)` "
       "(croq's kernel ABI; `<name>_gemm` too when a kernel implements ABI version 2), `lib/cmake/<name>/` "
       "(`find_package(<name>)`, targets `<name>::<name>` and `<name>::<name>_static`), `torch/` (a PyTorch "
       "extension, `torch.ops.<name>.matmul`; `python3 setup.py build_ext --inplace` there), `src/` (the sources, "
       "the generated dispatcher, `build.sh`) and `manifest.json` (`croq-export-v1`: the task, round, kernel, "
       "TFLOPS, source sha256 and flags of every kernel).\n\n"
       "Dispatch: the kernel tuned for exactly the problem's M, N, K and B layout first; else the nearest tuned "
       "shape of the same element types, the distance being |log2(M/Mt)| + |log2(N/Nt)| + |log2(K/Kt)| (ties: the "
       "larger tuned shape), same B layout before the other; a kernel answering CROQ_UNSUPPORTED passes the call "
       "to the next. `<name>_matmul_choice(&problem)` names the kernel tried first. With `--name croq` the entries "
       "are the ABI's own names, so the library is itself a croq candidate (`croq measure --candidate`).\n\n"
       "Output: the manifest with `out` and `symbols` (what the shared library exports). Exit 2 for a task without "
       "a KEEP, a dsl other than cuda or cpp, two tasks of one problem, or a non-empty --out that holds no earlier "
       "export (without --force); 4 if a source is missing; 8 if a kernel does not compile (the folder is left as "
       "it was).",
       setup_export},
      {"help", "print the verb list, or the full reference as Markdown (--markdown)",
       "`croq help --markdown` prints docs/cli.md; `croq help --json` the verb table as "
       "`[{name, summary, details}]`.", setup_help},
  };
  return table;
}

}  // namespace croq::cli

namespace croq::cli {

// Examples shown in each verb's help and in docs/cli.md. A test runs every one through the parser.
// T is a task named in full; inside a task context (`croq use`) its options may be left out.
const std::vector<std::string>& verb_examples(const std::string& name) {
#define T " --dsl cpp --shape-key matmul_f32_512x512x512 --model me"
  static const std::map<std::string, std::vector<std::string>> table = {
      {"where", {"croq where"}},
      {"use", {"croq use" T, "croq use", "croq use --clear"}},
      {"status", {"croq status", "croq status --dsl cpp --json"}},
      {"task init", {"croq task init" T " --task-uid run-42"}},
      {"protocol begin", {"croq protocol begin" T " --rounds 20"}},
      {"state", {"croq state" T, "croq state   # in a task context"}},
      {"decide", {"croq decide" T " --kernel iter002_kc64", "croq decide --measurement tuning/cpu_x86_64/cpp/perf/matmul_f32_512x512x512/me/measure_iter002_kc64.json"}},
      {"tune", {"croq tune matmul_f32_512x512x512 --dsl cpp --rounds 10", "croq tune matmul_f16fp32_4096x4096x4096 matmul_bf16fp32_4096x4096x4096 --dsl cuda --jobs 2"}},
      {"round", {"croq round" T, "croq round --iter iter002_kc64 --no-store"}},
      {"next-iter", {"croq next-iter" T " --tag kc64", "croq next-iter --tag kc64 --peek"}},
      {"store-round", {"croq store-round" T " --kernel iter002_kc64 --measurement tuning/cpu_x86_64/cpp/perf/matmul_f32_512x512x512/me/measure_iter002_kc64.json",
                       "croq store-round --iter iter003 --kernel iter003_unroll --decision COMPILE_FAIL --bottleneck compute_bound --idea 'unroll by 8'"}},
      {"attempt", {"croq attempt" T " --tag unroll --reason code_bug --idea 'unroll by 8'"}},
      {"checkpoint write", {"croq checkpoint write" T " --iter iter002 --base iter001_blocked --bottleneck memory_bound --idea 'halve the K panel so B stays in L1' --levers k_kc --params '{\"k_kc\":64}'"}},
      {"checkpoint read", {"croq checkpoint read" T}},
      {"checkpoint verify", {"croq checkpoint verify" T " --iter iter002_kc64"}},
      {"init", {"croq init", "croq init --agent claude --agent codex --compat"}},
      {"agent run", {"croq agent run matmul_f32_512x512x512 --dsl cpp --model claude-1 --agent claude --rounds 10"}},
      {"resume", {"croq resume" T " --summary"}},
      {"reinforce", {"croq reinforce" T}},
      {"session validate", {"croq session validate" T, "croq session validate --dsl cpp"}},
      {"session clean", {"croq session clean --dsl cpp --invalid-only"}},
      {"gpu key", {"croq gpu key"}},
      {"gpu check", {"croq gpu check", "croq gpu check --wait"}},
      {"gpu contention", {"croq gpu contention"}},
      {"gpu lease", {"croq gpu lease -- nvidia-smi", "croq gpu lease --history"}},
      {"env validate", {"croq env validate --dsl cpp"}},
      {"baseline", {"croq baseline" T " --task-uid run-42"}},
      {"discover", {"croq discover --dsl cpp --operator matmul"}},
      {"prepare", {"croq prepare" T, "croq prepare" T " --pick 2", "croq prepare" T " --from my_kernel.cpp --tag mine"}},
      {"build", {"croq build" T " --iter iter002_kc64"}},
      {"measure", {"croq measure" T " --iter iter002_kc64", "croq measure --iter iter002_kc64 --pairs", "croq measure" T " --candidate ./my_kernel.so"}},
      {"profile", {"croq profile" T " --iter iter001_blocked", "croq profile" T " --baseline"}},
      {"classify", {"croq classify --csv ncu_iter001_round1.csv --dsl cuda"}},
      {"sass dump", {"croq sass dump --candidate bin/iter003_tma.so"}},
      {"sass compare", {"croq sass compare --dsl cuda --shape-key matmul_f16fp32_4096x4096x4096 --model me --iter iter003_tma"}},
      {"serve", {"croq serve", "croq serve --check"}},
      {"report", {"croq report --out report/"}},
      {"export", {"croq export --all --out exported --name gemm",
                  "croq export matmul_f16fp32_4096x4096x4096 --gpu sm90_NVIDIA_H200 --dsl cuda --model croq-search --out exported --library static"}},
      {"help", {"croq help", "croq help store-round", "croq help --markdown"}},
      {"sweep run", {"croq sweep run --manifest small.json --dsl cpp --rounds 3", "croq sweep run --manifest typical --dsl cuda --gpus 0,2"}},
      {"sweep submit", {"croq sweep submit --slurm --manifest typical --op matmul --dtype f16fp32 --dsl cuda --rounds 150 "
                        "--partition gpu --account proj42 --time 2-00:00:00",
                        "croq sweep submit --slurm --dsl cuda --sbatch-arg=--constraint=h200 --dry-run"}},
      {"sweep task", {"croq sweep task --submission tuning/slurm/20261202T050812-4242/submission.json --index 3"}},
      {"sweep status", {"croq sweep status"}},
      {"sweep stop", {"croq sweep stop --wait"}},
  };
#undef T
  static const std::vector<std::string> none;
  auto it = table.find(name);
  return it == table.end() ? none : it->second;
}

}  // namespace croq::cli
