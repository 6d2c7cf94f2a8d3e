// Every command croq suggests is valid (issue 23, point 1). Three ways:
//  - every `croq <verb> ...` written in croq's sources and skills names a verb croq has, and every
//    --option after it is one of that verb's (from `croq help --json`);
//  - a cpp task driven from nothing to two stored rounds by running `croq state`'s next_action
//    literally, with every suggestion croq rendered on the way (CROQ_SUGGESTION_LOG) run through
//    croq's own parser (CROQ_PARSE_ONLY=1), refusals and decide's commands included;
//  - the run_iter<NNN>.sh script croq writes for an iteration is run and measures it.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>

#include "croq/util/fs.hpp"
#include "croq/util/json.hpp"
#include "croq/util/process.hpp"
#include "croq/util/text.hpp"
#include "support/test_support.hpp"

using croq::json;
using croq::test::CroqRun;
using croq::test::run_croq;
using croq::test::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string k_key = "matmul_f32_64x64x64";
const std::string k_model = "by-hand";

std::string slurp(const fs::path& p) { return croq::read_file(p).value_or(""); }

// The verb table: name -> its options (and the global ones).
std::map<std::string, std::set<std::string>> verb_table() {
  CroqRun r = run_croq({}, {"help", "--json"});
  EXPECT_EQ(r.rc, 0) << r.err;
  std::map<std::string, std::set<std::string>> table;
  for (const auto& v : r.doc) {
    std::set<std::string> opts = {"--help", "--root", "--pretty", "--quiet", "--version"};
    for (const auto& o : v["options"]) opts.insert(o.get<std::string>());
    table[v["name"].get<std::string>()] = opts;
  }
  return table;
}

// Placeholders filled in the way a user would.
std::string fill(std::string w) {
  static const std::vector<std::pair<std::string, std::string>> subs = {
      {"<tag>", "tg"}, {"<uid>", "uid-x"}, {"<N>", "3"}, {"<file>", "f.json"}, {"<kernel>", "iter001_x"},
      {"<dsl>", "cpp"}, {"<key>", k_key}, {"<model>", "m"}, {"<KEEP|DISCARD>", "DISCARD"}};
  for (const auto& [a, b] : subs) {
    for (size_t p; (p = w.find(a)) != std::string::npos;) w.replace(p, a.size(), b);
  }
  if (w.find('<') != std::string::npos && w.back() == '>') w = "x";
  return w;
}

// The `croq ...` commands inside a text (a next_action, a hint): split at "; " and "then".
std::vector<std::string> commands_in(const std::string& text) {
  std::vector<std::string> out;
  std::regex re("(?:^|[`;(]|then |: )\\s*(croq [^`;)]*)");
  for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
    std::string c = (*it)[1].str();
    while (!c.empty() && (c.back() == ' ' || c.back() == '.' || c.back() == ',')) c.pop_back();
    out.push_back(c);
  }
  return out;
}

// Runs one suggested command through croq's parser; "" when it parses.
std::string parse_problem(const std::string& command) {
  auto words = croq::test::shell_words(command);
  if (words.empty() || words[0] != "croq") return "not a croq command: " + command;
  std::vector<std::string> args;
  for (size_t i = 1; i < words.size(); ++i) args.push_back(fill(words[i]));
  CroqRun r = run_croq(fs::temp_directory_path(), args, {{"CROQ_PARSE_ONLY", "1"}});
  if (r.rc == 0 && r.doc.value("parse_only", false)) return {};
  return command + "\n    -> exit " + std::to_string(r.rc) + ": " + r.err;
}

}  // namespace

