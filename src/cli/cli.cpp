// Parsing, dispatch, error mapping, the activity trace and the Markdown reference (cli.hpp).
#include "cli/cli.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "croq/gpu/device_key.hpp"
#include "croq/workspace/operators.hpp"
#include "croq/util/build_info.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "croq/util/number.hpp"
#include "croq/util/process.hpp"
#include "croq/util/time.hpp"

namespace croq::cli {

Workspace& Context::ws() {
  if (!workspace) workspace.emplace(resolve_root(root_flag).root);
  return *workspace;
}

void Context::emit(const json& doc) {
  if (text) {
    out << render_text(verb, doc);
    return;
  }
  out << (pretty ? doc.dump(2) : dump_compact(doc)) << "\n";
}

void Context::note(const std::string& line) {
  if (!quiet) err << line << "\n";
}

void add_task_options(CLI::App& app, TaskOptions& o, bool gpu_required) {
  auto* g = app.add_option("--gpu", o.gpu, "device key (default: CROQ_GPU, else detected; cpu_<arch> for dsl cpp)");
  if (gpu_required) g->required();
  app.add_option("--dsl", o.dsl, "cuda | croqtile | triton | cpp (default: the task context)");
  app.add_option("--shape-key", o.shape_key, "<operator>_<dtype>_<M>x<N>x<K>, used exactly as given (default: the task context)");
  app.add_option("--model", o.model, "model (driver) name: lowercase, digits, '-', '.', '_' (default: the task context)");
  app.add_option("--lock-timeout", o.lock_timeout_ms, "milliseconds to wait for the task lock")
      ->default_val(30000)->check(CLI::Range(0, 3600000));
  app.add_flag("--new", o.is_new, "start a task whose shape key or model is close to an existing one's (not a typo)");
}

fs::path current_task_file(const Workspace& ws) { return ws.root() / ".croq" / "current-task.json"; }

std::optional<TaskContext> task_context(Context& ctx) {
  Workspace& ws = ctx.ws();
  // The working directory inside a task folder: tuning/<gpu>/<dsl>/<kind>/<key>/<model>/...
  std::error_code ec;
  const fs::path cwd = fs::weakly_canonical(fs::current_path(ec), ec);
  const fs::path tuning = fs::weakly_canonical(ws.tuning_dir(), ec);
  const fs::path rel = cwd.lexically_relative(tuning);
  std::vector<std::string> parts;
  for (const auto& p : rel) parts.push_back(p.string());
  if (!rel.empty() && parts.front() != ".." && parts.size() >= 5) {
    bool kind_ok = false;
    for (ArtifactKind k : all_artifact_kinds()) kind_ok = kind_ok || parts[2] == artifact_kind_name(k);
    if (kind_ok) return TaskContext{parts[0], parts[1], parts[3], parts[4], "cwd"};
  }
  if (auto text = read_file(current_task_file(ws))) {
    if (auto j = try_parse_json(*text); j && j->is_object()) {
      TaskContext c{get_string(*j, "gpu").value_or(""), get_string(*j, "dsl").value_or(""),
                    get_string(*j, "shape_key").value_or(""), get_string(*j, "model").value_or(""), "croq use"};
      if (!c.dsl.empty() && !c.shape_key.empty() && !c.model.empty()) return c;
    }
  }
  return std::nullopt;
}

// A task that does not exist yet, next to one that does with a shape key or model a typo away, or
// with the same problem's key spelt otherwise.
void refuse_near_miss(Context& ctx, const TaskRef& t, const std::string& new_hint) {
  Workspace& ws = ctx.ws();
  std::error_code ec;
  if (fs::is_directory(ws.kind_dir(t, ArtifactKind::logs), ec)) return;
  // A shape key cut short (a dimension left out) is a typo; another dtype or other numbers name
  // another shape.
  auto near_key = [](const std::string& a, const std::string& b) {
    const std::string& shorter = a.size() < b.size() ? a : b;
    const std::string& longer = a.size() < b.size() ? b : a;
    return a != b && longer.rfind(shorter, 0) == 0 && longer[shorter.size()] == 'x';  // "..._64x64" of "..._64x64x64"
  };
  // Model names that differ only in their numbers are distinct (model-2); a letter or separator
  // more, less or different is a typo.
  auto near = [](const std::string& a, const std::string& b) {
    auto letters = [](const std::string& x) {
      std::string r;
      for (char c : x) {
        if (!std::isdigit(static_cast<unsigned char>(c))) r += c;
      }
      return r;
    };
    const std::string la = letters(a), lb = letters(b);
    return a != b && la != lb && std::max(la.size(), lb.size()) >= 3 && edit_distance(la, lb) <= 1;
  };
  std::vector<std::string> names, spelt;
  for (const auto& other : ws.list_tasks({}, t.dsl)) {
    const bool same_key = other.shape.text == t.shape.text;
    const bool same_model = other.model == t.model;
    if (same_model && same_problem(t.shape, other.shape)) {
      spelt.push_back(fmt::format("--shape-key {} --model {}", other.shape.text, other.model));
    } else if ((same_key && near(t.model, other.model)) || (same_model && near_key(t.shape.text, other.shape.text)) ||
               (near(t.model, other.model) && near_key(t.shape.text, other.shape.text))) {
      names.push_back(fmt::format("--shape-key {} --model {}", other.shape.text, other.model));
    }
  }
  if (!spelt.empty()) {
    throw Error(ExitCode::not_found,
                fmt::format("no task {} yet, and an existing task names the same problem with its key spelt "
                            "otherwise ({})",
                            t.id(), spelt.front()),
                fmt::format("use the existing task ({}){}", spelt.front(), new_hint));
  }
  if (names.empty()) return;
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : "; ") + n;
  throw Error(ExitCode::not_found,
              fmt::format("no task {} yet, and its name is close to an existing task's ({}): a typo?", t.id(), list),
              fmt::format("use the existing task ({}){}", names.front(), new_hint));
}

