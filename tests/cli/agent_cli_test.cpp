// croq init (skills per agent, the manifest that protects user edits, the seeds' tool shims), the
// seeds' tool invocations run as written against a cpp workspace, and croq agent run driving a
// scripted fake agent (never a real LLM) through its mistakes to the protocol's stop condition.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>

#include "croq/util/fs.hpp"
#include "croq/util/hash.hpp"
#include "support/test_support.hpp"

namespace croq::test {
namespace {

std::string slurp(const fs::path& p) { return read_file(p).value_or(""); }

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(Init, WritesTheSkillsAtEachAgentsPathAndKeepsUserEdits) {
  TempDir root;
  auto r = run_croq(root.path(), {"init", "--agent", "claude,cursor,opencode,codex"});
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* dir : {".claude/skills", ".cursor/skills", ".opencode/skills", ".agents/skills"}) {
    for (const char* skill : {"croq-tune", "croq-dsl-cuda", "croq-dsl-croqtile", "croq-dsl-triton", "croq-dsl-cpp",
                              "base-tune", "croq-tune-from-scratch"}) {
      fs::path f = root / (std::string(dir) + "/" + skill + "/SKILL.md");
      ASSERT_TRUE(fs::exists(f)) << f;
      std::string text = slurp(f);
      EXPECT_NE(text.find(std::string("name: ") + skill), std::string::npos) << f;
      EXPECT_EQ(text.find("{{"), std::string::npos) << "unrendered placeholder in " << f;
    }
  }
  // Skills refer to their own agent's folder.
  EXPECT_NE(slurp(root / ".cursor/skills/croq-tune/SKILL.md").find(".cursor/skills/croq-dsl-"), std::string::npos);
  EXPECT_TRUE(fs::exists(root / ".croq/init-manifest.json"));
  EXPECT_TRUE(fs::exists(root / ".croq/agents.json"));
  EXPECT_TRUE(fs::is_directory(root / "tuning"));

  // The user edits one skill and adds a file of their own; croq's other files are "updated" by
  // simulating an older croq (content differs, hash still the manifest's).
  fs::path edited = root / ".claude/skills/croq-tune/SKILL.md";
  put(edited, slurp(edited) + "\nOur team's note: always use model opus-4.\n");
  put(root / ".claude/skills/our-skill/SKILL.md", "mine\n");
  fs::path agents = root / ".croq/agents.json";
  put(agents, "{\"schema\":\"croq-agents-v1\",\"agents\":{\"mine\":{\"argv\":[\"true\"]}}}\n");