TEST(Suggestions, EveryCroqCommandInTheSourcesAndSkillsNamesARealVerbAndItsOptions) {
  const auto table = verb_table();
  ASSERT_FALSE(table.empty());
  std::vector<fs::path> files;
  for (const char* dir : {"src/cli", "src/croq"}) {
    for (const auto& e : fs::recursive_directory_iterator(fs::path(CROQ_SOURCE_DIR) / dir)) {
      const auto ext = e.path().extension().string();
      if (ext == ".cpp" || ext == ".hpp" || ext == ".md" || ext == ".sh" || ext == ".js" || ext == ".html") files.push_back(e.path());
    }
  }
  // `croq <verb...> <args>` after a quote or backtick (a suggestion), up to where it ends.
  std::regex re("[`\"]croq ([a-z][a-z-]*)((?: [a-z][a-z-]*)?)([^`\"\\n;]*)");
  int checked = 0;
  std::string problems;
  std::set<std::string> groups;  // "checkpoint", "gpu", ...: named alone in prose
  for (const auto& [name, opts] : table) {
    if (auto sp = name.find(' '); sp != std::string::npos) groups.insert(name.substr(0, sp));
  }
  for (const auto& f : files) {
    std::string text = slurp(f);
    const auto ext = f.extension().string();
    if (ext == ".cpp" || ext == ".hpp" || ext == ".js") {
      // Comments are for developers (and name unknown verbs on purpose); only the code's strings count.
      std::string kept;
      for (const auto& line : croq::split_lines(text)) {
        const auto first = line.find_first_not_of(" \t");
        if (first != std::string::npos && line.compare(first, 2, "//") == 0) continue;
        kept += line + "\n";
      }
      text = kept;
    }
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
      std::string verb = (*it)[1].str();
      std::string second = (*it)[2].str();
      std::string rest = (*it)[3].str();
      std::string name = verb;
      if (!second.empty() && table.count(verb + second)) name = verb + second;
      else rest = second + rest;
      if (!table.count(name)) {
        // "croq writes ...", "croq never ..." are prose; a command has options.
        if (!groups.count(verb) && rest.find(" --") != std::string::npos) {
          problems += fs::relative(f, CROQ_SOURCE_DIR).string() + ": `croq " + verb + rest + "`: " + verb + " is not a verb\n";
        }
        continue;
      }
      ++checked;
      std::regex flag_re("(?:^|[ (\\[])(--[a-z][a-z0-9-]*)");
      for (std::sregex_iterator ft(rest.begin(), rest.end(), flag_re), fend; ft != fend; ++ft) {
        const std::string flag = (*ft)[1].str();
        if (!table.at(name).count(flag)) {
          problems += fs::relative(f, CROQ_SOURCE_DIR).string() + ": `croq " + name + rest + "`: " + flag +
                      " is not an option of croq " + name + "\n";
        }
      }
    }
  }
  EXPECT_TRUE(problems.empty()) << problems;
  EXPECT_GT(checked, 150) << "the scan found too few suggestions to be looking at the right files";
  std::printf("[suggestions] %d croq commands in the sources and skills checked against the verb table\n", checked);
}