TaskRef resolve_task(Context& ctx, const TaskOptions& o) {
  TaskOptions v = o;
  if (v.dsl.empty() || v.shape_key.empty() || v.model.empty()) {
    auto c = task_context(ctx);
    if (!c) {
      std::string missing = v.dsl.empty() ? "--dsl" : v.shape_key.empty() ? "--shape-key" : "--model";
      throw_usage(missing + " is required (no task context)",
                  "name the task with --dsl, --shape-key and --model, run `croq use --dsl <dsl> --shape-key <key> "
                  "--model <model>` once, or run croq from inside one of the task's folders");
    }
    // The context fills only what was not given; a given part that differs names another task.
    const bool partial = !v.dsl.empty() || !v.shape_key.empty() || !v.model.empty();
    if (v.dsl.empty()) v.dsl = c->dsl;
    if (v.shape_key.empty()) v.shape_key = c->shape_key;
    if (v.model.empty()) v.model = c->model;
    if (v.gpu.empty() && !partial) v.gpu = c->gpu;
    ctx.trace_extra["task_context"] = c->origin;
  }
  validate_dsl(v.dsl);
  std::string gpu = resolve_device_key(v.gpu, v.dsl);
  TaskRef t = make_task(gpu, v.dsl, v.shape_key, v.model);
  ctx.ws();
  if (!v.is_new) refuse_near_miss(ctx, t, ", or pass --new to start this one");
  ctx.task = t;
  return t;
}

fs::path input_path(Context& ctx, const std::string& path) {
  fs::path p(path);
  std::error_code ec;
  if (p.is_absolute() || fs::exists(p, ec)) return fs::absolute(p);
  fs::path under_root = ctx.ws().root() / p;
  if (fs::exists(under_root, ec)) return under_root;
  return fs::absolute(p);
}

