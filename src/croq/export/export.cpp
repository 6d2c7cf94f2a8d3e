// croq export (export.hpp): plan, generate, compile, rename, archive, link, check, then move the
// finished folder into place (a failed export leaves an earlier one as it was).
#include "croq/export/export.hpp"

#include <unistd.h>

#include <algorithm>
#include <elf.h>
#include <future>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "croq/build/includes.hpp"
#include "croq/build/symbols.hpp"
#include "croq/build/toolchain.hpp"
#include "croq/export/generate.hpp"
#include "croq/export/plan.hpp"
#include "croq/util/build_info.hpp"
#include "croq/util/elf.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/hash.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"
#include "croq/util/time.hpp"
#include "croq/util/time.hpp"

namespace croq {

namespace {

constexpr auto k_step_timeout = std::chrono::minutes(30);

std::string tool(const char* env, const char* name) {
  if (const char* e = std::getenv(env); e && *e) return e;
  if (auto p = find_executable(name)) return p->string();
  throw Error(ExitCode::not_found, fmt::format("{} not found on PATH", name),
              fmt::format("install binutils (it comes with g++) or set {}", env));
}

// One command of the build, run in the export folder (relative paths, so build.sh can repeat it).
struct Step {
  std::string label;
  std::vector<std::string> argv;
  bool croqs_own = false;  // croq's generated code (the dispatcher): a failure is croq's bug, not the kernel's
};

void run_step(const Step& s, const fs::path& cwd) {
  ProcessSpec spec;
  spec.argv = s.argv;
  spec.cwd = cwd;
  spec.timeout = k_step_timeout;
  ProcessResult r = process_runner().run(spec);
  if (!r.started) {
    throw Error(ExitCode::not_found, fmt::format("cannot start {}: {}", s.argv.front(), r.spawn_error),
                "check the toolchain (croq env validate --dsl cuda / cpp)");
  }
  if (!r.ok()) {
    std::string log = r.err + r.out;
    if (log.size() > 6000) log = "..." + log.substr(log.size() - 6000);
    if (s.croqs_own) {
      throw Error(ExitCode::internal, fmt::format("{} failed ({}):\n{}\n{}", s.label, r.describe(), shell_join(s.argv), log),
                  "the code croq generated does not compile: a bug in croq, not in the kernels; the export folder "
                  "was not changed (report it with this log)");
    }
    throw Error(ExitCode::candidate_failed, fmt::format("{} failed ({}):\n{}\n{}", s.label, r.describe(), shell_join(s.argv), log),
                "the export folder was not changed; fix the kernel or leave its task out");
  }
}

// Runs independent steps, at most `jobs` at once; the first failure is thrown after all finished.
void run_parallel(const std::vector<Step>& steps, const fs::path& cwd, int jobs) {
  std::vector<std::future<void>> running;
  std::exception_ptr first;
  auto drain = [&](size_t keep) {
    while (running.size() > keep) {
      try {
        running.front().get();
      } catch (...) {
        if (!first) first = std::current_exception();
      }
      running.erase(running.begin());
    }
  };
  for (const Step& s : steps) {
    drain(static_cast<size_t>(std::max(1, jobs)) - 1);
    running.push_back(std::async(std::launch::async, [&s, &cwd] { run_step(s, cwd); }));
  }
  drain(0);
  if (first) std::rethrow_exception(first);
}

// Appends `flags` to `argv`, leaving out those already there ("-Xcompiler X" counts as one flag).
void append_missing(std::vector<std::string>& argv, const std::vector<std::string>& flags) {
  auto has = [&](const std::string& a, const std::string* b) {
    for (size_t i = 0; i < argv.size(); ++i) {
      if (argv[i] != a) continue;
      if (!b) return true;
      if (i + 1 < argv.size() && argv[i + 1] == *b) return true;
    }
    return false;
  };
  for (size_t i = 0; i < flags.size(); ++i) {
    const bool pair = (flags[i] == "-Xcompiler" || flags[i] == "-Xlinker") && i + 1 < flags.size();
    if (pair) {
      if (!has(flags[i], &flags[i + 1])) argv.insert(argv.end(), {flags[i], flags[i + 1]});
      ++i;
    } else if (!has(flags[i], nullptr)) {
      argv.push_back(flags[i]);
    }
  }
}

bool is_previous_export(const fs::path& dir) {
  auto text = read_file(dir / "manifest.json");
  if (!text) return false;
  auto j = try_parse_json(*text);
  return j && j->is_object() && j->value("schema", "") == k_export_schema;
}

// "20261205T015010Z": the time in a file name.
std::string compact_stamp() {
  std::string t = now_iso8601().substr(0, 19);
  t.erase(std::remove_if(t.begin(), t.end(), [](char c) { return c == '-' || c == ':'; }), t.end());
  return t + "Z";
}

bool empty_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir, ec) && fs::directory_iterator(dir, ec) == fs::directory_iterator();
}

