// croq profile (the seeds' ncu_profile) and croq classify (the seeds' profile_extract).
//
// profile: Nsight Compute on exactly one launch of the candidate, through the measurement runner's
// profile mode (NVTX range `croq_candidate` after warm-up); writes
// perf/<key>/<model>/ncu_<kernel>_round<R>.{ncu-rep,csv} atomically, holds the GPU lease, reports
// the captured kernel's name and classifies it.
// classify: one Nsight Compute CSV (raw page or per-section form) -> bottleneck, confidence,
// evidence, metrics and hints.
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/build/triton_source.hpp"
#include "croq/gpu/lease.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/measure/candidates.hpp"
#include "croq/measure/rules.hpp"
#include "croq/measure/verdict.hpp"
#include "croq/profile/classify_csv.hpp"
#include "croq/profile/cpu_profile.hpp"
#include "croq/util/fs.hpp"
#include "croq/protocol/evidence.hpp"
#include "croq/profile/ncu_runner.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"
#include "croq/util/text.hpp"
#include "croq/workspace/dtype.hpp"
#include "croq/workspace/ids.hpp"
#include "croq/workspace/operators.hpp"

namespace croq::cli {

namespace {

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
ExitCode profile_cpu(Context& ctx, const TaskRef& t, const std::string& iter, const std::string& library, int round,
                     long long seed) {
  Workspace& ws = ctx.ws();
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
  ctx.note(fmt::format("[profile] cpp: timing roofline of {} (CPU runner, verified)", kernel));
  Measurement m = measure_on_cpu(ctx, t, candidate, library, static_cast<uint64_t>(seed), "croq profile " + kernel);
  if (!m.passed()) {
    throw Error(ExitCode::candidate_failed,
                fmt::format("{} did not pass verification ({}: {}); a failed candidate has no profile",
                            kernel, verdict_name(m.verdict), m.reason),
                "profile the current best kernel (`croq state` names it)");
  }
  profile::CpuMachine machine = profile::this_cpu();
  json cls = profile::classify_cpu_measurement(m.to_json(), machine, kernel);
  fs::path out = ws.kind_dir(t, ArtifactKind::perf) / fmt::format("cpuprof_{}_round{}.json", kernel, round);
  json file = {{"schema", "croq-cpu-profile-v1"}, {"kernel", kernel}, {"round", round},
               {"classification", cls}, {"measurement", m.to_json()}};
  ensure_dir(out.parent_path());
  atomic_write(out, dump_pretty(file) + "\n");
  json doc;
  doc["ok"] = true;
  doc["kernel"] = kernel;
  doc["kernel_origin"] = "cpu-runner";
  doc["candidate"] = kernel;
  doc["round"] = round;
  doc["report"] = ws.display(out);
  doc["preset"] = "cpu-timing";
  doc["classification"] = cls;
  doc["bottleneck"] = cls["bottleneck"];
  doc["confidence"] = cls["confidence"];
  json summary = {{"captured_kernel", kernel}, {"kernel_origin", "cpu-runner"}, {"preset", "cpu-timing"},
                  {"report", ws.display(out)}, {"bottleneck", cls["bottleneck"]}, {"confidence", cls["confidence"]}};
  record_evidence(ws, t, library.empty() ? EvidenceKind::profile : EvidenceKind::baseline_profile, kernel, out, summary,
                  round);
  ctx.note(fmt::format("[profile] {}: {} ({} confidence) - {}", kernel, cls["bottleneck"].get<std::string>(),
                       cls["confidence"].get<std::string>(), cls["reason"].get<std::string>()));
  ctx.emit(doc);
  return ExitCode::ok;
}

}  // namespace

VerbRunner setup_profile(CLI::App& app) {
  struct Opts {
    TaskOptions task;
    std::string iter;
    int round = -1;
    std::string library;
    bool baseline = false;
    std::string binary;
    std::vector<std::string> binary_args;
    std::string preset = "full";
    std::string kernel_name;
    int launch_skip = -1;
    int warmup = 3;
    long long seed = 1;
    std::string b_layout = "auto";
    std::string ncu;
    std::string runner;
    std::string device;
    int timeout_s = 600;
    int lease_timeout_ms = 600000;
    bool no_classify = false;
  };
  auto o = std::make_shared<Opts>();
  add_task_options(app, o->task);
  app.add_option("--iter", o->iter, "the candidate: iter<NNN>_<tag> (or iter<NNN>); its .so is bin/<key>/<model>/<kernel>.so");
  app.add_option("--round", o->round, "the round number for the file names ncu_<kernel>_round<R> (default: the task's next round)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--library", o->library, "profile the library baseline instead (cublas): files ncu_iter000_<library>_round<R>");
  app.add_flag("--baseline", o->baseline, "the library baseline (same as --library cublas)");
  app.add_option("--binary", o->binary, "a legacy self-contained executable to profile (kernel-name filter and launch skip instead of NVTX)");
  app.add_option("--binary-arg", o->binary_args, "an argument for --binary (repeatable)");
  app.add_option("--preset", o->preset, "full (--set full, every section) or quick (the sections the classifier reads)")
      ->default_val("full");
  app.add_option("--kernel-name", o->kernel_name, "only kernels whose name matches this regex");
  app.add_option("--launch-skip", o->launch_skip, "skip this many matching launches first (default: 0 with NVTX, 1 for --binary)");
  app.add_option("--warmup", o->warmup, "warm-up launches the runner makes before the profiled one")->default_val(3)->check(CLI::Range(0, 1000));
  app.add_option("--seed", o->seed, "input seed for the runner")->default_val(1);
  app.add_option("--b-layout", o->b_layout,
                 "row | col | auto: layout of B for the runner (auto: the candidate's form, as croq measure finds it)")
      ->default_val("auto");
  app.add_option("--ncu", o->ncu, "the ncu executable (default: CROQ_NCU, else ncu on PATH)");
  app.add_option("--runner", o->runner, "the measurement runner (default: CROQ_GPU_RUNNER, else croq-gpu-runner beside croq)");
  app.add_option("--device", o->device, "GPU index or UUID to lease (default: first of CUDA_VISIBLE_DEVICES, else 0)");
  app.add_option("--timeout", o->timeout_s, "seconds ncu may run")->default_val(600)->check(CLI::Range(1, 86400));
  app.add_option("--lease-timeout", o->lease_timeout_ms, "milliseconds to wait for the GPU lease")->default_val(600000);
  app.add_flag("--no-classify", o->no_classify, "only capture; do not classify the CSV");
  return [o](Context& ctx) {
    require_buildable_dsl(o->task.dsl, "profile candidates of");
    TaskRef t = resolve_task(ctx, o->task);
    Workspace& ws = ctx.ws();
    // The library baseline's kernel: cuBLAS's for dense matmul, cuSPARSELt's for 2:4 sparse GEMM.
    if (o->baseline && o->library.empty()) {
      o->library = t.dsl == "cpp" ? "openblas" : is_sparse_operator(operator_name(t.shape)) ? "cusparselt" : "cublas";
    }
    if (o->round < 0) {
      Ledger ledger(ws, t);
      o->round = ledger.exists() ? ledger.index().max_round + 1 : 1;
    }
    if (t.dsl == "cpp") return profile_cpu(ctx, t, o->iter, o->library, o->round, o->seed);
    int sources = (!o->iter.empty()) + (!o->library.empty()) + (!o->binary.empty());
    if (sources != 1) throw_usage("give exactly one of --iter, --library or --binary", "e.g. --iter iter005_stages4");
    profile::NcuCapture cap;
    cap.ncu = o->ncu.empty() ? env_or("CROQ_NCU", "ncu") : o->ncu;
    cap.preset = profile::parse_ncu_preset(o->preset);
    cap.kernel_regex = o->kernel_name;
    cap.timeout = std::chrono::seconds(o->timeout_s);
    cap.out_dir = ws.kind_dir(t, ArtifactKind::perf);
    if (o->b_layout != "row" && o->b_layout != "col" && o->b_layout != "auto") {
      throw_usage("--b-layout must be row, col or auto");
    }
    std::string kernel;
    if (!o->binary.empty()) {
      // Legacy executable: no NVTX range; skip the first (cold) launch and keep to the kernel filter.
      fs::path bin = o->binary;
      if (!find_executable(bin.string())) throw_not_found(fmt::format("no executable at {}", bin.string()));
      kernel = bin.filename().string();
      cap.program = {fs::absolute(bin).string()};
      cap.program.insert(cap.program.end(), o->binary_args.begin(), o->binary_args.end());
      cap.nvtx_range.clear();
      cap.launch_skip = o->launch_skip >= 0 ? o->launch_skip : 1;
      if (cap.kernel_regex.empty()) {
        // Exclude the usual set-up kernels of self-timed binaries.
        cap.kernel_regex = "^(?!.*(init|fill|rand|reference|verify|memset)).*$";
      }
    } else if (t.dsl == "triton" && o->library.empty()) {
      // A Triton candidate: croq's Python runner in its profile mode (the one launch after the
      // warm-up inside the NVTX range), and ncu kept to the kernels the module compiles (its
      // @triton.jit functions): neither torch's fill of the poison nor any other kernel is captured.
      CandidateRef c = resolve_candidate(ws, t, o->iter, "", false);
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
      std::filesystem::path script = o->runner.empty() ? find_project_dir("src/python") / "croq_runner.py"
                                                       : std::filesystem::path(o->runner);
      const ShapeKey& key = t.shape;
      DtypePair dt = parse_dtype_pair_or_throw(key.dtype_token);
      cap.program = {env_or("CROQ_PYTHON", "python3"), script.string(), "--rules", dump_compact(measurement_rules()),
                     "--candidate", c.path.string(), "--op", check_measurable_shape(key), "--m",
                     std::to_string(key.m()), "--n", std::to_string(key.n()), "--k", std::to_string(key.k()),
                     "--dtype", dt.canonical, "--b-layout", o->b_layout, "--seed", std::to_string(o->seed),
                     "--mode", "profile", "--warmup", std::to_string(o->warmup), "--no-isolate"};
      if (o->launch_skip >= 0) cap.launch_skip = o->launch_skip;
    } else {
      std::string runner = o->runner.empty() ? env_or("CROQ_GPU_RUNNER", "") : o->runner;
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
      if (!o->library.empty()) {
        validate_tag(o->library);
        kernel = "iter000_" + o->library;
        cap.program.insert(cap.program.end(), {"--library", o->library});
        cap.expect_library = true;
      } else {
        fs::path bin_dir = ws.kind_dir(t, ArtifactKind::bin);
        kernel = resolve_iter_kernel(bin_dir, o->iter);
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
                          o->b_layout, "--seed", std::to_string(o->seed), "--mode", "profile", "--warmup",
                          std::to_string(o->warmup)});
      if (o->launch_skip >= 0) cap.launch_skip = o->launch_skip;
    }
    cap.stem = fmt::format("ncu_{}_round{}", kernel, o->round);

    // The device's one lease (gpu/lease.hpp), the same that measurements and baselines take: an
    // ncu replay never overlaps a timing on this GPU.
    const std::string lease_id = resolve_gpu_lease_id(o->device);
    DeviceLease lease = DeviceLease::acquire(
        lease_id, fmt::format("croq profile {} {}", t.id(), kernel), std::chrono::milliseconds(o->lease_timeout_ms),
        [&](const std::string& holder) {
          ctx.note(fmt::format("croq profile: waiting for device {}: held by {}", lease_id,
                               holder.empty() ? "another process" : holder));
        });
    ctx.note(fmt::format("[profile] ncu ({} preset) on {}: {}", o->preset, kernel, shell_join(profile::ncu_profile_argv(cap, cap.out_dir / (cap.stem + ".ncu-rep")))));
    profile::NcuCaptureResult r = profile::run_ncu_capture(cap, process_runner());
    ctx.note(fmt::format("[profile] captured kernel: {} ({}), {:.1f} s", r.kernel, r.kernel_origin, r.profile_ms / 1000));

    json doc;
    doc["ok"] = true;
    doc["kernel"] = r.kernel;
    doc["kernel_origin"] = r.kernel_origin;
    doc["candidate"] = kernel;
    doc["round"] = o->round;
    doc["report"] = ws.display(r.report);
    doc["csv"] = ws.display(r.csv);
    doc["preset"] = o->preset;
    doc["device_lease"] = lease_id;
    doc["lease_waited_ms"] = lease.waited().count();
    doc["replaced"] = r.replaced;
    doc["ncu_argv"] = r.profile_argv;
    doc["profile_s"] = std::round(r.profile_ms) / 1000;
    doc["export_s"] = std::round(r.export_ms) / 1000;
    if (!o->no_classify) {
      profile::ClassifyRequest req;
      req.csv = r.csv;
      req.iter = kernel;
      req.kernel_pattern = t.dsl == "triton" && o->library.empty() ? cap.kernel_regex : o->kernel_name;
      req.options.dsl = t.dsl;
      profile::ShapeWork w = profile::shape_work(t.shape.text);
      req.options.flops = w.flops;
      req.options.dtype = w.dtype;
      try {
        doc["classification"] = profile::classify_csv(req);
        // The class at the top level too, as the seeds' ncu_profile + profile_extract pair reported it.
        doc["bottleneck"] = doc["classification"]["bottleneck"];
        doc["confidence"] = doc["classification"]["confidence"];
      } catch (const Error& e) {
        doc["classification"] = nullptr;
        doc["classification_error"] = e.what();
      }
    }
    // Evidence for the protocol's guards (profile before idea; a fresh baseline profile at 7 discards).
    json summary = {{"captured_kernel", r.kernel}, {"kernel_origin", r.kernel_origin}, {"preset", o->preset},
                    {"report", ws.display(r.report)}};
    if (doc.contains("classification") && doc["classification"].is_object()) {
      summary["bottleneck"] = doc["classification"]["bottleneck"];
      summary["confidence"] = doc["classification"]["confidence"];
    }
    record_evidence(ws, t, o->library.empty() ? EvidenceKind::profile : EvidenceKind::baseline_profile, kernel, r.csv,
                    summary, o->round);
    ctx.trace_extra["profile_kernel"] = r.kernel;
    ctx.emit(doc);
    return ExitCode::ok;
  };
}