std::string kernel_of_measurement(const json& m) {
  if (!m.is_object() || !m.contains("candidate") || !m["candidate"].is_object()) return {};
  if (auto k = get_string(m["candidate"], "kernel"); k && !k->empty()) return *k;
  const std::string path = get_string(m["candidate"], "path").value_or("");
  if (path.empty() || path.rfind("library:", 0) == 0) return {};
  return fs::path(path).stem().string();
}

StepDeps step_deps(Context& ctx) {
  return StepDeps{process_runner(), [&ctx](const std::string& line) { ctx.note(line); }};
}

ExitCode print_step(Context& ctx, const StepResult& r) {
  for (auto it = r.trace.begin(); it != r.trace.end(); ++it) ctx.trace_extra[it.key()] = it.value();
  ctx.emit(r.doc);
  for (const auto& line : r.notes) ctx.note(line);
  return r.code;
}

std::chrono::milliseconds lock_timeout(const TaskOptions& o) { return std::chrono::milliseconds(o.lock_timeout_ms); }

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t p = 0;
  while (p <= text.size()) {
    size_t e = text.find(',', p);
    std::string item = text.substr(p, e == std::string::npos ? std::string::npos : e - p);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) item.erase(item.begin());
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.pop_back();
    if (!item.empty()) out.push_back(item);
    if (e == std::string::npos) break;
    p = e + 1;
  }
  return out;
}

json parse_json_object_arg(const std::string& text, const char* flag) {
  std::string err;
  auto j = try_parse_json(text, &err);
  if (!j || !j->is_object()) {
    throw_usage(fmt::format("{} must be a JSON object{}", flag, j ? "" : " (" + preview(err, 120) + ")"),
                "e.g. " + std::string(flag) + " '{\"key\": 1}'");
  }
  return *j;
}

