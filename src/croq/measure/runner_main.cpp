// The runners' main (runner_main.hpp).
#include "croq/measure/runner_main.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <random>

#include <fmt/format.h>

#include "croq/measure/elf_scan.hpp"
#include "croq/measure/rules.hpp"
#include "croq/measure/snapshot.hpp"
#include "croq/util/build_info.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/hash.hpp"
#include "croq/util/time.hpp"

namespace croq {

namespace {

uint64_t fresh_seed() {
  std::random_device rd;
  uint64_t s = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return s & ((uint64_t{1} << 53) - 1);  // exact in a JSON double, for readers that parse numbers as doubles
}

// The phases the runner went through, with the host time each one lasted.
class PhaseLog {
 public:
  void enter(const std::string& what) {
    close();
    m_name = what;
    m_start = m_clock.elapsed_ms();
    std::cerr << "phase: " << what << std::endl;
  }
  json to_json() {
    close();
    return m_done;
  }

 private:
  void close() {
    if (m_name.empty()) return;
    const double ms = m_clock.elapsed_ms() - m_start;
    m_done.push_back({{"phase", m_name}, {"ms", std::round(ms * 100) / 100}});
    m_name.clear();
  }
  Stopwatch m_clock;
  std::string m_name;
  double m_start = 0;
  json m_done = json::array();
};

void write_measurement(Measurement m, const RunnerOptions& o, PhaseLog& phases) {
  m.phases = phases.to_json();
  std::string text = dump_pretty(m.to_json());
  if (!o.out.empty()) atomic_write(o.out, text + "\n");
  std::cout << text << std::endl;
}

}  // namespace

int runner_main(int argc, char** argv, RunnerPlatform& platform) {
  const std::string program = platform.program();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "--print-rules") {
    std::cout << dump_pretty(measurement_rules()) << std::endl;
    return 0;
  }
  RunnerOptions o;
  try {
    o = parse_runner_options(args);
  } catch (const Error& e) {
    std::cerr << program << ": " << e.what() << "\n";
    if (!e.hint().empty()) std::cerr << "  hint: " << e.hint() << "\n";
    return static_cast<int>(ExitCode::usage);
  }
  if (o.help) {
    std::cout << runner_usage(program, platform.libraries());
    return 0;
  }
  if (!o.library.empty() && ("|" + platform.libraries() + "|").find("|" + o.library + "|") == std::string::npos) {
    std::cerr << program << ": unknown library '" << o.library << "' (" << platform.libraries() << ")\n";
    return static_cast<int>(ExitCode::usage);
  }
  PhaseLog phases;
  auto phase = [&](const std::string& what) { phases.enter(what); };
  try {
    ProblemSetup setup = make_problem(o.op, o.m, o.n, o.k, o.dtype,
                                      o.b_layout == "col" || (o.b_layout == "auto" && o.op == "blockscaled") ? "col" : "row");
    Measurement base;
    base.croq_version = build_info::k_version;
    base.croq_git = build_info::git_sha();
    base.created_at = now_iso8601();
    base.kind = o.library.empty() ? "candidate" : "baseline";
    base.argv.assign(argv, argv + argc);
    base.problem = setup.desc;
    base.seed = o.seed ? *o.seed : fresh_seed();
    base.verification.elements = o.m * o.n;

    std::optional<CandidateSnapshot> snapshot;  // alive as long as the candidate is loaded
    std::unique_ptr<CandidateLibrary> candidate;
    if (!o.candidate.empty()) {
      std::error_code ec;
      if (!std::filesystem::is_regular_file(o.candidate, ec)) {
        std::cerr << program << ": candidate not found: " << o.candidate << "\n";
        return static_cast<int>(ExitCode::not_found);
      }
      base.candidate_path = std::filesystem::absolute(o.candidate).string();
      // One read of the file: the hash recorded, the scan and the load are of the same bytes.
      snapshot.emplace(CandidateSnapshot::take(o.candidate));
      base.candidate_sha256 = sha256_file(snapshot->path());
      phase("purity scan");
      PurityReport purity = scan_candidate(snapshot->path());
      auto refuse = [&](Verdict v, const std::string& code, const std::string& detail) {
        Measurement m = base;
        m.device = platform.describe_device(o, setup);
        m.verdict = v;
        m.reason = code;
        m.detail = detail;
        write_measurement(m, o, phases);
        return 0;
      };
      if (!purity.is_elf) return refuse(Verdict::RUNTIME_FAIL, reason::load_failed, "not a shared object: " + purity.error);
      if (!purity.clean()) return refuse(Verdict::LIBRARY_CALL_FORBIDDEN, reason::library_call_forbidden, purity.summary());
      phase("load");
      if (std::string why = platform.confine_before_loading(); !why.empty()) {
        std::cerr << program << ": cannot confine the candidate: " << why << "\n";
        return static_cast<int>(ExitCode::internal);
      }
      std::string code, error;
      candidate = CandidateLibrary::open(snapshot->path(), code, error);
      if (!candidate) return refuse(Verdict::RUNTIME_FAIL, code, error);
      base.candidate_info = candidate->info;
      base.candidate_abi_version = candidate->abi_version();
      if (std::string why = candidate->cannot_compute(setup); !why.empty()) {
        return refuse(Verdict::UNSUPPORTED, reason::candidate_unsupported, why);
      }
    } else {
      base.candidate_path = "library:" + o.library;
    }

    Measurement result;
    std::unique_ptr<MeasureBackend> keep;  // alive until the process leaves (see below)
    for (const std::string& layout : layout_order(o.b_layout, setup.dtype, o.op)) {
      ProblemSetup p = make_problem(o.op, o.m, o.n, o.k, o.dtype, layout);
      keep.reset();  // the previous layout's buffers go before the next are allocated
      phase("open device (B " + layout + ")");
      std::string error;
      bool no_device = false;
      std::unique_ptr<MeasureBackend> backend = platform.open(o, p, candidate.get(), error, no_device);
      if (!backend) {
        std::cerr << program << ": " << error << "\n";
        return static_cast<int>(no_device ? ExitCode::no_device : ExitCode::internal);
      }
      ProcedureOptions po;
      po.mode = o.mode;
      po.seed = *base.seed;
      po.warmup = o.warmup;
      po.warmup_ms = o.warmup_ms;
      po.stop.min_reps = o.min_reps;
      po.stop.min_time_ms = o.min_time_ms;
      po.rest_ratio = o.rest_ratio;
      po.rest_window_ms = o.rest_window_ms;
      po.stop.max_reps = o.max_reps;
      po.stop.cv_target = o.cv_target;
      po.stop.time_budget_ms = o.time_budget_ms;
      po.l2_flush = o.l2_flush;
      po.hold_stream = o.hold;
      po.rotation_sets = o.l2_flush ? o.rotation_sets : 1;
      po.library = !o.library.empty();
      po.on_phase = phase;
      phase(std::string(run_mode_name(o.mode)));
      Measurement m = run_procedure(*backend, p.desc, p.dtype, po);
      m.croq_version = base.croq_version;
      m.croq_git = base.croq_git;
      m.created_at = base.created_at;
      m.kind = base.kind;
      m.argv = base.argv;
      m.candidate_path = base.candidate_path;
      m.candidate_sha256 = base.candidate_sha256;
      m.candidate_info = base.candidate_info;
      m.candidate_abi_version = base.candidate_abi_version;
      if (candidate) {
        if (std::string why = candidate->prepare_not_offered(p); !why.empty()) m.warnings.push_back(why);
      }
      result = m;
      keep = std::move(backend);
      if (m.verdict != Verdict::UNSUPPORTED) break;
    }
    phase("write");
    write_measurement(result, o, phases);
    // Leave at once: tearing down a CUDA context a candidate broke, or unloading a candidate's
    // code, can crash or hang after the measurement is safely written.
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    std::_Exit(0);
  } catch (const HarnessError& e) {
    std::cerr << program << ": internal error: " << e.what() << "\n";
    return static_cast<int>(ExitCode::internal);
  } catch (const Error& e) {
    std::cerr << program << ": " << e.what() << "\n";
    if (!e.hint().empty()) std::cerr << "  hint: " << e.hint() << "\n";
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::cerr << program << ": internal error: " << e.what() << "\n";
    return static_cast<int>(ExitCode::internal);
  }
}

}  // namespace croq
