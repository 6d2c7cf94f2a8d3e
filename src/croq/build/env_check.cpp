// Environment validation per dsl (env_check.hpp).
#include "croq/build/env_check.hpp"

#include <unistd.h>

#include <cstdlib>
#include <regex>

#include <fmt/format.h>

#include "croq/build/choreo_toolchain.hpp"
#include "croq/gpu/device_key.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"
#include "croq/util/text.hpp"
#include "croq/workspace/ids.hpp"

namespace croq {

EnvProbe EnvProbe::system() {
  EnvProbe p;
  p.env = system_env();
  p.read = [](const fs::path& path) { return read_file(path); };
  p.exists = [](const fs::path& path) {
    std::error_code ec;
    return fs::exists(path, ec);
  };
  p.is_root = ::geteuid() == 0;
  return p;
}

namespace {

class Report {
 public:
  explicit Report(std::string dsl) : m_dsl(std::move(dsl)) {}
  void error(const std::string& check, const std::string& message, const std::string& fix) {
    m_errors.push_back({{"check", check}, {"message", message}, {"fix", fix}});
  }
  void warning(const std::string& check, const std::string& message, const std::string& fix) {
    m_warnings.push_back({{"check", check}, {"message", message}, {"fix", fix}});
  }
  // An error for the dsls that need it, a warning for the others.
  void need(bool required, const std::string& check, const std::string& message, const std::string& fix) {
    if (required) error(check, message, fix);
    else warning(check, message, fix);
  }
  json& checks() { return m_checks; }
  json to_json() const {
    return json{{"dsl", m_dsl}, {"pass", m_errors.empty()}, {"errors", m_errors}, {"warnings", m_warnings},
                {"checks", m_checks}};
  }