std::string read_text_arg(const std::string& path, const char* flag, size_t max_bytes) {
  std::string text;
  if (path == "-") {
    char buf[1 << 16];
    while (std::cin.read(buf, sizeof buf) || std::cin.gcount() > 0) {
      text.append(buf, static_cast<size_t>(std::cin.gcount()));
      if (text.size() > max_bytes) break;
    }
  } else {
    text = read_file_or_throw(path);
  }
  if (text.size() > max_bytes) {
    throw_usage(fmt::format("{} holds {}{} bytes; the limit is {}", flag, path == "-" ? "more than " : "", text.size(), max_bytes),
                "summarise it in a few sentences; details belong in the source and memory/");
  }
  return text;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

namespace {

std::string verb_list_text() {
  std::string s = "verbs:\n";
  for (const auto& v : verbs()) s += fmt::format("  {:<22} {}\n", v.name, v.summary);
  s += "\nRun `croq help <verb>` (or `croq <verb> --help`) for a verb's options, examples, JSON output and exit codes.\n";
  return s;
}

std::string top_description() {
  return "croq: the mechanical half of a GPU-kernel tuning loop (baseline, build, verify, time, "
         "profile, decide, store, resume). Each verb prints one JSON document on stdout (text on a terminal; --json "
         "for JSON there too).";
}

// The verb named on the command line ("store-round", "checkpoint write"), judged from its first
// words; empty if none. Only that verb's options are built: building all of them is most of
// croq's own start-up time, and every verb runs as a fresh process.
std::string named_verb(int argc, char** argv) {
  std::vector<std::string> words;
  for (int i = 1; i < argc && words.size() < 2; ++i) {
    std::string a = argv[i];
    if (a == "--root") {
      ++i;  // its value
      continue;
    }
    if (!a.empty() && a[0] == '-') continue;
    words.push_back(a);
  }
  for (const auto& v : verbs()) {
    const std::string name = v.name;
    if (!words.empty() && name == words[0]) return name;
    if (words.size() == 2 && name == words[0] + " " + words[1]) return name;
  }
  return {};
}

// Every integer and floating-point option of a verb reads strict decimal text (number.hpp): CLI11
// alone takes "0x10" as 16 and "010" as 8, and a float option "inf" or "nan". The text is checked
// and, for integers, rewritten in canonical form before CLI11 converts it (and before any range
// check sees it).
void strict_numbers(CLI::App& sub) {
  for (CLI::Option* opt : sub.get_options()) {
    const std::string type = opt->get_type_name();
    const bool is_unsigned = type.rfind("UINT", 0) == 0;
    const bool integer = is_unsigned || type.rfind("INT", 0) == 0;
    if (!integer && type.rfind("FLOAT", 0) != 0) continue;
    opt->transform(CLI::Validator(
        [integer, is_unsigned](std::string& text) -> std::string {
          if (is_unsigned) {
            auto v = parse_decimal_unsigned(text);
            if (!v) return "value " + decimal_problem(text, true);
            text = std::to_string(*v);
            return {};
          }
          if (integer) {
            auto v = parse_decimal_integer(text);
            if (!v) return "value " + decimal_problem(text, true);
            text = std::to_string(*v);
            return {};
          }
          const std::string why = decimal_problem(text, false);
          return why.empty() ? why : "value " + why;
        },
        "", "strict decimal"));
  }
}

void setup_app(CLI::App& app, Context& ctx, std::vector<std::pair<CLI::App*, VerbRunner>>& runners,
               const std::string& named) {
  app.set_help_flag("-h,--help", "show help");
  app.add_option("--root", ctx.root_flag, "workspace root (default: CROQ_ROOT, else the folder above holding tuning/, else the git root)");
  app.add_flag("--pretty", ctx.pretty, "indent the JSON output");
  app.add_flag("-q,--quiet", ctx.quiet, "no human messages on stderr");
  app.add_flag("--json", ctx.json_flag, "JSON on a terminal too (a pipe always gets JSON)");
  app.add_flag_callback("--version", [&ctx]() {
    throw CLI::Success();
  }, "print the version");
  app.require_subcommand(0, 1);
  app.fallthrough();
  for (const auto& v : verbs()) {
    // "checkpoint write" -> subcommand "write" under "checkpoint"
    std::string name = v.name;
    CLI::App* parent = &app;
    size_t sp;
    while ((sp = name.find(' ')) != std::string::npos) {
      std::string head = name.substr(0, sp);
      CLI::App* existing = nullptr;
      for (auto* s : parent->get_subcommands([](CLI::App*) { return true; })) {
        if (s->get_name() == head) existing = s;
      }
      if (!existing) {
        existing = parent->add_subcommand(head, fmt::format("{} verbs", head));
        existing->require_subcommand(0, 1);
        existing->fallthrough();
      }
      parent = existing;
      name = name.substr(sp + 1);
    }
    CLI::App* sub = parent->add_subcommand(name, v.summary);
    std::string examples;
    for (const auto& e : verb_examples(v.name)) examples += "\n  " + e;
    sub->footer(std::string("\n") + v.details + (examples.empty() ? "" : "\n\nExamples:" + examples));
    if (named == v.name) {
      runners.emplace_back(sub, v.setup(*sub));
      strict_numbers(*sub);
    } else {
      // Listed (for help and "did you mean"), not built: the command line does not name it.
      sub->allow_extras();
      runners.emplace_back(sub, [](Context& c) -> ExitCode {
        throw Error(ExitCode::internal, "verb " + c.verb + " was not set up");
      });
    }
  }
}

void append_trace(Context& ctx, ExitCode code, double ms) {
  if (!ctx.workspace) return;
  std::vector<TaskRef> tasks = ctx.also_traced;
  if (ctx.task) tasks.insert(tasks.begin(), *ctx.task);
  if (tasks.empty()) return;
  json j;
  j["timestamp"] = now_iso8601();
  j["verb"] = ctx.verb;
  j["argv"] = ctx.argv;
  j["exit_code"] = static_cast<int>(code);
  j["ms"] = std::round(ms * 100) / 100;
  j["pid"] = ::getpid();
  for (auto it = ctx.trace_extra.begin(); it != ctx.trace_extra.end(); ++it) j[it.key()] = it.value();
  const std::string line = dump_compact(j);
  TailPolicy whole_json{[](std::string_view t) { return try_parse_json(t).has_value(); }, 1u << 20};
  for (const auto& task : tasks) {
    std::error_code ec;
    // Only tasks that exist on disk get a trace (a refused call on a mistyped task creates nothing).
    if (!fs::is_directory(ctx.workspace->kind_dir(task, ArtifactKind::logs), ec)) continue;
    const fs::path log = ctx.workspace->activity_log(task);
    try {
      // Appends from concurrent croq processes are serialised, so a torn tail is always one
      // that a dead process left.
      auto lock = FileLock::try_acquire(log.parent_path() / ".activity.lock", std::chrono::milliseconds(5000), ctx.verb,
                                        ctx.workspace->root());
      if (!lock) {
        ctx.note("croq: activity trace not written (its lock is busy)");
        continue;
      }
      append_line(log, line, /*durable=*/false, whole_json, ctx.workspace->root());
    } catch (const Error& e) {
      // The trace is informational: a verb does not fail because of it, but says so.
      ctx.note(std::string("croq: activity trace not written: ") + e.what());
    }
  }
}

// "croq checkpoint write": the usage line's name of a subcommand.
std::string full_name(const CLI::App* sub) {
  std::string name = sub->get_name();
  for (auto* p = sub->get_parent(); p && p->get_parent(); p = p->get_parent()) name = p->get_name() + " " + name;
  return name;
}

// Help of one subcommand (or the top), with `croq <verb>` in its usage line.
std::string help_of(const CLI::App* target) {
  if (!target->get_parent()) return target->help();
  std::string prev = "croq";
  const std::string name = full_name(target);
  if (auto sp = name.rfind(' '); sp != std::string::npos) prev += " " + name.substr(0, sp);
  return target->help(prev);
}

// The option names of a subcommand ("--iter", "-q"), for "did you mean".
std::vector<std::string> option_names(const CLI::App* sub) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : sub->get_options()) {
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
  }
  return names;
}