std::string describe_problem(const ExportKernel& k) {
  return fmt::format("{} {}x{}x{} {} B {}", k.op_name, k.m, k.n, k.k, k.dtype,
                     k.b_layout == CROQ_ROW_MAJOR ? "row" : "col");
}

}  // namespace

void validate_export_name(const std::string& name) {
  auto ok = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; };
  if (name.empty() || name.size() > 32 || !(name[0] >= 'a' && name[0] <= 'z') ||
      !std::all_of(name.begin(), name.end(), ok)) {
    throw_usage(fmt::format("invalid export name '{}'", name),
                "a name is 1-32 lowercase letters, digits or '_', starting with a letter: it becomes the library "
                "(lib<name>.so), the header, the entry prefix (<name>_matmul) and the torch namespace");
  }
}

json export_library(const Workspace& ws, const ExportRequest& req) {
  validate_export_name(req.name);
  if (req.tasks.empty()) throw_usage("no task to export", "name tasks as <gpu>/<dsl>/<shape_key>/<model>, or use --all");
  if (!req.shared && !req.static_lib) throw_usage("neither a shared nor a static library asked for");
  if (req.out.empty()) throw_usage("no output folder", "pass --out DIR");
  const fs::path out = fs::absolute(req.out).lexically_normal();
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec)) throw_usage(fmt::format("{} is not a folder", out.string()));
  // The folder is replaced whole at the end: never the workspace, a folder holding it, or one in
  // its artifact tree (--force included), so no record can go with it.
  {
    const fs::path root = fs::weakly_canonical(ws.root(), ec);
    const fs::path where = fs::weakly_canonical(out, ec);
    auto within = [](const fs::path& inner, const fs::path& outer) {
      const fs::path rel = inner.lexically_relative(outer);
      return !rel.empty() && *rel.begin() != "..";
    };
    if (within(root, where)) {
      throw_usage(fmt::format("--out {} holds the workspace {}: the export replaces its folder whole, records included",
                              out.string(), root.string()),
                  fmt::format("choose a folder of its own, e.g. --out {}", (root / "dist" / req.name).string()));
    }
    if (within(where, fs::weakly_canonical(ws.tuning_dir(), ec))) {
      throw_usage(fmt::format("--out {} is inside the workspace's artifact tree ({})", out.string(),
                              ws.tuning_dir().string()),
                  fmt::format("choose a folder outside tuning/, e.g. --out {}", (root / "dist" / req.name).string()));
    }
  }
  const bool foreign = fs::is_directory(out, ec) && !empty_dir(out) && !is_previous_export(out);
  if (foreign && !req.force) {
    throw_usage(fmt::format("{} is not empty and holds no earlier export (no manifest.json of croq export)", out.string()),
                "choose a new folder, or add --force to set its contents aside (kept beside it) and export there");
  }

  // Plan: one kernel per task, one task per problem.
  std::vector<ExportKernel> kernels;
  for (const TaskRef& t : req.tasks) {
    ExportKernel k = plan_export_kernel(ws, t);
    for (const auto& other : kernels) {
      if (describe_problem(other) == describe_problem(k) && other.a_type == k.a_type && other.c_type == k.c_type &&
          other.compute_type == k.compute_type) {
        throw_usage(fmt::format("tasks {} and {} were tuned for the same problem ({}x{}x{} {}): one library holds "
                                "one kernel per problem", other.task.id(), t.id(), k.m, k.n, k.k, k.dtype),
                    "export one of them (each with --out of its own, or name the tasks to export instead of --all)");
      }
    }
    kernels.push_back(std::move(k));
  }
  const bool any_cuda = std::any_of(kernels.begin(), kernels.end(), [](const ExportKernel& k) { return k.language == "cuda"; });
  const bool any_cpp = std::any_of(kernels.begin(), kernels.end(), [](const ExportKernel& k) { return k.language == "cpp"; });
  Toolchain tc = Toolchain::from_env();
  if (any_cuda && (tc.nvcc.empty() || !fs::exists(tc.nvcc, ec))) {
    throw Error(ExitCode::not_found, "nvcc not found: the export has CUDA kernels",
                "install the CUDA toolkit, or set CUDA_HOME / CROQ_NVCC");
  }

  // Work in a sibling folder; move it into place at the end.
  ensure_dir(out.parent_path());
  const fs::path tmp = out.parent_path() / fmt::format(".{}.croq-export-{}", out.filename().string(), ::getpid());
  fs::remove_all(tmp, ec);
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code e;
      if (!dir.empty()) fs::remove_all(dir, e);
    }
  } cleanup{tmp};
  for (const char* d : {"include/croq", "src/kernels", "src/symbols", "build", "lib", "torch"}) ensure_dir(tmp / d);
  // croq's headers: the ABI, and the host conversions that CPU kernels include.
  for (const auto& h : fs::directory_iterator(find_project_dir("include") / "croq")) {
    if (h.is_regular_file()) {
      fs::copy_file(h.path(), tmp / "include/croq" / h.path().filename(), fs::copy_options::overwrite_existing);
    }
  }

  // Sources and the compile of each kernel to an object.
  std::vector<Step> compiles;
  std::vector<std::string> sources, prefixes;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const ExportKernel& k = kernels[i];
    // The source and the local headers it includes from its own folder, in a folder of its own.
    const std::string src = fmt::format("src/kernels/k{}/{}{}", i, k.record.kernel, k.source.extension().string());
    ensure_dir((tmp / src).parent_path());
    fs::copy_file(k.source, tmp / src, fs::copy_options::overwrite_existing);
    const fs::path src_dir = fs::weakly_canonical(k.source.parent_path(), ec);
    for (const IncludedFile& inc : resolve_includes(k.source, {})) {
      const fs::path rel = fs::relative(inc.path, src_dir, ec);
      if (ec || rel.empty() || *rel.begin() == "..") continue;  // not the kernel's own file
      ensure_dir((tmp / src).parent_path() / rel.parent_path());
      fs::copy_file(inc.path, (tmp / src).parent_path() / rel, fs::copy_options::overwrite_existing);
    }
    sources.push_back(src);
    prefixes.push_back(fmt::format("{}_k{}_", req.name, i));
    Step s;
    s.label = fmt::format("compiling {} of {}", k.record.kernel, k.task.id());
    if (k.language == "cuda") {
      s.argv = {tc.nvcc};
      s.argv.insert(s.argv.end(), k.flags.begin(), k.flags.end());
      s.argv.push_back("-c");
      append_missing(s.argv, {"-Xcompiler", "-fPIC"});
      append_missing(s.argv, composable_nvcc_flags());
    } else {
      s.argv = {tc.cxx};
      s.argv.insert(s.argv.end(), k.flags.begin(), k.flags.end());
      s.argv.push_back("-c");
      append_missing(s.argv, {"-fPIC"});
      append_missing(s.argv, composable_cxx_flags(tc.cxx));
    }
    s.argv.insert(s.argv.end(), {"-Iinclude", src, "-o", fmt::format("build/k{}.o", i)});
    compiles.push_back(s);
  }
  const int jobs = std::max(1, req.jobs > 0 ? req.jobs : static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<Step> script;  // every step, for build.sh
  script.insert(script.end(), compiles.begin(), compiles.end());
  if (req.build) run_parallel(compiles, tmp, jobs);

  // Rename every symbol each object defines with external linkage: its prefix.
  std::vector<KernelEntries> entries(kernels.size());
  const std::string objcopy = req.build ? tool("CROQ_OBJCOPY", "objcopy") : std::string("objcopy");
  for (size_t i = 0; i < kernels.size(); ++i) {
    KernelEntries& e = entries[i];
    e.prefix = prefixes[i];
    const std::string obj = fmt::format("build/k{}.o", i);
    const std::string syms = fmt::format("src/symbols/k{}.syms", i);
    if (req.build) {
      const ElfFile elf = read_elf(read_file_or_throw(tmp / obj));
      if (!elf.ok) throw Error(ExitCode::internal, fmt::format("{}: {}", obj, elf.error));
      std::set<std::string> defined;
      for (const ElfSymbol& s : elf.symbols) {
        if (s.defined && s.bind != STB_LOCAL && !s.dynamic) defined.insert(s.name);
      }
      std::string map;
      for (const auto& name : defined) map += name + " " + e.prefix + name + "\n";
      atomic_write(tmp / syms, map, false);
      e.matmul = defined.count("croq_matmul") > 0;
      e.matmul_workspace = defined.count("croq_matmul_workspace_bytes") > 0;
      e.info = defined.count("croq_kernel_info") > 0;
      e.gemm = defined.count("croq_gemm") > 0;
      e.gemm_workspace = defined.count("croq_gemm_workspace_bytes") > 0;
      e.gemm_prepared_bytes = defined.count("croq_gemm_prepared_bytes") > 0;
      e.gemm_prepare = defined.count("croq_gemm_prepare") > 0;
      if (!e.matmul && !e.gemm) {
        throw Error(ExitCode::candidate_failed,
                    fmt::format("{} of {} defines neither croq_matmul nor croq_gemm", kernels[i].record.kernel,
                                kernels[i].task.id()),
                    "the export links kernels through croq's ABI (include/croq/kernel_abi.h)");
      }
    }
    Step s{fmt::format("renaming the symbols of {}", kernels[i].record.kernel),
           {objcopy, "--redefine-syms=" + syms, obj}};
    script.push_back(s);
    if (req.build) run_step(s, tmp);
  }

  // The manifest, and the part of it the library carries.
  json manifest;
  manifest["schema"] = k_export_schema;
  manifest["name"] = req.name;
  manifest["created_at"] = now_iso8601();
  manifest["croq"] = {{"version", build_info::k_version}, {"commit", build_info::git_sha()}};
  manifest["dispatch_rule"] = dispatch_rule_text();
  json info_kernels = json::array();
  manifest["kernels"] = json::array();
  for (size_t i = 0; i < kernels.size(); ++i) {
    json k = kernels[i].to_json();
    k["index"] = i;
    k["source"] = sources[i];
    k["source_sha256"] = sha256_file(tmp / sources[i]);
    k["symbol_prefix"] = prefixes[i];
    json abi = json::array();
    const KernelEntries& e = entries[i];
    for (auto [has, n] : {std::pair{e.matmul, "croq_matmul"}, {e.matmul_workspace, "croq_matmul_workspace_bytes"},
                          {e.gemm, "croq_gemm"}, {e.gemm_workspace, "croq_gemm_workspace_bytes"},
                          {e.gemm_prepared_bytes, "croq_gemm_prepared_bytes"}, {e.gemm_prepare, "croq_gemm_prepare"},
                          {e.info, "croq_kernel_info"}}) {
      if (has) abi.push_back(n);
    }
    k["abi_entries"] = abi;
    manifest["kernels"].push_back(k);
    info_kernels.push_back({{"task", k["task"]}, {"task_uid", k["task_uid"]}, {"round", k["round"]},
                            {"kernel", k["kernel"]}, {"tflops", k["tflops"]}, {"problem", k["problem"]}});
  }
  ExportText text;
  text.name = req.name;
  text.kernels = kernels;
  text.entries = entries;
  text.info_json = dump_compact(json{{"name", req.name}, {"schema", k_export_schema}, {"kernels", info_kernels}});

  // The dispatcher, the header and the libraries.
  atomic_write(tmp / ("src/" + req.name + "_dispatch.cpp"), dispatcher_source(text), false);
  atomic_write(tmp / ("include/" + req.name + ".h"), header_text(text), false);
  atomic_write(tmp / ("src/" + req.name + ".map"), version_script_text(text), false);
  Step dispatch{"compiling the dispatcher",
                {tc.cxx, "-O2", "-std=c++17", "-fPIC", "-fvisibility=hidden", "-Iinclude", "-c",
                 "src/" + req.name + "_dispatch.cpp", "-o", "build/dispatch.o"},
                true};
  script.push_back(dispatch);
  if (req.build) run_step(dispatch, tmp);
  std::vector<std::string> objects;
  for (size_t i = 0; i < kernels.size(); ++i) objects.push_back(fmt::format("build/k{}.o", i));
  objects.push_back("build/dispatch.o");
  json libs = json::object();
  if (req.static_lib) {
    Step ar{"archiving the static library", {req.build ? tool("CROQ_AR", "ar") : std::string("ar"), "rcs",
                                             "lib/lib" + req.name + ".a"}};
    ar.argv.insert(ar.argv.end(), objects.begin(), objects.end());
    script.push_back(ar);
    if (req.build) run_step(ar, tmp);
    libs["static"] = "lib/lib" + req.name + ".a";
  }
  if (req.shared) {
    Step link;
    link.label = "linking the shared library";
    const std::string so = "lib/lib" + req.name + ".so";
    if (any_cuda) {
      link.argv = {tc.nvcc, "--shared", "-o", so};
      link.argv.insert(link.argv.end(), objects.begin(), objects.end());
      for (const std::string& f : {std::string("-Xlinker"), "--version-script=src/" + req.name + ".map",
                                   std::string("-Xlinker"), "-soname=lib" + req.name + ".so", std::string("-Xcompiler"),
                                   std::string("-pthread")}) {
        link.argv.push_back(f);
      }
    } else {
      link.argv = {tc.cxx, "-shared", "-pthread", "-o", so};
      link.argv.insert(link.argv.end(), objects.begin(), objects.end());
      link.argv.push_back("-Wl,--version-script=src/" + req.name + ".map");
      link.argv.push_back("-Wl,-soname,lib" + req.name + ".so");
    }
    script.push_back(link);
    if (req.build) run_step(link, tmp);
    libs["shared"] = so;
  }
  manifest["libraries"] = libs;
  manifest["header"] = "include/" + req.name + ".h";
  manifest["cmake"] = "lib/cmake/" + req.name + "/" + req.name + "Config.cmake";
  manifest["torch"] = "torch/setup.py";
  manifest["built"] = req.build;

  // What the shared library exports: only <name>_* entries, no unique symbols.
  json check = nullptr;
  if (req.build && req.shared) {
    const std::string so_text = read_file_or_throw(tmp / libs["shared"].get<std::string>());
    const ElfFile elf = read_elf(so_text);
    std::set<std::string> exported, foreign, unique;
    for (const ElfSymbol& s : elf.symbols) {
      if (!s.defined) continue;
      if (s.bind == STB_GNU_UNIQUE) unique.insert(s.name);
      if (!s.dynamic || s.bind == STB_LOCAL || s.visibility == STV_HIDDEN || s.visibility == STV_INTERNAL) continue;
      if (s.name.rfind(req.name + "_", 0) == 0) exported.insert(s.name);
      else if (s.name != "_init" && s.name != "_fini") foreign.insert(s.name);
    }
    check = {{"exported", std::vector<std::string>(exported.begin(), exported.end())},
             {"foreign_exports", std::vector<std::string>(foreign.begin(), foreign.end())},
             {"unique", std::vector<std::string>(unique.begin(), unique.end())}};
    if (!foreign.empty() || !unique.empty()) {
      throw Error(ExitCode::internal, fmt::format("lib{}.so exports symbols other than {}_* or unique symbols: {}",
                                                  req.name, req.name, dump_compact(check)));
    }
  }
  manifest["symbols"] = check;

  // CMake package, torch extension, README, build.sh, manifest.
  const fs::path cmake_dir = tmp / "lib" / "cmake" / req.name;
  ensure_dir(cmake_dir);
  atomic_write(cmake_dir / (req.name + "Config.cmake"), cmake_config_text(text, req.shared, req.static_lib), false);
  atomic_write(cmake_dir / (req.name + "ConfigVersion.cmake"), cmake_version_text(build_info::k_version), false);
  atomic_write(tmp / "torch" / (req.name + "_torch.cpp"), torch_extension_source(text), false);
  atomic_write(tmp / "torch" / "setup.py", torch_setup_py(text), false);
  atomic_write(tmp / "torch" / ("test_" + req.name + "_torch.py"), torch_test_py(text), false);
  atomic_write(tmp / "README.md", readme_text(text, req.shared, req.static_lib), false);
  std::string sh = "#!/bin/sh\n# Rebuilds the libraries of this export from src/: the commands croq export ran.\nset -e\n"
                   "cd \"$(dirname \"$0\")/..\"\nmkdir -p build lib\n";
  for (const Step& s : script) sh += "# " + s.label + "\n" + shell_join(s.argv) + "\n";
  atomic_write(tmp / "src" / "build.sh", sh, false);
  fs::permissions(tmp / "src" / "build.sh", fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::add);
  fs::remove_all(tmp / "build", ec);
  atomic_write(tmp / "manifest.json", manifest.dump(2) + "\n", false);

  // Into place: an earlier export is replaced whole; with --force, whatever else was there is set
  // aside beside it, never deleted.
  std::string set_aside;
  if (fs::exists(out, ec)) {
    if (foreign) {
      fs::path aside;
      for (int i = 0;; ++i) {
        aside = out.parent_path() / fmt::format("{}.before-export-{}{}", out.filename().string(), compact_stamp(),
                                                i == 0 ? std::string() : fmt::format("-{}", i));
        if (!fs::exists(aside, ec)) break;
      }
      fs::rename(out, aside);
      fs::rename(tmp, out);
      set_aside = aside.string();
    } else {
      const fs::path old = out.parent_path() / fmt::format(".{}.croq-export-old-{}", out.filename().string(), ::getpid());
      fs::rename(out, old);
      fs::rename(tmp, out);
      fs::remove_all(old, ec);
    }
  } else {
    fs::rename(tmp, out);
  }
  cleanup.dir.clear();
  json result = manifest;
  if (!set_aside.empty()) result["set_aside"] = set_aside;
  result["out"] = out.string();
  result["any_cuda"] = any_cuda;
  result["any_cpp"] = any_cpp;
  return result;
}

}  // namespace croq
