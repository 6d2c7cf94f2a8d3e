// Runner flags (runner_options.hpp).
#include "croq/measure/runner_options.hpp"

#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/util/number.hpp"

namespace croq {

namespace {

int64_t to_int(const std::string& flag, const std::string& v, int64_t lo, int64_t hi) {
  return parse_integer_arg(v, flag, lo, hi);
}

double to_double(const std::string& flag, const std::string& v, double lo, double hi) {
  return parse_number_arg(v, flag, lo, hi);
}

std::string fmt_double(double v) {
  std::string s = fmt::format("{}", v);
  return s;
}

}  // namespace

RunnerOptions parse_runner_options(const std::vector<std::string>& args) {
  RunnerOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw_usage(fmt::format("{} needs a value", a));
      return args[++i];
    };
    if (a == "--help" || a == "-h") o.help = true;
    else if (a == "--candidate") o.candidate = value();
    else if (a == "--library") o.library = value();
    else if (a == "--op") o.op = value();
    else if (a == "--m") o.m = to_int(a, value(), 1, int64_t{1} << 31);
    else if (a == "--n") o.n = to_int(a, value(), 1, int64_t{1} << 31);
    else if (a == "--k") o.k = to_int(a, value(), 1, int64_t{1} << 31);
    else if (a == "--dtype") o.dtype = value();
    else if (a == "--b-layout") {
      o.b_layout = value();
      if (o.b_layout != "row" && o.b_layout != "col" && o.b_layout != "auto") {
        throw_usage(fmt::format("--b-layout '{}' is not row, col or auto", o.b_layout));
      }
    } else if (a == "--seed") {
      o.seed = parse_unsigned_arg(value(), "--seed");
    } else if (a == "--mode") {
      std::string v = value();
      if (v == "measure") o.mode = RunMode::measure;
      else if (v == "verify") o.mode = RunMode::verify;
      else if (v == "profile") o.mode = RunMode::profile;
      else throw_usage(fmt::format("--mode '{}' is not measure, verify or profile", v));
    } else if (a == "--warmup") o.warmup = static_cast<int>(to_int(a, value(), 0, 100000));
    else if (a == "--warmup-ms") o.warmup_ms = to_double(a, value(), 0.0, 600000.0);
    else if (a == "--min-time-ms") o.min_time_ms = to_double(a, value(), 0.0, 3.6e6);
    else if (a == "--rest-ratio") o.rest_ratio = to_double(a, value(), 0.0, 100.0);
    else if (a == "--rest-window-ms") o.rest_window_ms = to_double(a, value(), 0.1, 60000.0);
    else if (a == "--min-reps") o.min_reps = static_cast<int>(to_int(a, value(), 1, 1000000));
    else if (a == "--max-reps") o.max_reps = static_cast<int>(to_int(a, value(), 1, 1000000));
    else if (a == "--cv-target") o.cv_target = to_double(a, value(), 0.0, 10.0);
    else if (a == "--time-budget-ms") o.time_budget_ms = to_double(a, value(), 0.0, 3.6e6);
    else if (a == "--no-l2-flush") o.l2_flush = false;
    else if (a == "--no-hold") o.hold = false;
    else if (a == "--rotation-sets") o.rotation_sets = static_cast<int>(to_int(a, value(), 1, 16));
    else if (a == "--device") o.device = value();
    else if (a == "--cusparselt") o.cusparselt = value();
    else if (a == "--out") o.out = value();
    else throw_usage(fmt::format("unknown option '{}'", a), "run with --help for the options");
  }
  if (o.help) return o;
  if (o.candidate.empty() == o.library.empty()) throw_usage("give exactly one of --candidate PATH and --library NAME");
  if (o.op != "matmul" && o.op != "gemm_sp" && o.op != "blockscaled") {
    throw_usage(fmt::format("--op '{}' is not matmul, gemm_sp (2:4 sparse A) or blockscaled (FP8 with block scales)", o.op));
  }
  if (o.m <= 0 || o.n <= 0 || o.k <= 0) throw_usage("--m, --n and --k are required");
  if (o.dtype.empty()) throw_usage("--dtype is required (e.g. f16f32)");
  if (o.min_reps > o.max_reps) throw_usage("--min-reps is larger than --max-reps");
  return o;
}