VerbRunner setup_classify(CLI::App& app) {
  struct Opts {
    std::string csv;
    std::string iter;
    std::string dsl = "cuda";
    std::string shape_key;
    std::string kernel;
    double flops = 0;
    std::string dtype;
    std::string ncu_rep;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--csv", o->csv, "the Nsight Compute CSV (--page raw --csv, --section X --csv, or --print-summary per-kernel --csv)")->required();
  app.add_option("--iter", o->iter, "the iteration the profile belongs to (echoed in the output)");
  app.add_option("--dsl", o->dsl, "cuda | croqtile | triton | cpp: the IDEA menu the hints come from")->default_val("cuda");
  app.add_option("--shape-key", o->shape_key, "the problem (for achieved TFLOPS and the peak): matmul_f16fp32_4096x4096x4096");
  app.add_option("--kernel", o->kernel, "regex choosing the kernel row when the CSV holds several");
  app.add_option("--flops", o->flops, "the kernel's floating-point operations (instead of --shape-key)");
  app.add_option("--dtype", o->dtype, "dtype pair for the peak (f16f32, bf16, e4m3f16, tf32, f32, ...)");
  app.add_option("--ncu-rep", o->ncu_rep, "the .ncu-rep the CSV came from (default: the CSV's sibling .ncu-rep)");
  return [o](Context& ctx) {
    validate_dsl(o->dsl);
    profile::ClassifyRequest req;
    req.csv = o->csv;
    req.iter = o->iter;
    req.kernel_pattern = o->kernel;
    req.options.dsl = o->dsl;
    if (!o->shape_key.empty()) {
      profile::ShapeWork w = profile::shape_work(o->shape_key);
      req.options.flops = w.flops;
      req.options.dtype = w.dtype;
    }
    if (o->flops > 0) req.options.flops = o->flops;
    if (!o->dtype.empty()) req.options.dtype = parse_dtype_pair_or_throw(o->dtype).canonical;
    if (!o->ncu_rep.empty()) req.ncu_rep = fs::path(o->ncu_rep);
    json doc = profile::classify_csv(req);
    ctx.note(fmt::format("[classify] {}: {} ({} confidence) — {}", doc["kernel"].get<std::string>(),
                         doc["bottleneck"].get<std::string>(), doc["confidence"].get<std::string>(),
                         doc["reason"].get<std::string>()));
    ctx.emit(doc);
    return ExitCode::ok;
  };
}

}  // namespace croq::cli