 private:
  std::string m_dsl;
  json m_errors = json::array();
  json m_warnings = json::array();
  json m_checks = json::object();
};

ProcessResult run_quiet(std::vector<std::string> argv, std::chrono::milliseconds timeout = std::chrono::milliseconds(30000)) {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.timeout = timeout;
  return process_runner().run(spec);
}

std::string first_line(const std::string& text) {
  auto lines = split_lines(trim(text));
  return lines.empty() ? "" : trim(lines.front());
}

void check_nvcc(const Toolchain& tc, bool required, Report& r) {
  ProcessResult p = run_quiet({tc.nvcc, "--version"});
  if (!p.ok()) {
    r.need(required, "nvcc", fmt::format("nvcc ({}) does not run: {}", tc.nvcc, p.describe()),
           "install the CUDA toolkit (12.x or 13.x) and set CUDA_HOME, or point CROQ_NVCC at nvcc");
    r.checks()["nvcc"] = {{"path", tc.nvcc}, {"ok", false}};
    return;
  }
  static const std::regex rel_re(R"(release (\d+\.\d+))");
  std::smatch m;
  std::string version = std::regex_search(p.out, m, rel_re) ? m[1].str() : first_line(p.out);
  r.checks()["nvcc"] = {{"path", tc.nvcc}, {"ok", true}, {"version", version}};
  if (std::regex_search(p.out, m, rel_re) && std::stod(m[1].str()) < 12.0) {
    r.need(required, "nvcc", "nvcc " + version + " is older than 12.0 (no sm_90a, CuTe 4 needs 12+)",
           "install CUDA 12.x or newer");
  }
}

void check_gpu(bool required, Report& r) {
  std::string error;
  auto gpus = query_gpus(&error);
  json list = json::array();
  for (const auto& g : gpus) {
    list.push_back({{"index", g.index}, {"name", g.name}, {"key", make_gpu_key(g.name, g.compute_cap)},
                    {"compute_cap", g.compute_cap}, {"driver", g.driver}, {"memory_used_mib", g.memory_used_mib},
                    {"utilization_pct", g.utilization_pct}});
  }
  r.checks()["gpus"] = list;
  // The cpp dsl needs no GPU: the list is shown, its absence is no warning.
  if (gpus.empty() && required) {
    r.need(required, "gpu", "no GPU is visible" + (error.empty() ? std::string() : " (" + error + ")"),
           "run on a machine with an NVIDIA GPU and its driver (nvidia-smi must list it); check CUDA_VISIBLE_DEVICES");
  }
}

void check_profiling(const Toolchain& tc, const EnvProbe& probe, bool required, Report& r) {
  std::string ncu = find_executable("ncu").value_or(fs::path(tc.cuda_home) / "bin" / "ncu").string();
  if (auto v = probe.env("CROQ_NCU")) ncu = *v;
  ProcessResult p = run_quiet({ncu, "--version"});
  json info{{"path", ncu}, {"ok", p.ok()}};
  if (p.ok()) {
    auto lines = split_lines(trim(p.out));
    info["version"] = lines.empty() ? "" : trim(lines.back());
  } else {
    r.need(required, "ncu", fmt::format("Nsight Compute ({}) does not run: {}", ncu, p.describe()),
           "install Nsight Compute (it comes with the CUDA toolkit: $CUDA_HOME/bin/ncu) or set CROQ_NCU; "
           "profiling (the PROFILE step) needs it");
  }
  r.checks()["ncu"] = info;

  json counters = json::object();
  if (auto text = probe.read("/proc/sys/kernel/perf_event_paranoid")) {
    int level = std::atoi(trim(*text).c_str());
    counters["perf_event_paranoid"] = level;
    if (level > 2 && !probe.is_root) {
      r.warning("perf_event_paranoid", fmt::format("perf_event_paranoid is {} (above 2)", level),
                "sudo sysctl kernel.perf_event_paranoid=2 (CPU-side profilers need it)");
    }
  }
  if (auto params = probe.read("/proc/driver/nvidia/params")) {
    static const std::regex re(R"(RmProfilingAdminOnly:\s*(\d+))");
    std::smatch m;
    if (std::regex_search(*params, m, re)) {
      bool admin_only = m[1].str() != "0";
      counters["rm_profiling_admin_only"] = admin_only;
      counters["permitted"] = !admin_only || probe.is_root;
      if (admin_only && !probe.is_root) {
        r.need(required, "gpu_counters",
               "the driver restricts GPU performance counters to administrators (RmProfilingAdminOnly: 1); "
               "ncu will fail with ERR_NVGPUCTRPERM",
               "run croq as root, or allow all users: echo 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' "
               "| sudo tee /etc/modprobe.d/nvidia-profiling.conf, then reload the driver (or reboot)");
      }
    }
  } else {
    counters["permitted"] = nullptr;  // no NVIDIA driver: nothing to read
  }
  counters["root"] = probe.is_root;
  r.checks()["counters"] = counters;
}

void check_croqtile(const Toolchain& tc, const EnvProbe& probe, Report& r) {
  json info{{"choreo_home", tc.choreo_home}, {"choreo", tc.choreo}, {"cute_home", tc.cute_home},
            {"found_by", tc.choreo_source}};
  const auto pin = choreo_pin();
  if (pin) info["pinned_commit"] = pin->commit;
  const std::string install_fix =
      "scripts/setup.sh --with-choreo (builds the pinned choreo with its runtime and CUTLASS headers into "
      "~/.local/share/croq/toolchains/, where croq finds it; offline: CHOREO_SRC=<croqtile clone> "
      "CUTLASS_SRC=<cutlass clone>), or export CHOREO_HOME=<a toolchain folder or choreo checkout with build/choreo>";
  if (tc.choreo.empty()) {
    r.error("CHOREO_HOME", "the CroqTile compiler is not installed and neither CHOREO_HOME nor CROQ_CHOREO is set",
            install_fix);
  } else if (!tc.choreo_home.empty() && !probe.exists(tc.choreo_home)) {
    r.error("CHOREO_HOME", "CHOREO_HOME=" + tc.choreo_home + " does not exist", install_fix);
  }
  // Which compiler commit: the toolchain's record (scripts/install_choreo.sh writes it).
  if (!tc.choreo_home.empty()) {
    if (auto text = probe.read(fs::path(tc.choreo_home) / "toolchain.json")) {
      if (auto j = try_parse_json(*text); j && j->is_object()) {
        info["toolchain_commit"] = j->value("choreo_commit", "");
        if (pin && j->value("choreo_commit", "") != pin->commit) {
          r.warning("choreo_commit",
                    fmt::format("the toolchain in {} is choreo {}, not the pinned {} croq's CroqTile kernels are tested "
                                "with",
                                tc.choreo_home, j->value("choreo_commit", "?").substr(0, 12), pin->commit.substr(0, 12)),
                    "scripts/setup.sh --with-choreo installs the pinned one");
        }
      }
    }
  }
  if (!tc.choreo.empty()) {
    ProcessResult p = run_quiet({tc.choreo, "--help"});
    info["choreo_ok"] = p.ok();
    if (p.ok()) {
      info["choreo_help"] = first_line(p.out.empty() ? p.err : p.out);
    } else {
      r.error("choreo", fmt::format("{} --help does not run: {}", tc.choreo, p.describe()),
              "reinstall it (scripts/install_choreo.sh --force) or fix CHOREO_HOME / CROQ_CHOREO");
    }
  }
  if (tc.cute_home.empty()) {
    r.error("CUTE_HOME", "CUTE_HOME is not set and no CroqTile toolchain provides extern/cutlass",
            "scripts/setup.sh --with-choreo installs the CUTLASS 4.2.1 headers with the compiler, or export "
            "CUTE_HOME=<CUTLASS 4.2.1 checkout> (git clone -b v4.2.1 https://github.com/NVIDIA/cutlass)");
  } else {
    fs::path home(tc.cute_home);
    bool cute = probe.exists(home / "include" / "cute" / "tensor.hpp");
    bool cutlass = probe.exists(home / "include" / "cutlass" / "cutlass.h");
    info["cute_headers"] = cute && cutlass;
    if (!cute || !cutlass) {
      r.error("CUTE_HOME", "CUTE_HOME=" + tc.cute_home + " has no include/cute/tensor.hpp and include/cutlass/cutlass.h",
              "point CUTE_HOME at a CUTLASS 4.2.1 checkout (header-only; include/ is enough)");
    } else if (auto v = probe.read(home / "include" / "cutlass" / "version.h")) {
      static const std::regex maj(R"(#define CUTLASS_MAJOR (\d+))"), min(R"(#define CUTLASS_MINOR (\d+))"),
          pat(R"(#define CUTLASS_PATCH (\d+))");
      std::smatch a, b, c;
      if (std::regex_search(*v, a, maj) && std::regex_search(*v, b, min) && std::regex_search(*v, c, pat)) {
        std::string version = a[1].str() + "." + b[1].str() + "." + c[1].str();
        info["cutlass_version"] = version;
        if (version != "4.2.1") {
          r.warning("CUTE_HOME", "CUTLASS " + version + " found; choreo's generated code is written for 4.2.1",
                    "use the v4.2.1 tag of NVIDIA/cutlass if generated kernels fail to compile");
        }
      }
    }
  }
  if (!tc.choreo_home.empty()) {
    bool runtime = probe.exists(fs::path(tc.choreo_home) / "runtime" / "choreo.h");
    info["runtime_headers"] = runtime;
    if (!runtime) {
      r.warning("runtime_headers", "$CHOREO_HOME/runtime/choreo.h is missing",
                "not needed by croq (it takes the headers embedded in each generated script), but a by-hand "
                "build with the checkout's headers would fail");
    }
  }
  r.checks()["croqtile"] = info;
}

void check_triton(const Toolchain& tc, const EnvProbe& probe, bool have_gpu, Report& r) {
  ProcessResult v = run_quiet({tc.python, "--version"});
  json info{{"python", tc.python}, {"python_ok", v.ok()}};
  if (!v.ok()) {
    r.error("python", fmt::format("{} does not run: {}", tc.python, v.describe()), "install python3 or set CROQ_PYTHON");
    r.checks()["triton"] = info;
    return;
  }
  info["python_version"] = first_line(v.out.empty() ? v.err : v.out);
  const char* probe_code =
      "import json\n"
      "r = {}\n"
      "try:\n"
      "    import torch\n"
      "    r['torch'] = torch.__version__\n"
      "    r['cuda'] = bool(torch.cuda.is_available())\n"
      "    r['torch_cuda'] = torch.version.cuda\n"
      "except Exception as e:\n"
      "    r['torch_error'] = '%s: %s' % (type(e).__name__, e)\n"
      "try:\n"
      "    import triton\n"
      "    r['triton'] = triton.__version__\n"
      "except Exception as e:\n"
      "    r['triton_error'] = '%s: %s' % (type(e).__name__, e)\n"
      "print(json.dumps(r))\n";
  ProcessResult p = run_quiet({tc.python, "-c", probe_code}, probe.python_timeout);
  auto j = try_parse_json(trim(p.out));
  if (!p.ok() || !j || !j->is_object()) {
    r.error("python_imports",
            fmt::format("importing torch and triton failed: {}{}", p.describe(),
                        p.err.empty() ? "" : " (" + preview(trim(p.err), 200) + ")"),
            "pip install torch triton (matching the CUDA driver)");
    r.checks()["triton"] = info;
    return;
  }
  for (auto it = j->begin(); it != j->end(); ++it) info[it.key()] = it.value();
  if (j->contains("torch_error")) {
    r.error("torch", "import torch failed: " + j->value("torch_error", ""), "pip install torch (a CUDA build)");
  } else if (!j->value("cuda", false)) {
    r.need(have_gpu, "torch_cuda", "torch " + j->value("torch", "") + " sees no CUDA device",
           "install a CUDA build of torch (pip install torch --index-url https://download.pytorch.org/whl/cu12x) "
           "and check the driver");
  }
  if (j->contains("triton_error")) {
    r.error("triton", "import triton failed: " + j->value("triton_error", ""), "pip install triton");
  }
  try {
    fs::path runner = find_project_dir("src/python") / "croq_runner.py";
    info["runner"] = runner.string();
  } catch (const Error& e) {
    r.error("runner", e.what(), e.hint());
  }
  r.checks()["triton"] = info;
}

void check_cpp(const Toolchain& tc, const EnvProbe& probe, Report& r) {
  ProcessResult p = run_quiet({tc.cxx, "--version"});
  json info{{"cxx", tc.cxx}, {"cxx_ok", p.ok()}};
  if (p.ok()) info["cxx_version"] = first_line(p.out);
  else r.error("g++", fmt::format("{} does not run: {}", tc.cxx, p.describe()), "apt-get install g++ (or set CROQ_CXX)");
  const std::vector<fs::path> headers{"/usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h",
                                      "/usr/include/x86_64-linux-gnu/cblas.h", "/usr/include/openblas/cblas.h",
                                      "/usr/include/cblas.h", "/usr/include/aarch64-linux-gnu/cblas.h"};
  const std::vector<fs::path> libs{"/usr/lib/x86_64-linux-gnu/libopenblas.so", "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so",
                                   "/usr/lib/aarch64-linux-gnu/libopenblas.so", "/usr/lib/libopenblas.so",
                                   "/usr/lib64/libopenblas.so"};
  std::string header, lib;
  for (const auto& h : headers) if (header.empty() && probe.exists(h)) header = h.string();
  for (const auto& l : libs) if (lib.empty() && probe.exists(l)) lib = l.string();
  info["openblas_header"] = header;
  info["openblas_lib"] = lib;
  if (header.empty() || lib.empty()) {
    r.error("openblas", std::string("OpenBLAS ") + (header.empty() ? "headers (cblas.h)" : "library (libopenblas.so)") +
                            " not found: the cpp backend's baseline and reference need it",
            "apt-get install libopenblas-dev");
  }
  info["cpu_runner"] = find_tool("croq-cpu-runner").value_or(fs::path()).string();
  if (info["cpu_runner"].get<std::string>().empty()) {
    r.warning("cpu_runner", "croq-cpu-runner is not built next to croq", "build croq (cmake --build build)");
  }
  r.checks()["cpp"] = info;
}

}  // namespace

json validate_environment(const std::string& dsl, const EnvProbe& probe) {
  validate_dsl(dsl);
  Report r(dsl);
  Toolchain tc = Toolchain::from_env(probe.env);
  bool gpu_dsl = dsl != "cpp";
  check_nvcc(tc, dsl == "cuda" || dsl == "croqtile", r);
  check_gpu(gpu_dsl, r);
  bool have_gpu = !r.checks()["gpus"].empty();
  if (gpu_dsl) check_profiling(tc, probe, true, r);
  if (dsl == "croqtile") check_croqtile(tc, probe, r);
  if (dsl == "triton") check_triton(tc, probe, have_gpu, r);
  if (dsl == "cpp") check_cpp(tc, probe, r);
  return r.to_json();
}

}  // namespace croq