// "did you mean --iter?" for each unknown --flag among `extras`.
std::string flag_suggestions(const CLI::App* sub, const std::vector<std::string>& extras) {
  std::string hint;
  const auto names = option_names(sub);
  for (const auto& e : extras) {
    if (e.rfind("--", 0) != 0) continue;
    const std::string flag = e.substr(0, e.find('='));
    std::string best;
    size_t best_d = 99;
    for (const auto& n : names) {
      size_t d = edit_distance(flag, n);
      if (d < best_d) best_d = d, best = n;
    }
    if (!best.empty() && best_d <= std::max<size_t>(2, flag.size() / 4)) {
      hint += (hint.empty() ? "" : "; ") + fmt::format("{}: did you mean {}?", flag, best);
    } else {
      hint += (hint.empty() ? "" : "; ") + fmt::format("{} is not an option of croq {}", flag, full_name(sub));
    }
  }
  return hint;
}

// The first word that is neither an option nor an option's value.
std::string first_word(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--root") {
      ++i;
      continue;
    }
    if (!a.empty() && a[0] == '-') continue;
    return a;
  }
  return {};
}

// The verbs nearest to an unknown word, nearest first.
std::vector<std::string> near_verbs(const std::string& word) {
  std::vector<std::pair<size_t, std::string>> near;
  for (const auto& v : verbs()) {
    std::string first = std::string(v.name).substr(0, std::string(v.name).find(' '));
    size_t d = edit_distance(word, first);
    if (d <= 3 && std::none_of(near.begin(), near.end(), [&](auto& p) { return p.second == first; })) near.emplace_back(d, first);
  }
  std::sort(near.begin(), near.end());
  std::vector<std::string> out;
  for (auto& [d, n] : near) out.push_back(n);
  return out;
}

}  // namespace