std::vector<std::string> runner_arguments(const RunnerOptions& o) {
  std::vector<std::string> a;
  if (!o.candidate.empty()) a.insert(a.end(), {"--candidate", o.candidate});
  if (!o.library.empty()) a.insert(a.end(), {"--library", o.library});
  a.insert(a.end(), {"--op", o.op, "--m", std::to_string(o.m), "--n", std::to_string(o.n), "--k", std::to_string(o.k),
                     "--dtype", o.dtype, "--b-layout", o.b_layout});
  if (o.seed) a.insert(a.end(), {"--seed", std::to_string(*o.seed)});
  a.insert(a.end(), {"--mode", run_mode_name(o.mode), "--warmup", std::to_string(o.warmup), "--warmup-ms",
                     fmt_double(o.warmup_ms), "--min-reps", std::to_string(o.min_reps), "--max-reps",
                     std::to_string(o.max_reps), "--cv-target", fmt_double(o.cv_target), "--min-time-ms",
                     fmt_double(o.min_time_ms), "--time-budget-ms", fmt_double(o.time_budget_ms), "--rest-ratio",
                     fmt_double(o.rest_ratio), "--rest-window-ms", fmt_double(o.rest_window_ms)});
  if (!o.l2_flush) a.push_back("--no-l2-flush");
  if (!o.hold) a.push_back("--no-hold");
  if (o.rotation_sets != 2) a.insert(a.end(), {"--rotation-sets", std::to_string(o.rotation_sets)});
  if (!o.device.empty()) a.insert(a.end(), {"--device", o.device});
  if (!o.cusparselt.empty()) a.insert(a.end(), {"--cusparselt", o.cusparselt});
  if (!o.out.empty()) a.insert(a.end(), {"--out", o.out});
  return a;
}

std::string runner_usage(const std::string& program, const std::string& libraries) {
  return fmt::format(
      "usage: {0} (--candidate PATH.so | --library {1}) --m M --n N --k K --dtype TOKEN [options]\n"
      "\n"
      "Verifies and times one candidate (kernel ABI v2 croq_gemm, or v1 croq_matmul for dense matmul;\n"
      "include/croq/kernel_abi.h) or a library baseline, and writes one croq-measurement-v1 JSON\n"
      "document (stdout, and --out atomically).\n"
      "croq runs this program as a child process with a time limit (`croq measure`, `croq baseline`).\n"
      "\n"
      "  --op matmul|gemm_sp|blockscaled  operator: dense matmul, A 2:4 structured sparse (K a multiple\n"
      "                         of 8), or FP8 with f32 scales per 1x128 (A) and 128x128 (B) block\n"
      "  --dtype TOKEN          f16f32 f16 bf16f32 bf16 e4m3f16 e4m3bf16 f32 tf32 (and the seeds' spellings)\n"
      "  --b-layout row|col|auto  B as K x N row-major, or N x K (\"row.col\"); auto tries both\n"
      "  --seed S               random inputs' seed (default: fresh, recorded)\n"
      "  --mode measure|verify|profile\n"
      "  --warmup N             untimed launches before timing (default 10)\n"
      "  --warmup-ms MS         ...and back-to-back launches until the warm-up has lasted MS, so the\n"
      "                         GPU is timed in its sustained, power-limited state (default 0)\n"
      "  --min-reps N --max-reps N --cv-target F --time-budget-ms MS   stopping rule\n"
      "  --min-time-ms MS       the CV target ends the timing only after MS of repetitions (default 0)\n"
      "  --rest-ratio R         once the GPU has been busy --rest-window-ms (default 10), it idles R\n"
      "                         times as long, so the timing stays under the power cap (default 1;\n"
      "                         0: back to back)\n"
      "  --no-l2-flush          time hot (no cache flush, no input rotation)\n"
      "  --no-hold              do not hold the stream behind a blocking kernel\n"
      "  --rotation-sets N      input sets rotated while timing (default 2)\n"
      "  --device N|GPU-uuid    device (default: the first visible)\n"
      "  --cusparselt PATH      libcusparseLt.so.0, or a folder holding it (default: CROQ_CUSPARSELT,\n"
      "                         the loader's search path, then the nvidia-cusparselt Python package)\n"
      "  --out FILE             where to write the measurement\n"
      "  --print-rules          print the measurement rules (dtypes, tolerances, timing defaults, peak\n"
      "                         table; croq-measurement-rules-v1) as JSON and exit: what croq passes\n"
      "                         to the Python runner (--rules)\n"
      "\n"
      "Exit status: 0 when a measurement was written (whatever its verdict), 2 bad arguments,\n"
      "4 candidate file missing, 7 no device, 70 internal error. A crash or hang of the candidate\n"
      "kills this process; croq records SEGFAULT or HANG.\n",
      program, libraries);
}

}  // namespace croq
