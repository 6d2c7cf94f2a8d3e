// The croq-tune skill `croq init` installs, followed literally (issue 23, point 6): its commands
// are read from the installed SKILL.md in the order it gives them, only the placeholders an agent
// fills in are replaced (the task, its numbers, the values earlier commands printed), and each is
// run on the cpp backend. PREPARE and one round must complete without a refusal, iter001 must be
// round 0 (not counted against the budget), and `croq` must be reachable as the skill says.
#include <gtest/gtest.h>

#include <map>
#include <regex>

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

// The skill's commands: inline `croq ...` spans and ``` blocks (continuation lines joined).
std::vector<std::string> skill_commands(const std::string& md) {
  std::vector<std::string> out;
  std::string text;
  bool in_block = false;
  std::string block;
  for (const auto& line : croq::split_lines(md)) {
    if (line.rfind("```", 0) == 0) {
      if (in_block && block.rfind("croq ", 0) == 0) out.push_back("BLOCK:" + block);
      in_block = !in_block;
      block.clear();
      continue;
    }
    if (in_block) {
      std::string l = line;
      if (!l.empty() && l.back() == '\\') l.pop_back();
      block += (block.empty() ? "" : " ") + croq::trim(l);
      continue;
    }
    std::regex span("`(croq [^`]+)`");
    for (std::sregex_iterator it(line.begin(), line.end(), span), end; it != end; ++it) out.push_back((*it)[1].str());
  }
  return out;
}

}  // namespace