TEST(Suggestions, FollowingStateLiterallyDrivesATaskAndEverySuggestionParses) {
  TempDir dir;
  const fs::path log = dir / "suggestions.jsonl";
  const std::map<std::string, std::string> env = {{"CROQ_SUGGESTION_LOG", log.string()}};
  const std::vector<std::string> task = {"--dsl", "cpp", "--shape-key", k_key, "--model", k_model};
  auto croq = [&](std::vector<std::string> args) {
    std::vector<std::string> a = args;
    a.insert(a.begin() + (args.size() > 1 && (args[0] == "checkpoint" || args[0] == "protocol") ? 2 : 1), task.begin(),
             task.end());
    return run_croq(dir.path(), a, env);
  };
  std::vector<std::string> texts;  // every next_action, hint and decide command seen
  auto collect = [&](const CroqRun& r) {
    if (!r.doc.is_object()) return;
    for (const char* k : {"next_action"}) {
      if (r.doc.contains(k) && r.doc[k].is_string()) texts.push_back(r.doc[k]);
    }
    if (r.doc.contains("error")) {
      const json& e = r.doc["error"];
      if (e.contains("hint")) texts.push_back(e.value("hint", ""));
      if (e.contains("next_action")) texts.push_back(e.value("next_action", ""));
    }
    if (r.doc.contains("next") && r.doc["next"].is_array()) {
      for (const auto& n : r.doc["next"]) texts.push_back(n.get<std::string>());
    }
  };
  // Runs a suggested command line as written (placeholders filled).
  auto run_line = [&](const std::string& line) {
    auto words = croq::test::shell_words(line);
    EXPECT_FALSE(words.empty());
    EXPECT_EQ(words[0], "croq") << line;
    std::vector<std::string> args;
    for (size_t i = 1; i < words.size(); ++i) args.push_back(fill(words[i]));
    CroqRun r = run_croq(dir.path(), args, env);
    collect(r);
    return r;
  };

  ASSERT_EQ(croq({"protocol", "begin", "--rounds", "2"}).rc, 0);
  // Mistakes a new user makes: each refusal's way out is collected.
  collect(croq({"checkpoint", "write", "--iter", "iter002", "--base", "iter001_x", "--bottleneck", "memory_bound",
                "--idea", "i", "--levers", "k_kc"}));
  collect(run_croq(dir.path(), {"measure", "--dsl", "cpp", "--shape-key", k_key, "--model", k_model, "--rerun"}, env));
  collect(run_croq(dir.path(), {"state", "--dsl", "cpp", "--shape-key", k_key, "--model", "by-hnd"}, env));

  std::map<std::string, int> steps;
  std::string last_step;
  int stored_rounds = 0;
  for (int guard = 0; guard < 40 && stored_rounds < 2; ++guard) {
    CroqRun st = croq({"state"});
    ASSERT_EQ(st.rc, 0) << st.err;
    collect(st);
    const std::string step = st.doc.value("step", "");
    const std::string next = st.doc.value("next_action", "");
    ++steps[step];
    ASSERT_LT(steps[step], 8) << "state keeps saying " << step << ": " << next;
    if (step == "SHAPE_COMPLETE") break;
    if (step == "IMPLEMENT" && next.rfind("croq next-iter", 0) == 0) {
      // next-iter; write the source; build (the middle step is the user's).
      auto cmds = commands_in(next);
      ASSERT_GE(cmds.size(), 1u) << next;
      CroqRun ni = run_line(cmds.front());
      ASSERT_EQ(ni.rc, 0) << cmds.front() << "\n" << ni.err;
      const std::string kernel = ni.doc.value("kernel", "");
      const fs::path srcs = dir / ("tuning/" + st.doc.value("task", "").substr(0, st.doc.value("task", "").find('/')) +
                                   "/cpp/srcs/" + k_key + "/" + k_model);
      std::string src = slurp(srcs / "iter001_blocked.cpp");
      ASSERT_FALSE(src.empty());
      const std::string from = "constexpr int64_t k_kc = 128;";
      src.replace(src.find(from), from.size(), stored_rounds == 0 ? "constexpr int64_t k_kc = 64;" : "constexpr int64_t k_kc = 32;");
      croq::atomic_write(srcs / (kernel + ".cpp"), src);
      continue;  // state now says: build it
    }
    std::string line = next;
    if (step == "IDEA") {
      // The plan's words are the user's: the idea, the levers, and a structural change.
      line = std::regex_replace(line, std::regex("\"<what changes and why>\""), "'halve the K panel'");
      line = std::regex_replace(line, std::regex("<macros>"), "k_kc");
      line += " --params '{\"k_kc\":" + std::string(stored_rounds == 0 ? "64" : "32") +
              "}' --structural 'memory hierarchy: the packed B panel moves into L1'";
    }
    auto cmds = commands_in(line);
    ASSERT_EQ(cmds.size(), 1u) << "one command per step: " << line;
    CroqRun r = run_line(cmds.front());
    ASSERT_TRUE(r.rc == 0) << step << ": " << cmds.front() << "\n" << r.err << r.out;
    if (r.doc.contains("record") && r.doc["record"].is_object() && r.doc["record"].value("round", 0) >= 1 &&
        r.doc["record"].value("decision", "") != "BASELINE") {
      ++stored_rounds;
    }
    last_step = step;
  }
  EXPECT_EQ(stored_rounds, 2) << "the rounds stored by following state";
  for (const char* s : {"PREPARE", "PROFILE", "IDEA", "IMPLEMENT", "VERIFY", "MEASURE", "DECIDE"}) {
    EXPECT_GT(steps[s], 0) << s << " was never the step";
  }
  // A close call's commands: decide on the last measurement names one command to run.
  // Every suggestion rendered on the way parses.
  std::set<std::string> sites, checked;
  std::string problems;
  for (const auto& line : croq::split_lines(slurp(log))) {
    auto j = croq::try_parse_json(line);
    if (!j) continue;
    sites.insert(j->value("site", ""));
    const std::string c = j->value("command", "");
    if (!checked.insert(c).second) continue;
    if (auto p = parse_problem(c); !p.empty()) problems += p + "\n";
  }
  for (const auto& t : texts) {
    for (const auto& c : commands_in(t)) {
      if (!checked.insert(c).second) continue;
      if (auto p = parse_problem(c); !p.empty()) problems += p + "\n";
    }
  }
  EXPECT_TRUE(problems.empty()) << problems;
  EXPECT_GE(sites.size(), 12u);
  std::printf("[suggestions] %zu distinct commands from %zu suggestion sites parsed\n", checked.size(), sites.size());
}