  auto again = run_croq(root.path(), {"init", "--agent", "claude"});
  ASSERT_EQ(again.rc, 0) << again.err;
  EXPECT_EQ(again.doc["counts"]["kept_modified"], 1);
  EXPECT_EQ(again.doc["kept_user_files"][0], ".claude/skills/croq-tune/SKILL.md");
  EXPECT_NE(slurp(edited).find("Our team's note"), std::string::npos);
  EXPECT_EQ(slurp(root / ".claude/skills/our-skill/SKILL.md"), "mine\n");
  EXPECT_NE(slurp(agents).find("\"mine\""), std::string::npos) << "the agents config is the user's once written";
  // Unedited files are unchanged; a third run still keeps the edit.
  EXPECT_EQ(again.doc["counts"]["created"], 0);
  auto third = run_croq(root.path(), {"init"});
  EXPECT_EQ(third.doc["counts"]["kept_modified"], 1);
  // --force takes the file back.
  auto forced = run_croq(root.path(), {"init", "--force"});
  EXPECT_EQ(forced.doc["counts"]["updated"], 1);
  EXPECT_EQ(slurp(edited).find("Our team's note"), std::string::npos);
  EXPECT_EQ(run_croq(root.path(), {"init", "--agent", "vim"}).rc, 2);
}

TEST(Init, UpdatesCroqsOwnFilesInPlace) {
  TempDir root;
  ASSERT_EQ(run_croq(root.path(), {"init", "--compat"}).rc, 0);
  // An older croq wrote a different text: rewrite a file and its manifest hash together.
  fs::path f = root / ".claude/skills/croq-dsl-cpp/SKILL.md";
  std::string old = "old text\n";
  put(f, old);
  std::string manifest = slurp(root / ".croq/init-manifest.json");
  auto j = json::parse(manifest);
  j["files"][".claude/skills/croq-dsl-cpp/SKILL.md"]["sha256"] = sha256_hex(old);
  put(root / ".croq/init-manifest.json", j.dump());
  auto r = run_croq(root.path(), {"init", "--compat"});
  ASSERT_EQ(r.rc, 0);
  EXPECT_EQ(r.doc["counts"]["updated"], 1);
  EXPECT_EQ(r.doc["counts"]["kept_modified"], 0);
  EXPECT_NE(slurp(f).find("name: croq-dsl-cpp"), std::string::npos);
  EXPECT_TRUE(fs::status(root / ".claude/skills/croq-tune/tools/store_round.sh").permissions() != fs::perms::none);
}

// ---- the seeds' tool invocations, as written ----

struct Invocation {
  std::string seed;
  std::string text;  // the command as the seed writes it (continuations joined)
};

// Every `bash .claude/skills/...sh` / `python3 .claude/skills/...py` command in the seed documents.
std::vector<Invocation> seed_invocations() {
  std::vector<Invocation> out;
  const fs::path seeds = fs::path(CROQ_SOURCE_DIR).parent_path() / "shared" / "seeds";
  fs::path dir = fs::exists(seeds) ? seeds : fs::path(CROQ_TEST_DATA_DIR) / "seeds";
  std::regex start(R"((bash|python3) \.claude/skills/[A-Za-z0-9_./-]+\.(sh|py))");
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".txt") continue;
    std::string text = slurp(e.path());
    for (std::sregex_iterator it(text.begin(), text.end(), start), end; it != end; ++it) {
      size_t pos = static_cast<size_t>(it->position());
      std::string cmd;
      // Join continuation lines.
      size_t p = pos;
      for (;;) {
        size_t nl = text.find('\n', p);
        std::string line = text.substr(p, nl == std::string::npos ? std::string::npos : nl - p);
        std::string t = line;
        while (!t.empty() && (t.back() == ' ' || t.back() == '\r')) t.pop_back();
        if (!t.empty() && t.back() == '\\' && nl != std::string::npos) {
          cmd += t.substr(0, t.size() - 1) + " ";
          p = nl + 1;
          while (p < text.size() && text[p] == ' ') ++p;
          continue;
        }
        cmd += t;
        break;
      }
      // Prose around inline mentions: keep the command up to the sentence's end (a parenthesised
      // example after a command, "detect_gpu.sh (e.g. sm90_H100).", is prose, not an argument).
      for (const char* cut : {" (e.g.", " first if", " then retry", ")", " automatically"}) {
        if (auto c = cmd.find(cut); c != std::string::npos && c > 0) cmd = cmd.substr(0, c);
      }
      out.push_back({e.path().filename().string(), cmd});
    }
  }
  return out;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

