// The ncu capture and export (ncu_runner.hpp).
#include "croq/profile/ncu_runner.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "croq/profile/kernel_select.hpp"
#include "croq/profile/ncu_csv.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/process_gate.hpp"
#include "croq/util/text.hpp"

namespace croq::profile {

const char* ncu_preset_name(NcuPreset p) { return p == NcuPreset::full ? "full" : "quick"; }

NcuPreset parse_ncu_preset(const std::string& text) {
  if (text == "full") return NcuPreset::full;
  if (text == "quick") return NcuPreset::quick;
  throw_usage(fmt::format("unknown preset \"{}\"", text), "use --preset full (every section) or quick (a few seconds)");
}

std::vector<std::string> ncu_profile_argv(const NcuCapture& c, const fs::path& export_path) {
  std::vector<std::string> a = {c.ncu};
  if (!c.nvtx_range.empty()) {
    a.insert(a.end(), {"--nvtx", "--nvtx-include", c.nvtx_range + "/"});
  }
  a.insert(a.end(), {"--clock-control", "none"});
  if (c.preset == NcuPreset::full) {
    a.insert(a.end(), {"--set", "full"});
  } else {
    // The sections the classifier reads, plus the two pipe metrics it uses as corroboration.
    for (const char* s : {"SpeedOfLight", "LaunchStats", "Occupancy", "ComputeWorkloadAnalysis", "MemoryWorkloadAnalysis",
                          "SchedulerStats", "WarpStateStats"}) {
      a.insert(a.end(), {"--section", s});
    }
    a.insert(a.end(), {"--metrics",
                       "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,"
                       "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed,"
                       "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"});
  }
  if (!c.kernel_regex.empty()) a.insert(a.end(), {"--kernel-name", "regex:" + c.kernel_regex});
  if (c.launch_skip) a.insert(a.end(), {"--launch-skip", std::to_string(*c.launch_skip)});
  a.insert(a.end(), {"--launch-count", std::to_string(c.launch_count), "--target-processes", "all", "--export",
                     export_path.string(), "--force-overwrite"});
  a.insert(a.end(), c.program.begin(), c.program.end());
  return a;
}

namespace {

// Removes a file when it goes out of scope unless released.
class TempFile {
 public:
  explicit TempFile(fs::path p) : m_path(std::move(p)) {}
  ~TempFile() {
    std::error_code ec;
    if (!m_path.empty()) fs::remove(m_path, ec);
  }
  const fs::path& path() const { return m_path; }
  void release() { m_path.clear(); }

