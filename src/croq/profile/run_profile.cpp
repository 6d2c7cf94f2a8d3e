// croq profile as a function (run_profile.hpp).
#include "croq/profile/run_profile.hpp"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "croq/build/triton_source.hpp"
#include "croq/gpu/lease.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/measure/candidates.hpp"
#include "croq/measure/rules.hpp"
#include "croq/measure/verdict.hpp"
#include "croq/profile/classify_csv.hpp"
#include "croq/profile/cpu_profile.hpp"
#include "croq/protocol/evidence.hpp"
#include "croq/steps/measure_step.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/text.hpp"
#include "croq/workspace/dtype.hpp"
#include "croq/workspace/ids.hpp"
#include "croq/workspace/operators.hpp"

namespace croq::profile {

namespace {

std::chrono::milliseconds lease_wait(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

// "iter005_tiles" -> itself; "iter005" or "5" -> the unique bin/<key>/<model>/iter005_*.so.
std::string resolve_iter_kernel(const fs::path& bin_dir, const std::string& iter) {
  if (auto id = try_parse_iter_id(iter)) return id->name();
  int n = parse_iter_number(iter);
  std::string prefix = iter_number_name(n) + "_";
  std::vector<std::string> found;
  std::error_code ec;
  if (fs::is_directory(bin_dir, ec)) {
    for (const auto& e : fs::directory_iterator(bin_dir, ec)) {
      std::string name = e.path().filename().string();
      if (starts_with(name, prefix) && e.path().extension() == ".so") found.push_back(e.path().stem().string());
    }
  }
  if (found.size() != 1) {
    throw Error(ExitCode::not_found,
                fmt::format("{} candidate(s) named {}*.so in {}", found.size(), prefix, bin_dir.string()),
                "give the full kernel name (iter<NNN>_<tag>), or build the iteration with `croq build` first");
  }
  return found.front();
}

// The cpp dsl: no Nsight Compute; a timing roofline (cpu_profile.hpp) of the CPU runner's verified
// measurement, written to perf/<key>/<model>/cpuprof_<kernel>_round<R>.json, with the same
// evidence record as a GPU profile.
StepResult profile_cpu(Workspace& ws, const TaskRef& t, const ProfileOptions& o, const StepDeps& deps) {
  const std::string& iter = o.iter;
  const std::string& library = o.library;
  int sources = (!iter.empty()) + (!library.empty());
  if (sources != 1) throw_usage("give exactly one of --iter or --baseline", "e.g. --iter iter005_blocked");
  std::string kernel;
  fs::path candidate;
  if (!library.empty()) {
    if (library != "openblas") {
      throw_usage(fmt::format("the cpp dsl's library baseline is openblas, not '{}'", preview(library)), "use --baseline");
    }
    kernel = "iter000_openblas";
  } else {
    CandidateRef c = resolve_candidate(ws, t, iter, "", false);
    kernel = c.kernel;
    candidate = c.path;
  }
  if (deps.note) deps.note(fmt::format("[profile] cpp: timing roofline of {} (CPU runner, verified)", kernel));
  Measurement m = measure_on_cpu(t, candidate, library, static_cast<uint64_t>(o.seed), "croq profile " + kernel, deps);
  if (!m.passed()) {
    throw Error(ExitCode::candidate_failed,
                fmt::format("{} did not pass verification ({}: {}); a failed candidate has no profile",
                            kernel, verdict_name(m.verdict), m.reason),
                "profile the current best kernel (`croq state` names it)");
  }
  CpuMachine machine = this_cpu();
  json cls = classify_cpu_measurement(m.to_json(), machine, kernel);
  fs::path out = ws.kind_dir(t, ArtifactKind::perf) / fmt::format("cpuprof_{}_round{}.json", kernel, o.round);
  json file = {{"schema", "croq-cpu-profile-v1"}, {"kernel", kernel}, {"round", o.round},
               {"classification", cls}, {"measurement", m.to_json()}};
  ensure_dir(out.parent_path());
  atomic_write(out, dump_pretty(file) + "\n");
  StepResult res;
  json& doc = res.doc;
  doc["ok"] = true;
  doc["kernel"] = kernel;
  doc["kernel_origin"] = "cpu-runner";
  doc["candidate"] = kernel;
  doc["round"] = o.round;
  doc["report"] = ws.display(out);
  doc["preset"] = "cpu-timing";
  doc["classification"] = cls;
  doc["bottleneck"] = cls["bottleneck"];
  doc["confidence"] = cls["confidence"];
  json summary = {{"captured_kernel", kernel}, {"kernel_origin", "cpu-runner"}, {"preset", "cpu-timing"},
                  {"report", ws.display(out)}, {"bottleneck", cls["bottleneck"]}, {"confidence", cls["confidence"]}};
  record_evidence(ws, t, library.empty() ? EvidenceKind::profile : EvidenceKind::baseline_profile, kernel, out, summary,
                  o.round);
  if (deps.note) {
    deps.note(fmt::format("[profile] {}: {} ({} confidence) - {}", kernel, cls["bottleneck"].get<std::string>(),
                          cls["confidence"].get<std::string>(), cls["reason"].get<std::string>()));
  }
  return res;
}

// The library baseline and the round, as run_profile resolves them.
ProfileOptions resolved(const Workspace& ws, const TaskRef& t, ProfileOptions o) {
  // The library baseline's kernel: cuBLAS's for dense matmul, cuSPARSELt's for 2:4 sparse GEMM.
  if (o.baseline && o.library.empty()) {
    o.library = t.dsl == "cpp" ? "openblas" : is_sparse_operator(operator_name(t.shape)) ? "cusparselt" : "cublas";
  }
  if (o.round < 0) {
    Ledger ledger(ws, t);
    o.round = ledger.exists() ? ledger.index().max_round + 1 : 1;
  }
  return o;
}

}  // namespace

ProfileCapture profile_capture(const Workspace& ws, const TaskRef& t, const ProfileOptions& o) {
  int sources = (!o.iter.empty()) + (!o.library.empty()) + (!o.binary.empty());
  if (sources != 1) throw_usage("give exactly one of --iter, --library or --binary", "e.g. --iter iter005_stages4");
  ProfileCapture pc;
  NcuCapture& cap = pc.capture;
  cap.ncu = o.ncu.empty() ? env_or("CROQ_NCU", "ncu") : o.ncu;
  cap.preset = parse_ncu_preset(o.preset);
  cap.kernel_regex = o.kernel_name;
  cap.timeout = std::chrono::seconds(o.timeout_s);
  cap.out_dir = ws.kind_dir(t, ArtifactKind::perf);
  if (o.b_layout != "row" && o.b_layout != "col" && o.b_layout != "auto") {
    throw_usage("--b-layout must be row, col or auto");
  }
  std::string& kernel = pc.kernel;
  if (!o.binary.empty()) {
    // Legacy executable: no NVTX range; skip the first (cold) launch and keep to the kernel filter.
    fs::path bin = o.binary;
    if (!find_executable(bin.string())) throw_not_found(fmt::format("no executable at {}", bin.string()));
    kernel = bin.filename().string();
    cap.program = {fs::absolute(bin).string()};
    cap.program.insert(cap.program.end(), o.binary_args.begin(), o.binary_args.end());
    cap.nvtx_range.clear();
    cap.launch_skip = o.launch_skip >= 0 ? o.launch_skip : 1;
    if (cap.kernel_regex.empty()) {
      // Exclude the usual set-up kernels of self-timed binaries.
      cap.kernel_regex = "^(?!.*(init|fill|rand|reference|verify|memset)).*$";
    }
  } else if (t.dsl == "triton" && o.library.empty()) {
    // A Triton candidate: croq's Python runner in its profile mode (the one launch after the
    // warm-up inside the NVTX range), and ncu kept to the kernels the module compiles (its
    // @triton.jit functions): neither torch's fill of the poison nor any other kernel is captured.
    CandidateRef c = resolve_candidate(ws, t, o.iter, "", false);
    if (c.kind != CandidateKind::python) {
      throw Error(ExitCode::not_found, fmt::format("{} is not a Triton module", ws.display(c.path)),
                  "a triton task's candidates are srcs/<key>/<model>/<kernel>.py");
    }
    kernel = c.kernel;
    const std::string source = read_file_or_throw(c.path);
    if (cap.kernel_regex.empty()) cap.kernel_regex = triton_kernel_regex(triton_jit_kernels(source));
    if (cap.kernel_regex.empty()) {
      throw Error(ExitCode::not_found, fmt::format("{} defines no @triton.jit kernel", ws.display(c.path)),
                  "a Triton candidate launches at least one @triton.jit function");
    }
    std::filesystem::path script = o.runner.empty() ? find_project_dir("src/python") / "croq_runner.py"
                                                    : std::filesystem::path(o.runner);
    const ShapeKey& key = t.shape;
    DtypePair dt = parse_dtype_pair_or_throw(key.dtype_token);
    cap.program = {env_or("CROQ_PYTHON", "python3"), script.string(), "--rules", dump_compact(measurement_rules()),
                   "--candidate", c.path.string(), "--op", check_measurable_shape(key), "--m",
                   std::to_string(key.m()), "--n", std::to_string(key.n()), "--k", std::to_string(key.k()),
                   "--dtype", dt.canonical, "--b-layout", o.b_layout, "--seed", std::to_string(o.seed),
                   "--mode", "profile", "--warmup", std::to_string(o.warmup), "--no-isolate"};
    if (o.launch_skip >= 0) cap.launch_skip = o.launch_skip;
  } else {
    std::string runner = o.runner.empty() ? env_or("CROQ_GPU_RUNNER", "") : o.runner;
    if (runner.empty()) {
      auto tool = find_tool("croq-gpu-runner");
      if (!tool) {
        throw Error(ExitCode::no_device, "croq-gpu-runner is not built (croq was built without a CUDA toolkit)",
                    "build croq where nvcc is available, or give the runner with --runner PATH");
      }
      runner = tool->string();
    }
    const ShapeKey& key = t.shape;
    if (key.dims.size() != 3) throw_usage(fmt::format("shape key {} has no M, N, K", key.text));
    DtypePair dt = parse_dtype_pair_or_throw(key.dtype_token);
    cap.program = {runner};
    if (!o.library.empty()) {
      validate_tag(o.library);
      kernel = "iter000_" + o.library;
      cap.program.insert(cap.program.end(), {"--library", o.library});
      cap.expect_library = true;
    } else {
      fs::path bin_dir = ws.kind_dir(t, ArtifactKind::bin);
      kernel = resolve_iter_kernel(bin_dir, o.iter);
      fs::path so = bin_dir / (kernel + ".so");
      std::error_code ec;
      if (!fs::exists(so, ec)) {
        throw Error(ExitCode::not_found, fmt::format("no candidate at {}", ws.display(so)),
                    "build it first: croq build --iter " + kernel);
      }
      cap.program.insert(cap.program.end(), {"--candidate", so.string()});
    }
    cap.program.insert(cap.program.end(),
                       {"--op", check_measurable_shape(key), "--m", std::to_string(key.m()), "--n",
                        std::to_string(key.n()), "--k", std::to_string(key.k()), "--dtype", dt.canonical, "--b-layout",
                        o.b_layout, "--seed", std::to_string(o.seed), "--mode", "profile", "--warmup",
                        std::to_string(o.warmup)});
    if (o.launch_skip >= 0) cap.launch_skip = o.launch_skip;
  }
  cap.stem = fmt::format("ncu_{}_round{}", kernel, o.round);
  return pc;
}

StepResult run_profile(Workspace& ws, const TaskRef& t, const ProfileOptions& options, const StepDeps& deps) {
  const ProfileOptions o = resolved(ws, t, options);
  if (t.dsl == "cpp") return profile_cpu(ws, t, o, deps);
  ProfileCapture pc = profile_capture(ws, t, o);
  NcuCapture& cap = pc.capture;
  const std::string& kernel = pc.kernel;

  // The device's one lease (gpu/lease.hpp), the same that measurements and baselines take: an
  // ncu replay never overlaps a timing on this GPU. A Triton candidate's Python runner starts under
  // ncu before the lease is taken and waits at croq's gate after its imports (seconds of torch and
  // triton that touch no device), as in `croq measure`.
  const std::string lease_id = resolve_gpu_lease_id(o.device);
  std::optional<DeviceLease> lease;
  auto take_lease = [&] {
    lease.emplace(DeviceLease::acquire(
        lease_id, fmt::format("croq profile {} {}", t.id(), kernel), lease_wait(o.lease_timeout_s),
        [&](const std::string& holder) {
          if (deps.note) {
            deps.note(fmt::format("croq profile: waiting for device {}: held by {}", lease_id,
                                  holder.empty() ? "another process" : holder));
          }
        }));
  };
  const bool python_runner = t.dsl == "triton" && o.library.empty();
  if (python_runner) {
    cap.gate = take_lease;
    cap.gate_timeout = lease_wait(o.lease_timeout_s);
  } else {
    take_lease();
  }
  if (deps.note) {
    deps.note(fmt::format("[profile] ncu ({} preset) on {}: {}", o.preset, kernel,
                          shell_join(ncu_profile_argv(cap, cap.out_dir / (cap.stem + ".ncu-rep")))));
  }
  NcuCaptureResult r = run_ncu_capture(cap, deps.runner);
  if (deps.note) {
    deps.note(fmt::format("[profile] captured kernel: {} ({}), {:.1f} s", r.kernel, r.kernel_origin, r.profile_ms / 1000));
  }

  StepResult res;
  json& doc = res.doc;
  doc["ok"] = true;
  doc["kernel"] = r.kernel;
  doc["kernel_origin"] = r.kernel_origin;
  doc["candidate"] = kernel;
  doc["round"] = o.round;
  doc["report"] = ws.display(r.report);
  doc["csv"] = ws.display(r.csv);
  doc["preset"] = o.preset;
  doc["device_lease"] = lease_id;
  doc["lease_waited_ms"] = lease ? lease->waited().count() : 0;
  doc["gated"] = r.gated;  // the Python runner's imports ran outside the lease
  doc["replaced"] = r.replaced;
  doc["ncu_argv"] = r.profile_argv;
  doc["profile_s"] = std::round(r.profile_ms) / 1000;
  doc["export_s"] = std::round(r.export_ms) / 1000;
  if (!o.no_classify) {
    ClassifyRequest req;
    req.csv = r.csv;
    req.iter = kernel;
    req.kernel_pattern = t.dsl == "triton" && o.library.empty() ? cap.kernel_regex : o.kernel_name;
    req.options.dsl = t.dsl;
    ShapeWork w = shape_work(t.shape.text);
    req.options.flops = w.flops;
    req.options.dtype = w.dtype;
    try {
      doc["classification"] = classify_csv(req);
      // The class at the top level too, as the seeds' ncu_profile + profile_extract pair reported it.
      doc["bottleneck"] = doc["classification"]["bottleneck"];
      doc["confidence"] = doc["classification"]["confidence"];
    } catch (const Error& e) {
      doc["classification"] = nullptr;
      doc["classification_error"] = e.what();
    }
  }
  // Evidence for the protocol's guards (profile before idea; a fresh baseline profile at 7 discards).
  json summary = {{"captured_kernel", r.kernel}, {"kernel_origin", r.kernel_origin}, {"preset", o.preset},
                  {"report", ws.display(r.report)}};
  if (doc.contains("classification") && doc["classification"].is_object()) {
    summary["bottleneck"] = doc["classification"]["bottleneck"];
    summary["confidence"] = doc["classification"]["confidence"];
  }
  record_evidence(ws, t, o.library.empty() ? EvidenceKind::profile : EvidenceKind::baseline_profile, kernel, r.csv,
                  summary, o.round);
  res.trace["profile_kernel"] = r.kernel;
  return res;
}

}  // namespace croq::profile