TEST(Compat, EverySeedToolInvocationRunsAsWrittenAgainstACppWorkspace) {
  TempDir fixture;
  const fs::path root = fixture.path();
  ASSERT_EQ(run_croq(root, {"init", "--compat"}).rc, 0);
  const std::string gpu = "cpu_x86_64", key = "matmul_f32_64x64x64", model = "m1";
  const std::vector<std::string> task = {"--gpu", gpu, "--dsl", "cpp", "--shape-key", key, "--model", model};
  auto with = [&](std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  // The state a session has reached when it calls the tools: baseline, iter001 stored, a profile
  // CSV, iter002 planned, written and built.
  ASSERT_EQ(run_croq(root, with({"baseline"}, with(task, {"--task-uid", "uid1"}))).rc, 0);
  ASSERT_EQ(run_croq(root, with({"prepare"}, with(task, {"--from", std::string(CROQ_SOURCE_DIR) + "/kernels/cpp/matmul/blocked.cpp",
                                                         "--tag", "blocked"}))).rc, 0);
  ASSERT_EQ(run_croq(root, with({"build"}, with(task, {"--iter", "iter001"}))).rc, 0);
  ASSERT_EQ(run_croq(root, with({"measure"}, with(task, {"--iter", "iter001_blocked"}))).rc, 0);
  const std::string task_dir = "tuning/" + gpu + "/cpp/";
  const std::string rel = key + "/" + model;
  ASSERT_EQ(run_croq(root, with({"store-round"}, with(task, {"--iter", "iter001", "--kernel", "iter001_blocked", "--measurement",
                                                             (root / (task_dir + "perf/" + rel + "/measure_iter001_blocked.json")).string(),
                                                             "--decision", "KEEP", "--bottleneck", "memory_bound", "--idea", "start"}))).rc, 0);
  const fs::path csv_src = fs::path(CROQ_TEST_DATA_DIR) / "ncu/h200/cublas_nvjet_f16_4096_full_raw.csv";
  for (const char* stem : {"ncu_iter001_blocked", "ncu_iter001_blocked_round1", "ncu_iter002_kc64_round1"}) {
    fs::copy_file(csv_src, root / (task_dir + "perf/" + rel + "/" + stem + ".csv"), fs::copy_options::overwrite_existing);
  }
  ASSERT_EQ(run_croq(root, with({"checkpoint", "write"}, with(task, {"--iter", "iter002", "--bottleneck", "memory_bound", "--idea",
                                                                     "halve k_kc", "--levers", "k_kc"}))).rc, 0);
  const fs::path src = root / (task_dir + "srcs/" + rel);
  std::string s1 = slurp(src / "iter001_blocked.cpp");
  put(src / "iter002_kc64.cpp", replace_all(s1, "k_kc = 128;", "k_kc = 64;"));
  // Built too: the seeds profile (ncu_profile.sh --cmd bin/.../iter<NNN>_<tag>) what build_iter.sh made.
  ASSERT_EQ(run_croq(root, with({"build"}, with(task, {"--iter", "iter002_kc64"}))).rc, 0);

  // Placeholders -> this workspace. The CPU workspace stands in for every dsl the seeds name.
  const std::vector<std::pair<std::string, std::string>> subst = {
      {"--round <N>", "--round 2"}, {"<dsl>", "cpp"}, {"--dsl croqtile", "--dsl cpp"}, {"/croqtile/", "/cpp/"},
      {"<gpu>", gpu}, {"<shape_key>", key}, {"<key>", key}, {"<model>", model}, {"<dtype>", "f32"}, {"<M>", "64"}, {"<N>", "64"},
      {"<K>", "64"}, {"<task_uid>", "uid1"}, {"<op>", "matmul"}, {"<operator>", "matmul"}, {"<kernel>", "blocked"},
      {"<planned_iter>", "iter002"}, {"<bottleneck>", "memory_bound"}, {"<one-line description>", "halve k_kc"},
      {"<+X TFLOPS estimate>", "+1 TFLOPS"}, {"<comma-separated parameter names>", "k_kc"},
      {"<short_idea_tag>", "kc32"}, {"<actual_iter_built>", "iter002_kc64"}, {"iter<NNN>_<tag>", "iter002_kc64"},
      {"iter<NNN>", "iter002"}, {"<float>", "1.5"}, {"<KEEP|DISCARD|SEGFAULT|HANG|COMPILE_FAIL>", "DISCARD"},
      {"<KEEP|DISCARD|COMPILE_FAIL|SEGFAULT|HANG>", "DISCARD"}, {"<summary>", "a summary"},
      {"<tiling|pipeline|memory|compute|misc>", "tiling"}, {"<e.g. +5% TFLOPS>", "+5%"},
      {"<current_best_iter>", "iter001_blocked"}, {"<sm_arch>", "sm_90a"}, {"<choreo flags>", "--use-warpspec"},
      {"<target_folder>", "kernels"}, {"<iter_tag>", "iter001_blocked"}, {"<iter_binary>", "iter001_blocked"},
      {"<R>", "1"}, {"<KEY>", "f16_768x768x768_fs"}, {"<DTYPE>", "f16"}, {"<pid>", "1"},
      {"[--flags \"--use-warpspec --use-prepack\"]", "--flags \"--use-warpspec --use-prepack\""},
      {"<kernel_binary> [args]", task_dir + "bin/" + rel + "/iter001_blocked"}, {"${ITER}", "iter002_kc64"},
      {"${GPU}", gpu}, {"\"$GPU\"", gpu}, {"$GPU", gpu},
      {"${NCU_BASE}", task_dir + "perf/" + rel}, {"${TAG}", "iter001_blocked"}};
  // Tools that need a GPU: without one they exit 7 (croq's no-device code) saying so. ncu_profile.sh
  // is not among them: on a cpp task `croq profile` answers with the CPU runner's timing roofline.
  const std::set<std::string> gpu_only = {"detect_gpu.sh", "cublas_baseline.sh", "gpu_check.sh", "gpu_contention.sh",
                                          "sass_compare.sh"};
  int ran = 0;
  std::set<std::string> tools;
  for (const auto& inv : seed_invocations()) {
    std::string cmd = inv.text;
    for (const auto& [from, to] : subst) cmd = replace_all(cmd, from, to);
    std::smatch m;
    std::string tool;
    if (std::regex_search(cmd, m, std::regex(R"(([a-z0-9_-]+)\.(sh|py))"))) tool = m[1].str() + "." + m[2].str();
    if (cmd.find("todo-cleanup") != std::string::npos) continue;
    tools.insert(tool);
    // Each invocation gets the fixture as it is: copy it so one call cannot disturb the next.
    TempDir ws;
    fs::copy(root, ws.path(), fs::copy_options::recursive);
    ProcessSpec spec;
    spec.argv = {"bash", "-c", cmd};
    spec.cwd = ws.path();
    spec.env_set = {{"CROQ_BIN", CROQ_BIN}, {"CROQ_ROOT", ws.path().string()},
                    {"CROQTUNER_STATE_FILE", ".claude/skills/fsm-engine/state/loop-state_from_scratch.json"}};
    spec.env_unset = {"CROQ_GPU", "CHOREO_HOME", "CUDA_VISIBLE_DEVICES"};
    spec.timeout = std::chrono::seconds(120);
    ProcessResult r = process_runner().run(spec);
    ++ran;
    const std::string where = inv.seed + ": " + cmd + "\nstdout: " + r.out + "\nstderr: " + r.err;
    ASSERT_TRUE(r.started && !r.timed_out) << where;
    const bool no_device_here = !fs::exists("/dev/nvidia0");
    if (cmd.find("--reset") != std::string::npos && tool == "gpu_check.sh") {
      // croq never resets a GPU: refused with what to do instead.
      EXPECT_EQ(r.exit_code, 2) << where;
      EXPECT_NE(r.err.find("never"), std::string::npos) << where;
      continue;
    }
    if (tool == "sass_compare.sh" && cmd.find("dump-baseline") == std::string::npos) {
      // SASS of a CPU candidate: cuobjdump is absent (7) or finds no device code (a failure with a message).
      EXPECT_NE(r.exit_code, 70) << where;
      if (r.exit_code != 0) {
        EXPECT_FALSE(r.err.empty()) << where;
      }
      continue;
    }
    if (tool == "co2cu.sh") {
      // Phase 1 of a croqtile build needs the choreo compiler, which this test unsets (CHOREO_HOME):
      // exit 7 naming what is missing, on any machine, before the path is looked at.
      EXPECT_EQ(r.exit_code, 7) << where;
      EXPECT_NE(r.err.find("choreo"), std::string::npos) << where;
      continue;
    }
    if (gpu_only.count(tool) && no_device_here) {
      if (cmd.find("|| true") != std::string::npos) {
        EXPECT_EQ(r.exit_code, 0) << where;  // the seeds' own "|| true" swallows the no-GPU exit
        continue;
      }
      // No CPU answer for these: exit 7 and a message that says a GPU is needed.
      EXPECT_EQ(r.exit_code, 7) << where;
      EXPECT_NE(r.err.find("no GPU"), std::string::npos) << where;
      continue;
    }
    if (cmd.find("--cu kernels/") != std::string::npos) {
      // base-tune's discovery builds a reference kernel outside the task: croq refuses with the
      // command that makes it an iteration.
      EXPECT_EQ(r.exit_code, 2) << where;
      EXPECT_NE(r.err.find("croq prepare --from"), std::string::npos) << where;
      continue;
    }
    if (tool == "checkpoint_write.sh" && cmd.find(" verify ") != std::string::npos) {
      EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 3) << where;  // exit 3 = drift, the seeds' contract
      continue;
    }
    EXPECT_EQ(r.exit_code, 0) << where;
    if (tool == "store_round.sh") {
      EXPECT_NE(r.err.find("[store_round] STORE complete"), std::string::npos) << where;
    }
    if (tool == "resume_state.sh") {
      auto j = try_parse_json(r.out);
      ASSERT_TRUE(j && j->is_object()) << where;
      for (const char* f : {"current_best_tflops", "current_best_kernel", "current_best_iter", "last_round", "last_iter",
                            "last_decision", "last_bottleneck", "next_iter_number", "src_count", "open_checkpoint",
                            "memory_files_ok", "warnings"}) {
        EXPECT_TRUE(j->contains(f)) << f << " missing: " << where;
      }
    }
    if (tool == "ncu_profile.sh") {
      // A cpp candidate is profiled by the CPU runner (cpu-timing) and yields a bottleneck.
      auto j = try_parse_json(r.out);
      ASSERT_TRUE(j && j->is_object()) << where;
      EXPECT_EQ((*j)["preset"], "cpu-timing") << where;
      EXPECT_TRUE((*j)["bottleneck"].is_string()) << where;
    }
    if (tool == "next_iter.sh") {
      EXPECT_TRUE(std::regex_search(r.out, std::regex("^iter[0-9]{3}_[a-z0-9_]+\n$"))) << where;
    }
  }
  EXPECT_GE(ran, 40);
  for (const char* t : {"validate_env.sh", "store_baseline.sh", "discover_baseline.sh", "checkpoint_write.sh",
                        "next_iter.sh", "store_round.sh", "reinforce.sh", "resume_state.sh", "profile_extract.sh",
                        "ncu_profile.sh", "build_iter.sh", "co2cu.sh", "sass_compare.sh", "gpu_check.sh",
                        "gpu_contention.sh", "detect_gpu.sh", "prepare_baseline_env.py", "validate_tuning_session.py",
                        "clean_kernel_work_state.py", "state-transition.sh"}) {
    EXPECT_TRUE(tools.count(t)) << "the seeds no longer invoke " << t << "?";
  }
}