std::string verb_help(const std::string& verb) {
  Context scratch_ctx{std::cout, std::cerr, {}, false, false, false, false, {}, {}, std::nullopt, std::nullopt, {}, json::object()};
  CLI::App app(top_description(), "croq");
  std::vector<std::pair<CLI::App*, VerbRunner>> runners;
  setup_app(app, scratch_ctx, runners, verb);
  for (auto& [sub, runner] : runners) {
    if (full_name(sub) == verb) return help_of(sub);
  }
  return {};
}

int run(int argc, char** argv, std::ostream& out, std::ostream& err) {
  Stopwatch clock;
  Context ctx{out, err, {}, false, false, false, false, {}, {}, std::nullopt, std::nullopt, {}, json::object()};
  for (int i = 1; i < argc; ++i) ctx.argv.emplace_back(argv[i]);
  CLI::App app(top_description(), "croq");
  std::vector<std::pair<CLI::App*, VerbRunner>> runners;
  setup_app(app, ctx, runners, named_verb(argc, argv));

  auto fail = [&](ExitCode code, const std::string& message, const std::string& hint, const json& details = nullptr) {
    err << "croq" << (ctx.verb.empty() ? "" : " " + ctx.verb) << ": error: " << message << "\n";
    if (!hint.empty()) err << "  hint: " << hint << "\n";
    json doc = {{"ok", false},
                {"error", {{"code", exit_code_name(code)}, {"exit_code", static_cast<int>(code)}, {"message", message}}}};
    if (!hint.empty()) doc["error"]["hint"] = hint;
    if (details.is_object()) {
      for (auto it = details.begin(); it != details.end(); ++it) doc["error"][it.key()] = it.value();
    }
    if (!ctx.text) out << dump_compact(doc) << "\n";  // a terminal has the message on stderr
    return static_cast<int>(code);
  };

  // A person at a terminal gets text; a pipe (agents, the tuner, scripts), --json, --pretty or
  // CROQ_JSON=1 the JSON document. Decided before the parse, so that an error in the command line
  // itself is told on stderr only.
  {
    const char* env_json = std::getenv("CROQ_JSON");
    bool json_asked = env_json && std::string(env_json) == "1";
    for (const auto& a : ctx.argv) json_asked = json_asked || a == "--json" || a == "--pretty";
    ctx.text = &out == &std::cout && ::isatty(STDOUT_FILENO) && !json_asked;
  }
  if (argc >= 2 && std::string(argv[1]) == "--version") {
    out << dump_compact({{"croq", build_info::k_version}, {"git", build_info::git_sha()}}) << "\n";
    return 0;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    // Help for the deepest subcommand that was given.
    CLI::App* target = &app;
    while (true) {
      auto subs = target->get_subcommands();
      if (subs.empty()) break;
      target = subs.front();
    }
    const std::string word = first_word(argc, argv);
    if (target == &app && !word.empty()) {
      // `croq sweeps --help`: a verb croq does not have is refused, help or not.
      auto near = near_verbs(word);
      return fail(ExitCode::usage, "unknown verb '" + word + "'",
                  near.empty() ? "run `croq help` for the list of verbs" : "did you mean `croq " + near.front() + "`?");
    }
    out << help_of(target);
    if (target == &app) out << "\n" << verb_list_text();
    return 0;
  } catch (const CLI::Success&) {
    out << dump_compact({{"croq", build_info::k_version}, {"git", build_info::git_sha()}}) << "\n";
    return 0;
  } catch (const CLI::ExtrasError& e) {
    // An unknown verb (suggest the nearest names), or an argument the verb does not take
    // (suggest the nearest option).
    const std::string word = first_word(argc, argv);
    auto near = near_verbs(word);
    CLI::App* deepest = &app;
    for (;;) {
      auto subs = deepest->get_subcommands();
      if (subs.empty()) break;
      deepest = subs.front();
    }
    std::string hint = "run `croq help` for the list of verbs";
    // CLI11 lists the unexpected arguments last first; the message names them as they were typed.
    const std::vector<std::string> extras = app.remaining(true);
    std::string message = e.what();
    if (deepest != &app) {
      ctx.verb = full_name(deepest);
      std::string flags = flag_suggestions(deepest, extras);
      hint = (flags.empty() ? "" : flags + "; ") + "run `croq help " + ctx.verb + "` for its options";
      message = fmt::format("croq {} does not take {}", ctx.verb, fmt::join(extras, " "));
    } else if (!word.empty()) {
      message = "unknown verb '" + word + "'";
      if (!near.empty()) hint = "did you mean `croq " + near.front() + "`?";
    }
    return fail(ExitCode::usage, message, hint);
  } catch (const CLI::ParseError& e) {
    CLI::App* deepest = &app;
    for (;;) {
      auto subs = deepest->get_subcommands();
      if (subs.empty()) break;
      deepest = subs.front();
      ctx.verb += (ctx.verb.empty() ? "" : " ") + deepest->get_name();
    }
    // A missing required option is reported before the arguments the verb does not take: a
    // mistyped `--dls cpp` would read "--dsl is required" alone; the mistyped flag comes first.
    std::string flags;
    if (deepest != &app) flags = flag_suggestions(deepest, app.remaining(true));
    return fail(ExitCode::usage, e.what(),
                (flags.empty() ? "" : flags + "; ") + "run `croq help" + (ctx.verb.empty() ? "" : " " + ctx.verb) + "` for the options");
  }

  // Find the verb that was chosen.
  VerbRunner* chosen = nullptr;
  for (auto& [sub, runner] : runners) {
    if (sub->parsed()) {
      bool leaf = sub->get_subcommands().empty();
      if (leaf) {
        chosen = &runner;
        std::string name = sub->get_name();
        for (auto* p = sub->get_parent(); p && p != &app; p = p->get_parent()) name = p->get_name() + " " + name;
        ctx.verb = name;
      }
    }
  }
  if (!chosen) {
    // A group without its verb ("croq checkpoint"), or nothing at all.
    CLI::App* target = &app;
    while (true) {
      auto subs = target->get_subcommands();
      if (subs.empty()) break;
      target = subs.front();
    }
    out << help_of(target);
    if (target == &app) out << "\n" << verb_list_text();
    return target == &app && argc <= 1 ? 0 : static_cast<int>(ExitCode::usage);
  }

  ctx.text = ctx.text && !ctx.json_flag && !ctx.pretty;  // the flags as parsed (--json=true and the like)
  if (const char* p = std::getenv("CROQ_PARSE_ONLY"); p && std::string(p) == "1") {
    // The command line parsed: tests run every command croq suggests through here.
    out << dump_compact({{"ok", true}, {"parse_only", true}, {"verb", ctx.verb}}) << "\n";
    return 0;
  }
  ExitCode code = ExitCode::ok;
  int rc;
  try {
    code = (*chosen)(ctx);
    rc = static_cast<int>(code);
  } catch (const Error& e) {
    code = e.code();
    rc = fail(e.code(), e.what(), e.hint(), e.details());
  } catch (const std::bad_alloc&) {
    code = ExitCode::failure;
    rc = fail(code, "out of memory", "the input is too large");
  } catch (const std::exception& e) {
    code = ExitCode::internal;
    rc = fail(code, std::string("internal error: ") + e.what(), "this is a bug in croq; please report it with the command line");
  }
  append_trace(ctx, code, clock.elapsed_ms());
  return rc;
}

