// Writing build_<id>.sh and run_<id>.sh (scripts.hpp).
#include "croq/build/scripts.hpp"

#include <fmt/format.h>

#include "croq/build/symbols.hpp"
#include "croq/build/toolchain.hpp"
#include "croq/util/process.hpp"
#include "croq/util/time.hpp"

namespace croq {

namespace {

namespace fs = std::filesystem;

std::string q(const fs::path& p) { return shell_quote(p.string()); }
std::string q(const std::string& s) { return shell_quote(s); }

std::string header(const ScriptInputs& in, const char* what) {
  return fmt::format(
      "#!/usr/bin/env bash\n"
      "# {} {} ({}, task {}).\n"
      "# Written by croq on {}; croq build runs the same commands (and caches their outputs).\n"
      "set -euo pipefail\n"
      "cd {}\n",
      what, in.kernel, in.dsl, in.task.id(), now_iso8601(), q(in.root));
}

std::string croq_cmd(const ScriptInputs& in) {
  std::string exe = in.croq_exe.empty() ? "croq" : in.croq_exe;
  return fmt::format("\"${{CROQ:-{}}}\" --root {}", exe, q(in.root));
}

std::string join_quoted(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += " " + q(w);
  return s;
}

// `croq measure` of the iteration by its name (croq finds bin/<kernel>.so, the program, or the
// .py itself); measure takes --iter or --candidate, never both.
std::string measure_line(const ScriptInputs& in, const fs::path&, bool legacy) {
  return fmt::format("{} measure --gpu {} --dsl {} --shape-key {} --model {} --iter {}{} \"$@\"\n", croq_cmd(in),
                     q(in.task.gpu), q(in.dsl), q(in.task.shape.text), q(in.task.model), q(in.kernel),
                     legacy ? " --legacy" : "");
}

}  // namespace

std::string build_script_text(const ScriptInputs& in) {
  std::string s = header(in, "Rebuilds");
  fs::path so = in.bin_dir / (in.kernel + ".so");
  s += fmt::format("mkdir -p {} {}\n", q(in.bin_dir), q(in.perf_dir));
  if (in.dsl == "cuda") {
    std::vector<std::string> argv{in.toolchain.nvcc, "-O3", "-std=c++17", "--shared", "-Xcompiler", "-fPIC",
                                  "-Xptxas", "-v", "-I" + in.include_dir.string(), gencode_flag(in.arch)};
    const auto& c = composable_nvcc_flags();
    argv.insert(argv.end(), c.begin(), c.end());
    argv.insert(argv.end(), in.extra_flags.begin(), in.extra_flags.end());
    argv.insert(argv.end(), {in.source.string(), "-o", so.string()});
    s += shell_join(argv) + " 2>&1 | tee " + q(in.log) + "\n";
  } else if (in.dsl == "cpp") {
    std::vector<std::string> argv{in.toolchain.cxx, "-O3", "-march=native", "-std=c++20", "-shared", "-fPIC",
                                  "-I" + in.include_dir.string()};
    const auto c = composable_cxx_flags(in.toolchain.cxx);
    argv.insert(argv.end(), c.begin(), c.end());
    argv.insert(argv.end(), in.extra_flags.begin(), in.extra_flags.end());
    argv.insert(argv.end(), {in.source.string(), "-o", so.string()});
    s += shell_join(argv) + " 2>&1 | tee " + q(in.log) + "\n";
  } else if (in.dsl == "triton") {
    s += "# Nothing to compile: the module is the candidate. Check that it parses, uses no library for the\n"
         "# core compute (AST) and imports (JIT errors surface at the first run, in croq measure).\n";
    s += fmt::format("{} {} --check {} 2>&1 | tee {}\n", q(in.toolchain.python), q(in.python_runner), q(in.source),
                     q(in.log));
  } else if (in.dsl == "croqtile") {
    fs::path co = fs::path(in.source).replace_extension(".co");
    fs::path cu = fs::path(in.source).replace_extension(".cu");
    fs::path result = in.cmd_dir / (in.kernel + ".cute.result");
    fs::path bin = in.bin_dir / in.kernel;
    fs::path wrapper = in.cmd_dir / (in.kernel + ".abi.cu");
    s += fmt::format(
        ": \"${{CHOREO_HOME:?set CHOREO_HOME to the CroqTile checkout that holds build/choreo}}\"\n"
        "export CUTE_HOME=\"${{CUTE_HOME:-$CHOREO_HOME/extern/cutlass}}\"\n"
        "export CUDA_HOME=\"${{CUDA_HOME:-{cuda}}}\"\n"
        "CO={co}\nCU={cu}\nRESULT={result}\nBIN={bin}\nLOG={log}\nWRAPPER={wrapper}\n"
        "HEADERS={cmd}/choreo_headers\n"
        "mkdir -p \"$HEADERS\"\n"
        ": > \"$LOG\"\n"
        "extract() {{  # the heredocs of the generated script: runtime headers -> $HEADERS, kernel -> $1\n"
        "  local tmp; tmp=$(mktemp -d)\n"
        "  awk -v dir=\"$tmp\" '/^cat <<.EOF. > / {{ n = split($NF, p, \"/\"); f = dir \"/\" p[n]; inside = 1; next }}\n"
        "    inside && /^EOF$/ {{ inside = 0; close(f); next }}\n"
        "    inside {{ print > f }}' \"$RESULT\"\n"
        "  cp \"$tmp\"/*.h \"$HEADERS\"/\n"
        "  [ -z \"$1\" ] || cp \"$tmp\"/__choreo_cute_*.cu \"$1\"\n"
        "  rm -rf \"$tmp\"\n"
        "}}\n"
        "# Phase 1 (.co -> .cute.result -> .cu) runs when there is no .cu yet, or with --phase1\n"
        "# (which overwrites a hand-tuned .cu). Otherwise only the headers and flags are refreshed.\n"
        "if [ ! -f \"$CU\" ] || [ \"${{1:-}}\" = \"--phase1\" ] || [ ! -f \"$RESULT\" ]; then\n"
        "  \"$CHOREO_HOME/build/choreo\" -gs -t cute -arch={arch}{cflags} \"$CO\" -o \"$RESULT\" 2>&1 | tee -a \"$LOG\"\n"
        "  if [ ! -f \"$CU\" ] || [ \"${{1:-}}\" = \"--phase1\" ]; then extract \"$CU\"; else extract \"\"; fi\n"
        "else\n"
        "  extract \"\"\n"
        "fi\n"
        "# Phase 2: nvcc with the flags choreo chose for this kernel (the script's `export CFLAGS=` line).\n"
        "nv_arch={arch}\nEXTRA_TARGET_CFLAGS=\"\"\n"
        "eval \"$(grep -m1 '^export CFLAGS=' \"$RESULT\")\"\n"
        "\"$CUDA_HOME/bin/nvcc\" $CFLAGS -Xptxas -v -I\"$HEADERS\"{extra} \"$CU\" -o \"$BIN\" 2>&1 | tee -a \"$LOG\"\n"
        "if [ -f \"$WRAPPER\" ]; then  # the kernel bound to croq's ABI (written by croq build)\n"
        "  \"$CUDA_HOME/bin/nvcc\" ${{CFLAGS/-Xcompiler -static-libstdc++/}} --shared -Xcompiler -fPIC -Xptxas -v "
        "-Xcompiler -fvisibility=hidden -Xcompiler -fno-gnu-unique -I\"$HEADERS\" -I{inc}{extra} \"$WRAPPER\" -o \"$BIN.so\" 2>&1 | tee -a \"$LOG\"\n"
        "fi\n",
        fmt::arg("cuda", in.toolchain.cuda_home), fmt::arg("co", q(co)), fmt::arg("cu", q(cu)),
        fmt::arg("result", q(result)), fmt::arg("bin", q(bin)), fmt::arg("log", q(in.log)),
        fmt::arg("wrapper", q(wrapper)), fmt::arg("cmd", q(in.cmd_dir)), fmt::arg("arch", in.arch),
        fmt::arg("cflags", join_quoted(in.choreo_flags)), fmt::arg("extra", join_quoted(in.extra_flags)),
        fmt::arg("inc", q(in.include_dir)));
  }
  return s;
}

std::string run_script_text(const ScriptInputs& in) {
  std::string s = header(in, "Measures");
  if (in.dsl == "cuda" || in.dsl == "cpp") {
    s += "# Verified and timed by croq's own harness through the kernel ABI (include/croq/kernel_abi.h).\n";
    s += "exec " + measure_line(in, in.bin_dir / (in.kernel + ".so"), false);
  } else if (in.dsl == "triton") {
    s += "# Verified and timed by croq's Python runner (src/python/croq_runner.py), same method and JSON.\n";
    s += "exec " + measure_line(in, in.source, false);
  } else if (in.dsl == "croqtile") {
    fs::path so = in.bin_dir / (in.kernel + ".so");
    fs::path bin = in.bin_dir / in.kernel;
    s += fmt::format(
        "# The kernel bound to croq's ABI is measured by croq's harness; without it, the program with\n"
        "# choreo's own harness runs through the legacy mode (its figures are stored as reported).\n"
        "if [ -f {so} ]; then\n  exec {abi}else\n  exec {legacy}fi\n",
        fmt::arg("so", q(so)), fmt::arg("abi", measure_line(in, so, false)),
        fmt::arg("legacy", measure_line(in, bin, true)));
  }
  return s;
}

}  // namespace croq