TEST(Suggestions, TheRunScriptCroqWritesMeasuresTheIteration) {
  TempDir dir;
  const std::vector<std::string> task = {"--dsl", "cpp", "--shape-key", k_key, "--model", k_model};
  auto croq = [&](std::vector<std::string> args) {
    args.insert(args.begin() + 1, task.begin(), task.end());
    return run_croq(dir.path(), args);
  };
  ASSERT_EQ(croq({"prepare", "--from", std::string(CROQ_SOURCE_DIR) + "/kernels/cpp/matmul/blocked.cpp"}).rc, 0);
  CroqRun b = croq({"build", "--iter", "iter001_blocked"});
  ASSERT_EQ(b.rc, 0) << b.err;
  fs::path script;
  for (const auto& e : fs::recursive_directory_iterator(dir / "tuning")) {
    if (e.path().filename() == "run_iter001.sh") script = e.path();
  }
  ASSERT_FALSE(script.empty());
  croq::ProcessSpec spec;
  spec.argv = {"bash", script.string(), "--time-budget-ms", "200"};
  spec.env_set = {{"CROQ", CROQ_BIN}};
  spec.env_unset = {"CROQ_ROOT", "CROQ_GPU"};
  spec.timeout = std::chrono::milliseconds(120000);
  croq::ProcessResult r = croq::process_runner().run(spec);
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  auto doc = croq::try_parse_json(r.out);
  ASSERT_TRUE(doc.has_value()) << r.out;
  EXPECT_EQ(doc->value("verdict", ""), "PASS");
}

// ---- CLI conventions (issue 23, point 4) and the task context (point 2) ----