TEST(Compat, CheckpointVerifyExitsThreeOnDriftAndFsmChecksFollowCroq) {
  TempDir root;
  ASSERT_EQ(run_croq(root.path(), {"init", "--compat"}).rc, 0);
  const std::string tools = (root / ".claude/skills/croq-tune/tools/").string();
  ProcessSpec spec;
  spec.cwd = root.path();
  spec.env_set = {{"CROQ_BIN", CROQ_BIN}};
  spec.argv = {"bash", tools + "checkpoint_write.sh", "verify", "--dsl", "cpp", "--shape-key", "matmul_f32_64x64x64",
               "--model", "m1", "--iter", "iter002"};
  ProcessResult r = process_runner().run(spec);
  EXPECT_EQ(r.exit_code, 4) << r.err;  // no checkpoint yet
  spec.argv = {"bash", (root / ".claude/skills/fsm-engine/scripts/state-transition.sh").string(), "INIT",
               "shape_key=matmul_f32_64x64x64", "dsl=cpp", "model=m1", "max_iteration=150"};
  r = process_runner().run(spec);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = try_parse_json(r.out);
  ASSERT_TRUE(j && j->is_object());
  EXPECT_EQ((*j)["croq"]["step"], "PREPARE");
  spec.argv = {"bash", (root / ".claude/skills/fsm-engine/scripts/pre-step-check.sh").string(), "PROFILE"};
  r = process_runner().run(spec);
  EXPECT_EQ(r.exit_code, 1) << "croq says PREPARE comes first: " << r.out;
  spec.argv = {"bash", (root / ".claude/skills/fsm-engine/scripts/pre-step-check.sh").string()};
  r = process_runner().run(spec);
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

// ---- croq agent run with a fake agent ----

void write_fake_agent_config(const fs::path& root, const std::string& extra_env = "") {
  const std::string script = std::string(CROQ_TEST_DATA_DIR) + "/agent/fake_agent.sh";
  const std::string kernel = std::string(CROQ_SOURCE_DIR) + "/kernels/cpp/matmul/blocked.cpp";
  put(root / ".croq/agents.json",
      "{\"schema\":\"croq-agents-v1\",\"default\":\"fake\",\"agents\":{\"fake\":{\"argv\":[\"bash\",\"" + script +
          "\"],\"env\":{\"FAKE_AGENT_KERNEL\":\"" + kernel + "\",\"FAKE_AGENT_PROMPT_FILE\":\"{prompt_file}\"" +
          extra_env + "}}}}\n");
}

std::string all_session_logs(const fs::path& dir) {
  std::string text;
  std::vector<fs::path> logs;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".log") logs.push_back(e.path());
  }
  std::sort(logs.begin(), logs.end());
  for (const auto& l : logs) text += slurp(l);
  return text;
}