 private:
  fs::path m_path;
};

std::string tail_lines(const std::string& text, size_t n) {
  auto lines = split_lines(text);
  std::string out;
  size_t start = lines.size() > n ? lines.size() - n : 0;
  for (size_t i = start; i < lines.size(); ++i) {
    if (trim(lines[i]).empty()) continue;
    out += (out.empty() ? "" : " | ") + trim(lines[i]);
  }
  return preview(out, 600);
}

std::string filter_description(const NcuCapture& c) {
  std::vector<std::string> parts;
  if (!c.nvtx_range.empty()) parts.push_back(fmt::format("NVTX range \"{}\"", c.nvtx_range));
  if (!c.kernel_regex.empty()) parts.push_back(fmt::format("kernel name /{}/", c.kernel_regex));
  if (c.launch_skip) parts.push_back(fmt::format("after skipping {} launches", *c.launch_skip));
  return parts.empty() ? std::string("no filter") : fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

NcuCaptureResult run_ncu_capture(const NcuCapture& c, ProcessRunner& runner) {
  if (c.program.empty()) throw Error(ExitCode::internal, "ncu capture without a program to run");
  if (c.stem.empty() || c.stem.find('/') != std::string::npos) {
    throw Error(ExitCode::internal, fmt::format("bad report name \"{}\"", c.stem));
  }
  ensure_dir(c.out_dir);
  NcuCaptureResult r;
  r.report = c.out_dir / (c.stem + ".ncu-rep");
  r.csv = c.out_dir / (c.stem + ".csv");
  std::string tmp_base = fmt::format(".{}.tmp-{}", c.stem, ::getpid());
  TempFile tmp_rep(c.out_dir / (tmp_base + ".ncu-rep"));

  // 1. Capture.
  ProcessSpec spec;
  spec.argv = ncu_profile_argv(c, tmp_rep.path());
  spec.timeout = c.timeout;
  r.profile_argv = spec.argv;
  ProcessResult p;
  if (c.gate) {
    const fs::path go = c.out_dir / (tmp_base + ".go");
    p = run_at_gate(spec, go.string(), c.gate, c.gate_timeout, runner, r.gated);
    r.profile_argv.insert(r.profile_argv.end(), {"--go-file", go.string()});  // as run_at_gate ran it
    if (!r.gated && p.started && !p.timed_out && p.exit_code == 0) {
      throw Error(ExitCode::internal, "the profiled runner ran without waiting at croq's gate (--go-file): the device's "
                                      "lease was not held", "this is a bug in croq; please report it");
    }
  } else {
    p = runner.run(spec);
  }
  r.profile_ms = p.wall_ms;
  const std::string log = p.out + "\n" + p.err;
  if (!p.started) {
    throw Error(ExitCode::no_device, fmt::format("Nsight Compute (ncu) could not be started: {}", p.spawn_error),
                "install Nsight Compute on the GPU machine, or give its path with --ncu PATH (or CROQ_NCU)");
  }
  if (p.timed_out) {
    throw Error(ExitCode::failure,
                fmt::format("ncu did not finish within {} s (the program hung, or the replay of this kernel is too slow)",
                            c.timeout.count() / 1000),
                "raise --timeout, use --preset quick, or check the candidate with `croq measure` first");
  }
  if (log.find("ERR_NVGPUCTRPERM") != std::string::npos) {
    throw Error(ExitCode::failure,
                "ncu may not read the GPU performance counters (ERR_NVGPUCTRPERM)",
                "run croq as root, or allow profiling for all users: put `options nvidia "
                "NVreg_RestrictProfilingToAdminUsers=0` in /etc/modprobe.d/nvidia-profiling.conf and reload the driver "
                "(or reboot); see https://developer.nvidia.com/ERR_NVGPUCTRPERM");
  }
  bool app_failed = log.find("The application returned an error code") != std::string::npos ||
                    log.find("application terminated") != std::string::npos;
  std::error_code ec;
  bool have_report = fs::exists(tmp_rep.path(), ec);
  if (app_failed) {
    throw Error(ExitCode::candidate_failed,
                fmt::format("the profiled program failed under ncu ({}): {}", p.describe(), tail_lines(log, 6)),
                "run the candidate through `croq measure` to see its verdict");
  }
  if (log.find("No kernels were profiled") != std::string::npos || (p.ok() && !have_report)) {
    throw Error(ExitCode::not_found,
                fmt::format("no kernel matched the profile filter ({}): ncu profiled nothing", filter_description(c)),
                "check that the program launches the kernel inside the NVTX range (croq-gpu-runner --mode profile does), "
                "and that --kernel-name matches its name");
  }
  if (!p.ok() || !have_report) {
    throw Error(ExitCode::failure, fmt::format("ncu failed ({}): {}", p.describe(), tail_lines(log, 8)),
                "run the ncu command shown with --pretty by hand to see its full log");
  }

  // 2. Export the raw page as CSV.
  ProcessSpec ex;
  ex.argv = {c.ncu, "--import", tmp_rep.path().string(), "--page", "raw", "--csv"};
  ex.timeout = c.timeout;
  ex.env_set = {{"LC_ALL", "C"}};  // ncu's default number format (see ncu_csv.hpp)
  r.export_argv = ex.argv;
  ProcessResult e = runner.run(ex);
  r.export_ms = e.wall_ms;
  if (!e.ok()) {
    throw Error(ExitCode::failure, fmt::format("ncu --import failed ({}): {}", e.describe(), tail_lines(e.out + "\n" + e.err, 8)),
                "the report may be damaged; profile again");
  }
  NcuCsv csv = parse_ncu_csv(e.out, r.csv.filename().string());
  r.kernels_captured = static_cast<int>(csv.kernels.size());
  KernelSelection sel = select_kernel(csv, c.kernel_regex);
  r.kernel = csv.kernels[sel.index].name;
  KernelOrigin origin = kernel_origin(r.kernel);
  r.kernel_origin = kernel_origin_name(origin);
  bool wrong = c.expect_library ? origin == KernelOrigin::harness : origin != KernelOrigin::candidate;
  if (wrong) {
    throw Error(ExitCode::refused,
                fmt::format("the captured kernel \"{}\" is a {} kernel, not the {}'s: the profile would describe the "
                            "wrong code",
                            preview(r.kernel, 120), r.kernel_origin, c.expect_library ? "library baseline" : "candidate"),
                "profile through croq-gpu-runner --mode profile (NVTX range croq_candidate), or narrow --kernel-name");
  }

  // 3. Into place: the CSV atomically, then the report by rename.
  r.replaced = fs::exists(r.report, ec) || fs::exists(r.csv, ec);
  atomic_write(r.csv, e.out);
  fs::rename(tmp_rep.path(), r.report, ec);
  if (ec) {
    std::string why = ec.message();
    fs::remove(r.csv, ec);
    throw Error(ExitCode::failure, fmt::format("could not move the report into place: {}", why));
  }
  tmp_rep.release();
  return r;
}

}  // namespace croq::profile