std::string cli_reference_markdown() {
  std::ostringstream md;
  md << "# croq command reference\n\n"
     << "Generated from the verb table (`croq help --markdown`); a test keeps this file in step.\n\n"
     << "Every verb prints one JSON document on stdout and human messages on stderr. Global options "
        "(before the verb): `--root DIR` (workspace root; default `CROQ_ROOT`, else the nearest folder "
        "above holding `tuning/`, else the git root), `--pretty`, `-q/--quiet`, `--version`.\n\n"
     << "Every verb that acts on an existing task (one whose `logs/<key>/<model>/` folder exists) "
        "appends one line `{timestamp, verb, argv, exit_code, ms, pid}` to "
        "`memory/<key>/<model>/activity.jsonl`, refused calls included. Record formats: "
        "docs/formats.md.\n\n"
     << "## Exit codes\n\n| code | name | meaning |\n|---|---|---|\n";
  const std::pair<ExitCode, const char*> codes[] = {
      {ExitCode::ok, "success"},
      {ExitCode::failure, "the verb ran and its outcome is a failure (e.g. validation found errors)"},
      {ExitCode::usage, "bad arguments or bad input; nothing was changed"},
      {ExitCode::drift, "checkpoint verify: significant drift between the plan and the build"},
      {ExitCode::not_found, "the task, record or file does not exist"},
      {ExitCode::refused, "the protocol refused the step; the JSON says why and what to do"},
      {ExitCode::busy, "a lock or GPU lease could not be taken in time"},
      {ExitCode::no_device, "no GPU, or a tool it needs, is available"},
      {ExitCode::candidate_failed, "the candidate did not build, verify or run; its verdict is in the JSON"},
      {ExitCode::conflict, "the record already exists"},
      {ExitCode::corrupt, "a stored file is damaged beyond what the tolerant readers accept"},
      {ExitCode::internal, "a bug in croq"},
  };
  for (const auto& [c, what] : codes) md << "| " << static_cast<int>(c) << " | " << exit_code_name(c) << " | " << what << " |\n";
  md << "| 130 | interrupted | `croq tune` stopped by SIGINT or SIGTERM (Ctrl-C): every round stored before it is "
        "kept, and it prints the command that goes on |\n";
  md << "\nOn failure stdout holds `{\"ok\":false,\"error\":{\"code\",\"exit_code\",\"message\",\"hint\"}}` "
        "and stderr one line `croq <verb>: error: ...` with a hint.\n\n";
  md << "## Verbs\n\n";
  for (const auto& v : verbs()) md << "- [`croq " << v.name << "`](#croq-" << [&] {
      std::string a = v.name;
      std::replace(a.begin(), a.end(), ' ', '-');
      return a;
    }() << ") — " << v.summary << "\n";
  md << "\n";
  for (const auto& v : verbs()) {
    CLI::App scratch("", "croq");
    CLI::App& sub = *scratch.add_subcommand("x", "");
    (void)v.setup(sub);
    md << "### croq " << v.name << "\n\n" << v.summary << "\n\n";
    std::string rows;
    for (const CLI::Option* opt : sub.get_options()) {
      if (opt->get_name() == "--help" || opt->get_name().empty()) continue;
      std::string names = opt->get_name(false, true);
      std::string desc;
      for (char c : opt->get_description()) {
        // Table cells: no column separators, no angle brackets taken for HTML.
        if (c == '|') desc += '/';
        else if (c == '<') desc += "&lt;";
        else if (c == '>') desc += "&gt;";
        else desc += c;
      }
      if (opt->get_required()) desc += " **(required)**";
      std::string def = opt->get_default_str();
      if (!def.empty()) desc += " (default: `" + def + "`)";
      rows += "| `" + names + "` | " + desc + " |\n";
    }
    if (rows.empty()) md << "No options.\n";
    else md << "| option | description |\n|---|---|\n" << rows;
    md << "\n" << v.details << "\n\n";
    if (!verb_examples(v.name).empty()) {
      md << "Examples:\n\n```\n";
      for (const auto& e : verb_examples(v.name)) md << e << "\n";
      md << "```\n\n";
    }
  }
  return md.str();
}

}  // namespace croq::cli