TEST(AgentRun, FakeAgentMistakesAreRefusedAndTheSessionIsResumedUntilTheBudget) {
  TempDir root;
  write_fake_agent_config(root.path());
  const std::vector<std::string> task = {"--dsl", "cpp", "--model", "fake-1", "--task-uid", "uid-agent"};
  std::vector<std::string> args = {"agent", "run", "matmul_f32_64x64x64", "--agent", "fake", "--rounds", "3",
                                   "--max-sessions", "5", "--poll-seconds", "0.2", "--stall-seconds", "120"};
  args.insert(args.end(), task.begin(), task.end());
  auto r = run_croq(root.path(), args);
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_EQ(r.doc["rounds"], 3);
  ASSERT_EQ(r.doc["sessions"].size(), 3u) << r.out;
  EXPECT_EQ(r.doc["sessions"][0]["prompt"], "initial");
  EXPECT_EQ(r.doc["sessions"][1]["prompt"], "resume");
  EXPECT_EQ(r.doc["sessions"][2]["outcome"], "stop_condition") << "the supervisor ended the session at the budget";
  EXPECT_NE(r.doc["stop_reason"].get<std::string>().find("round budget"), std::string::npos);

  fs::path sessions;
  for (const auto& e : fs::recursive_directory_iterator(root / "tuning")) {
    if (e.path().filename() == "sessions") sessions = e.path();
  }
  ASSERT_FALSE(sessions.empty());
  const std::string logs = all_session_logs(sessions);
  EXPECT_NE(logs.find("MISTAKE skip_profile rc=5 rule=profile_before_idea"), std::string::npos) << logs;
  EXPECT_NE(logs.find("MISTAKE typed_tflops rc=5"), std::string::npos) << logs;
  EXPECT_NE(logs.find("MISTAKE repeat_idea rc=5 rule=no_repeat"), std::string::npos) << logs;
  EXPECT_NE(logs.find("STEP store3 rc=0"), std::string::npos) << logs;
  // The resume prompt carries croq resume --summary.
  bool resume_prompt = false;
  for (const auto& e : fs::directory_iterator(sessions)) {
    if (e.path().string().find("-s02.prompt.md") != std::string::npos) {
      resume_prompt = slurp(e.path()).find("croq resume --summary") != std::string::npos;
    }
  }
  EXPECT_TRUE(resume_prompt);
  EXPECT_TRUE(fs::exists(sessions / "index.jsonl"));
}