TEST(CliConventions, HelpPerVerbUsageLinesExamplesAndRefusals) {
  CroqRun h = run_croq({}, {"help", "store-round"});
  ASSERT_EQ(h.rc, 0) << h.err;
  EXPECT_NE(h.out.find("Usage: croq store-round"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("Examples:"), std::string::npos);
  CroqRun h2 = run_croq({}, {"checkpoint", "write", "--help"});
  EXPECT_NE(h2.out.find("Usage: croq checkpoint write"), std::string::npos) << h2.out;

  // An unknown verb is refused, --help or not, with the nearest verb.
  CroqRun u = run_croq({}, {"stat", "--help"});
  EXPECT_EQ(u.rc, 2) << u.out;
  EXPECT_NE(u.err.find("did you mean `croq state`"), std::string::npos) << u.err;
  EXPECT_EQ(run_croq({}, {"help", "sweeep"}).rc, 2);

  // An unknown option: the nearest one is named.
  TempDir dir;
  CroqRun f = run_croq(dir.path(), {"measure", "--dsl", "cpp", "--shape-key", k_key, "--model", "m", "--iterr", "iter001_x"});
  EXPECT_EQ(f.rc, 2);
  EXPECT_NE(f.err.find("--iterr: did you mean --iter?"), std::string::npos) << f.err;

  // No unexplained jargon in the reference.
  CroqRun md = run_croq({}, {"help", "--markdown"});
  EXPECT_EQ(md.out.find("seeds"), std::string::npos) << "croq help --markdown says 'seeds'";
}

TEST(CliConventions, EveryVerbHasExamplesAndEachParses) {
  CroqRun r = run_croq({}, {"help", "--json"});
  ASSERT_EQ(r.rc, 0);
  std::string problems;
  int n = 0;
  for (const auto& v : r.doc) {
    const std::string name = v["name"];
    CroqRun h = run_croq({}, {"help", name});
    const auto at = h.out.find("Examples:");
    if (at == std::string::npos) {
      problems += "croq " + name + " has no examples\n";
      continue;
    }
    for (const auto& line : croq::split_lines(h.out.substr(at))) {
      auto p = line.find("croq ");
      if (p == std::string::npos || line.rfind("  croq ", 0) != 0) continue;
      std::string cmd = line.substr(p);
      if (auto c = cmd.find("  #"); c != std::string::npos) cmd = cmd.substr(0, c);
      ++n;
      if (auto why = parse_problem(cmd); !why.empty()) problems += why + "\n";
    }
  }
  EXPECT_TRUE(problems.empty()) << problems;
  EXPECT_GT(n, 40);
  std::printf("[examples] %d example command lines of %zu verbs parsed\n", n, r.doc.size());
}

TEST(TaskContext, UseAndTheTaskFolderNameTheTaskAndTyposAreRefused) {
  TempDir dir;
  const std::vector<std::string> task = {"--dsl", "cpp", "--shape-key", k_key, "--model", "me"};
  std::vector<std::string> init = {"task", "init"};
  init.insert(init.end(), task.begin(), task.end());
  ASSERT_EQ(run_croq(dir.path(), init).rc, 0);

  // Without a context, the task options are asked for.
  CroqRun none = run_croq(dir.path(), {"state"});
  EXPECT_EQ(none.rc, 2);
  EXPECT_NE(none.err.find("croq use"), std::string::npos) << none.err;

  std::vector<std::string> use = {"use"};
  use.insert(use.end(), task.begin(), task.end());
  ASSERT_EQ(run_croq(dir.path(), use).rc, 0);
  CroqRun st = run_croq(dir.path(), {"state"});
  ASSERT_EQ(st.rc, 0) << st.err;
  EXPECT_NE(st.doc.value("task", "").find("/cpp/" + k_key + "/me"), std::string::npos) << st.out;
  CroqRun shown = run_croq(dir.path(), {"use"});
  EXPECT_EQ(shown.doc.value("origin", ""), "croq use");
  // The verbs that build, measure and profile take the context too (they checked the dsl before
  // resolving it: "dsl is empty").
  for (const auto& args : std::vector<std::vector<std::string>>{{"build", "--iter", "iter001_none"},
                                                                {"measure", "--iter", "iter001_none"},
                                                                {"profile", "--iter", "iter001_none"}}) {
    CroqRun r = run_croq(dir.path(), args);
    EXPECT_EQ(r.err.find("dsl is empty"), std::string::npos) << args[0] << ": " << r.err;
    // the task the context names (here, its missing kernel)
    EXPECT_NE(r.err.find("/cpp/") , std::string::npos) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(k_key + "/me"), std::string::npos) << args[0] << ": " << r.err;
  }
  ASSERT_EQ(run_croq(dir.path(), {"use", "--clear"}).rc, 0);

  // Inside one of the task's folders, that folder names the task.
  fs::path logs;
  for (const auto& e : fs::recursive_directory_iterator(dir / "tuning")) {
    if (e.path().filename() == "task_config.json") logs = e.path().parent_path();
  }
  ASSERT_FALSE(logs.empty());
  croq::ProcessSpec spec;
  spec.argv = {CROQ_BIN, "state"};
  spec.cwd = logs;
  spec.env_unset = {"CROQ_ROOT", "CROQ_GPU"};
  croq::ProcessResult in_folder = croq::process_runner().run(spec);
  EXPECT_EQ(in_folder.exit_code, 0) << in_folder.err;
  EXPECT_NE(in_folder.out.find("\"step\":\"PREPARE\""), std::string::npos) << in_folder.out;

  // A model or key a letter away from an existing task's: refused, the existing one named; --new starts it.
  CroqRun typo = run_croq(dir.path(), {"state", "--dsl", "cpp", "--shape-key", k_key, "--model", "mee"});
  EXPECT_EQ(typo.rc, 4) << typo.out;
  EXPECT_NE(typo.err.find("--model me"), std::string::npos) << typo.err;
  CroqRun cut = run_croq(dir.path(), {"baseline", "--dsl", "cpp", "--shape-key", "matmul_f32_64x64", "--model", "me",
                                      "--task-uid", "u1"});
  EXPECT_EQ(cut.rc, 4) << cut.out;
  EXPECT_FALSE(fs::exists(dir / "tuning" / logs.parent_path().parent_path().parent_path().filename() / "cpp/logs/matmul_f32_64x64"));
  EXPECT_EQ(run_croq(dir.path(), {"state", "--dsl", "cpp", "--shape-key", k_key, "--model", "mee", "--new"}).rc, 0);
  // The same problem with its key spelt otherwise (dtype case or alias, the operator's other
  // forms) would be a task of its own: refused, the existing key named.
  const std::string dims = k_key.substr(k_key.rfind('_') + 1);
  for (const std::string& other : {"matmul_F32_" + dims, "matmul_fp32_" + dims, "gemm_f32_" + dims, "f32_" + dims}) {
    CroqRun spelt = run_croq(dir.path(), {"state", "--dsl", "cpp", "--shape-key", other, "--model", "me"});
    EXPECT_EQ(spelt.rc, 4) << other << ": " << spelt.out;
    EXPECT_NE(spelt.err.find("names the same problem"), std::string::npos) << spelt.err;
    EXPECT_NE(spelt.err.find("--shape-key " + k_key + " --model me"), std::string::npos) << spelt.err;
  }
  EXPECT_EQ(run_croq(dir.path(), {"state", "--dsl", "cpp", "--shape-key", "matmul_f16_" + dims, "--model", "me"}).rc, 0);
  // Another shape (numbers differ) or a numbered model is not a typo.
  EXPECT_EQ(run_croq(dir.path(), {"state", "--dsl", "cpp", "--shape-key", "matmul_f32_32x32x32", "--model", "me"}).rc, 0);

  // croq status lists the task (JSON through a pipe).
  CroqRun status = run_croq(dir.path(), {"status"});
  ASSERT_EQ(status.rc, 0) << status.err;
  ASSERT_EQ(status.doc["tasks"].size(), 1u) << status.out;
  EXPECT_EQ(status.doc["tasks"][0].value("step", ""), "PREPARE");
}