TEST(SkillLiterally, TheInstalledCroqTuneSkillRunsPrepareAndARoundWithoutARefusal) {
  TempDir dir;
  CroqRun init = run_croq(dir.path(), {"init"});
  ASSERT_EQ(init.rc, 0) << init.err;
  const std::string md = croq::read_file(dir / ".claude/skills/croq-tune/SKILL.md").value_or("");
  ASSERT_FALSE(md.empty());
  // The skill names the croq it was installed by, for when `croq` is not on PATH.
  const std::string exe = fs::canonical(CROQ_BIN).string();
  EXPECT_NE(md.find(exe), std::string::npos) << "the skill should name " << exe;
  EXPECT_NE(md.find("--round 0"), std::string::npos);
  EXPECT_NE(md.find("--pairs"), std::string::npos) << "DECIDE must say how to settle a close call";
  EXPECT_EQ(croq::read_file(dir / ".claude/skills/croq-dsl-triton/SKILL.md").value_or("").find("docs/"), std::string::npos)
      << "the triton skill points to docs that are not installed";

  const auto cmds = skill_commands(md);
  std::map<std::string, std::string> v = {{"<dsl>", "cpp"}, {"<dtype>", "f32"}, {"<M>", "64"}, {"<K>", "64"},
                                          {"<uid>", "uid-skill"}, {"<op>", "matmul"}, {"<short_tag>", "kc64"},
                                          {"<what and why>", "halve the K panel so the packed B panel stays in L1"},
                                          {"<+X TFLOPS>", "+5%"}, {"<macros/constructs touched>", "k_kc"},
                                          {"<tiling|pipeline|memory|compute|misc>", "tiling"}};
  const std::vector<std::string> task = {"--dsl", "cpp", "--shape-key", k_key, "--model", "skill"};
  // Fills the placeholders and runs one of the skill's commands as written.
  auto run = [&](std::string cmd) {
    const bool block = cmd.rfind("BLOCK:", 0) == 0;
    if (block) cmd = cmd.substr(6);
    cmd = std::regex_replace(cmd, std::regex(" \\[[^\\]]*\\]"), "");  // optional parts left out
    cmd = std::regex_replace(cmd, std::regex("--rounds <N>"), "--rounds 2");
    cmd = std::regex_replace(cmd, std::regex("--n <N>"), "--n 64");
    for (const auto& [k, val] : v) {
      for (size_t p; (p = cmd.find(k)) != std::string::npos;) cmd.replace(p, k.size(), val);
    }
    std::vector<std::string> args;
    for (const auto& w : croq::test::shell_words(cmd)) {
      if (w == "<task>") args.insert(args.end(), task.begin(), task.end());
      else args.push_back(w);
    }
    EXPECT_EQ(args.at(0), "croq");
    args.erase(args.begin());
    for (const auto& a : args) EXPECT_EQ(a.find('<'), std::string::npos) << "unfilled placeholder in: " << cmd;
    CroqRun r = run_croq(dir.path(), args);
    return std::make_pair(r, cmd);
  };
  auto find = [&](const std::string& prefix, size_t from = 0) -> std::string {
    for (size_t i = from; i < cmds.size(); ++i) {
      const std::string c = cmds[i].rfind("BLOCK:", 0) == 0 ? cmds[i].substr(6) : cmds[i];
      if (c.rfind(prefix, 0) == 0) return cmds[i];
    }
    ADD_FAILURE() << "the skill has no `" << prefix << "...` command";
    return "croq help";
  };
  auto must = [&](const std::string& prefix) {
    auto [r, cmd] = run(find(prefix));
    EXPECT_EQ(r.rc, 0) << cmd << "\n" << r.err << r.out;
    return r;
  };

  // Start or resume, then PREPARE, in the skill's order.
  must("croq resume <task> --summary");
  must("croq protocol begin <task>");
  must("croq state <task>");
  must("croq env validate");
  must("croq baseline <task>");
  CroqRun d = must("croq discover");
  for (const auto& c : d.doc.value("candidates", json::array())) {
    if (c.value("name", "").find("blocked") != std::string::npos) v["<index>"] = std::to_string(c.value("index", 0));
  }
  ASSERT_TRUE(v.count("<index>")) << d.out;
  must("croq prepare <task> --pick");
  CroqRun prep = must("croq round <task>");
  EXPECT_EQ(prep.doc["store"]["record"].value("round", -1), 0) << "iter001 is PREPARE's round 0: " << prep.out;

  // One round: PROFILE, IDEA, IMPLEMENT, VERIFY, MEASURE, DECIDE, STORE.
  v["<best kernel>"] = v["<active base kernel>"] = "iter001_blocked";
  CroqRun prof = must("croq profile <task> --iter");
  v["<from the profile>"] = v["<b>"] = prof.doc.value("bottleneck", "");
  CroqRun st = must("croq state <task>");
  v["<next iter>"] = "iter002";
  must("croq checkpoint write <task>");
  must("croq checkpoint read <task>");
  CroqRun ni = must("croq next-iter <task>");
  v["<kernel>"] = ni.doc.value("kernel", "");
  fs::path srcs;
  for (const auto& e : fs::recursive_directory_iterator(dir / "tuning")) {
    if (e.path().filename() == "iter001_blocked.cpp") srcs = e.path().parent_path();
  }
  std::string src = croq::read_file(srcs / "iter001_blocked.cpp").value_or("");
  const std::string from = "constexpr int64_t k_kc = 128;";
  ASSERT_NE(src.find(from), std::string::npos);
  src.replace(src.find(from), from.size(), "constexpr int64_t k_kc = 64;");
  croq::atomic_write(srcs / (v["<kernel>"] + ".cpp"), src);
  must("croq build <task> --iter");
  must("croq checkpoint verify <task>");
  CroqRun m = must("croq measure <task> --iter <kernel>");
  v["<file>"] = m.doc["files"].value("measurement", "");
  CroqRun dec = must("croq decide <task>");
  if (dec.doc.value("pending", false)) dec = must("croq measure <task> --iter <kernel> --pairs");
  v["<KEEP|DISCARD>"] = dec.doc.value("decision", "");
  ASSERT_TRUE(v["<KEEP|DISCARD>"] == "KEEP" || v["<KEEP|DISCARD>"] == "DISCARD") << dec.out;
  CroqRun store = must("croq store-round <task>");
  EXPECT_EQ(store.doc["record"].value("round", 0), 1) << store.out;
  EXPECT_EQ(store.doc["record"].value("bottleneck", ""), v["<b>"]) << "the plan's bottleneck is the default";
  must("croq reinforce <task>");
  CroqRun after = run_croq(dir.path(), {"state", "--dsl", "cpp", "--shape-key", k_key, "--model", "skill"});
  EXPECT_EQ(after.doc["details"]["budget"].value("completed", 0), 1) << after.out;
}