TEST(AgentRun, RateLimitsAreWaitedOutThenReportedWithExit75) {
  TempDir root;
  write_fake_agent_config(root.path(), ",\"FAKE_AGENT_RATE_LIMIT\":\"100\"");
  auto r = run_croq(root.path(), {"agent", "run", "matmul_f32_64x64x64", "--dsl", "cpp", "--model", "fake-2",
                                  "--rate-limit-wait", "0.01", "--rate-limit-retries", "2", "--poll-seconds", "0.2"});
  EXPECT_EQ(r.rc, 75) << r.err;
  ASSERT_EQ(r.doc["sessions"].size(), 3u);
  for (const auto& s : r.doc["sessions"]) EXPECT_EQ(s["outcome"], "rate_limited");
}

TEST(AgentRun, AStalledSessionIsStoppedAndAnUnknownAgentIsRefused) {
  TempDir root;
  put(root / ".croq/agents.json",
      "{\"schema\":\"croq-agents-v1\",\"agents\":{\"sleepy\":{\"argv\":[\"sleep\",\"60\"]}}}\n");
  auto r = run_croq(root.path(), {"agent", "run", "matmul_f32_64x64x64", "--dsl", "cpp", "--model", "fake-3",
                                  "--agent", "sleepy", "--max-sessions", "1", "--stall-seconds", "0.5",
                                  "--poll-seconds", "0.1"});
  EXPECT_EQ(r.rc, 1) << r.err;
  ASSERT_EQ(r.doc["sessions"].size(), 1u);
  EXPECT_EQ(r.doc["sessions"][0]["outcome"], "stalled");
  EXPECT_EQ(run_croq(root.path(), {"agent", "run", "matmul_f32_64x64x64", "--dsl", "cpp", "--model", "m",
                                   "--agent", "nope"}).rc, 2);
}

// croq sweep with --driver agent: each shape of the manifest gets `croq agent run`, whose supervisor
// resumes the (fake) agent's sessions until the shape's round budget; two fake devices, one agent
// session per device at a time. The fake agent exits early twice per shape (sessions 1 and 2), so
// every shape is finished by resumed sessions.
TEST(AgentRun, ASweepDrivesEachShapeWithAnAgentUntilItsBudget) {
  TempDir dir;
  const fs::path ws = dir / "ws";
  fs::create_directories(ws / "tuning");
  write_fake_agent_config(ws);
  put(dir / "manifest.json",
      "{\"schema\":\"croq-sweep-manifest-v1\",\"operator\":\"matmul\",\"dtypes\":[\"f32\"],"
      "\"shapes\":[[64,64,64],[72,64,64]]}\n");
  const std::map<std::string, std::string> env = {{"CROQ_SWEEP_FAKE_DEVICES", "2"},
                                                  {"CROQ_LEASE_DIR", (dir / "leases").string()}};
  auto r = run_croq(ws, {"sweep", "run", "--manifest", (dir / "manifest.json").string(), "--dsl", "cpp", "--gpu",
                         "cpu_test", "--rounds", "3", "--driver", "agent", "--agent", "fake", "--model", "fake-sweep"},
                    env, {}, std::chrono::milliseconds(300000));
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_EQ(r.doc.value("done", 0), 2) << r.out;
  std::set<std::string> launched;
  std::ifstream log(ws / "tuning" / "sweep-log.jsonl");
  for (std::string line; std::getline(log, line);) {
    auto ev = try_parse_json(line);
    if (ev && ev->value("event", "") == "launch") {
      EXPECT_EQ(ev->value("driver", ""), "agent") << line;
      launched.insert(ev->value("key", ""));
    }
  }
  EXPECT_EQ(launched, (std::set<std::string>{"matmul_f32_64x64x64_fs", "matmul_f32_72x64x64_fs"}));
  for (const std::string key : {"matmul_f32_64x64x64_fs", "matmul_f32_72x64x64_fs"}) {
    SCOPED_TRACE(key);
    fs::path ledger_file, sessions;
    for (const auto& e : fs::recursive_directory_iterator(ws / "tuning")) {
      if (e.path().string().find("/" + key + "/") == std::string::npos) continue;
      if (e.path().filename() == "idea-log.jsonl") ledger_file = e.path();
      if (e.path().filename() == "sessions") sessions = e.path();
    }
    ASSERT_FALSE(ledger_file.empty());
    ASSERT_FALSE(sessions.empty());
    const std::string ledger = slurp(ledger_file);
    EXPECT_NE(ledger.find("\"round\":3"), std::string::npos) << ledger;
    EXPECT_EQ(ledger.find("\"round\":4"), std::string::npos) << ledger;
    // Three sessions: the first, then two resumes after the agent exited below the budget.
    const std::string logs = all_session_logs(sessions);
    EXPECT_NE(logs.find("fake agent: session 3"), std::string::npos) << logs;
    EXPECT_NE(logs.find("STEP store3 rc=0"), std::string::npos) << logs;
  }
  auto st = run_croq(ws, {"sweep", "status"}, env);
  ASSERT_EQ(st.rc, 0) << st.err;
  EXPECT_EQ(st.doc["counts"].value("done", 0), 2) << st.out;
}

}  // namespace
}  // namespace croq::test
