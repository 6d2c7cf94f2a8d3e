// Task specs (validated field by field, argument vectors never shells) and the access rules
// (loopback unless told otherwise, tokens, Host names).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/web/auth.hpp"
#include "croq/web/task_spec.hpp"
#include "support/test_support.hpp"

using namespace croq;
using namespace croq::web;
using croq::test::TempDir;

namespace {

json base_spec() {
  return {{"gpu", "cpu_x86_64"}, {"dsl", "cpp"}, {"shape_key", "matmul_f32_64x64x64"}, {"model", "m"}};
}

ExitCode code_of(const json& j) {
  try {
    TaskSpec::from_json(j);
  } catch (const Error& e) {
    return e.code();
  }
  return ExitCode::ok;
}

}  // namespace

TEST(WebTaskSpec, DefaultsFollowTheDsl) {
  TaskSpec s = TaskSpec::from_json(base_spec());
  EXPECT_EQ(s.device, "cpu");
  EXPECT_EQ(s.mode, "from_scratch");
  EXPECT_EQ(s.driver.kind, "none");
  EXPECT_EQ(s.budgets.max_restarts, 3);
  json cuda = base_spec();
  cuda["dsl"] = "cuda";
  cuda["gpu"] = "sm90_NVIDIA_H200";
  EXPECT_EQ(TaskSpec::from_json(cuda).device, "0");
  // The round trip keeps everything.
  json full = base_spec();
  full["driver"] = {{"kind", "command"}, {"argv", {"bash", "x.sh"}}, {"env", {{"A", "1"}}}};
  full["budgets"] = {{"rounds", 5}, {"seconds", 60}};
  TaskSpec t = TaskSpec::from_json(full);
  EXPECT_EQ(TaskSpec::from_json(t.to_json()).to_json(), t.to_json());
}

TEST(WebTaskSpec, EveryBadFieldIsRefusedByName) {
  auto with = [](const char* k, json v) {
    json j = base_spec();
    j[k] = v;
    return j;
  };
  EXPECT_EQ(code_of(with("surprise", 1)), ExitCode::usage);
  EXPECT_EQ(code_of(with("model", "../etc")), ExitCode::usage);
  EXPECT_EQ(code_of(with("shape_key", "not a key")), ExitCode::usage);
  EXPECT_EQ(code_of(with("device", "0; rm -rf /")), ExitCode::usage);
  EXPECT_EQ(code_of(with("driver", {{"argv", "rm -rf /"}})), ExitCode::usage);
  EXPECT_EQ(code_of(with("driver", {{"kind", "command"}})), ExitCode::usage);
  EXPECT_EQ(code_of(with("driver", {{"argv", {"a", 5}}})), ExitCode::usage);
  EXPECT_EQ(code_of(with("driver", {{"argv", {"a"}}, {"cwd", "../outside"}})), ExitCode::usage);
  EXPECT_EQ(code_of(with("driver", {{"argv", {"a"}}, {"cwd", "/etc"}})), ExitCode::usage);
  EXPECT_EQ(code_of(with("driver", {{"argv", {"a"}}, {"env", {{"BAD NAME", "x"}}}})), ExitCode::usage);
  EXPECT_EQ(code_of(with("driver", {{"kind", "shell"}, {"argv", {"a"}}})), ExitCode::usage);
  EXPECT_EQ(code_of(with("budgets", {{"rounds", -1}})), ExitCode::usage);
  EXPECT_EQ(code_of(with("budgets", {{"forever", 1}})), ExitCode::usage);
  EXPECT_EQ(code_of(with("restart_on_exit", "yes")), ExitCode::usage);
  json no_gpu = base_spec();
  no_gpu.erase("gpu");
  EXPECT_EQ(code_of(no_gpu), ExitCode::usage);
  EXPECT_EQ(code_of(json::array()), ExitCode::usage);
}

TEST(WebTaskSpec, PlaceholdersAreExpandedInsideEachArgumentOnly) {
  json j = base_spec();
  j["driver"] = {{"argv", {"run", "{shape_key}", "--uid={task_uid}", "{unknown}", "$(whoami)", "a b"}}};
  TaskSpec s = TaskSpec::from_json(j);
  auto argv = expand_argv(s, {"/usr/bin/croq", "/ws", "abc123"});
  EXPECT_EQ(argv, (std::vector<std::string>{"run", "matmul_f32_64x64x64", "--uid=abc123", "{unknown}", "$(whoami)", "a b"}));
}

TEST(WebTaskSpec, TuneDriverRunsCroqsSearchForTheTask) {
  json j = base_spec();
  j["driver"] = {{"kind", "tune"}, {"argv", {"--seed", "7"}}};
  j["budgets"] = {{"rounds", 150}};
  auto argv = expand_argv(TaskSpec::from_json(j), {"/usr/bin/croq", "/ws", "abc123"});
  EXPECT_EQ(argv, (std::vector<std::string>{"/usr/bin/croq", "--root", "/ws", "tune", "matmul_f32_64x64x64", "--dsl",
                                            "cpp", "--gpu", "cpu_x86_64", "--model", "m", "--task-uid", "abc123",
                                            "--rounds", "150", "--seed", "7"}));
  json gpu = j;
  gpu["dsl"] = "cuda";
  gpu["gpu"] = "sm90_NVIDIA_H200";
  gpu["device"] = "3";
  auto env = child_env(TaskSpec::from_json(gpu), {"/usr/bin/croq", "/ws", "abc123"}, 2);
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "3");
  EXPECT_EQ(env.at("CROQ_RUN"), "2");
  EXPECT_EQ(env.at("CROQ_BUDGET_ROUNDS"), "150");
}

TEST(WebAuth, BindAddressesAndLoopback) {
  EXPECT_TRUE(parse_bind("127.0.0.1:8642").loopback);
  EXPECT_TRUE(parse_bind("localhost:1").loopback);
  EXPECT_TRUE(parse_bind("[::1]:8642").loopback);
  EXPECT_TRUE(parse_bind("127.5.6.7:0").loopback);
  EXPECT_EQ(parse_bind("9000").text(), "127.0.0.1:9000");
  EXPECT_FALSE(parse_bind("0.0.0.0:8642").loopback);
  EXPECT_FALSE(parse_bind("[::]:8642").loopback);
  EXPECT_FALSE(parse_bind("monitor.example.org:80").loopback);
  for (const char* bad : {"", "host:", ":80", "a:b", "1.2.3.4:99999", "::1:80", "h o s t:1", "x;y:1"}) {
    EXPECT_THROW(parse_bind(bad), Error) << bad;
  }
}

TEST(WebAuth, OnlyLoopbackGoesWithoutAToken) {
  AuthConfig local = make_auth(parse_bind("127.0.0.1:0"), "");
  EXPECT_FALSE(local.required);
  AuthConfig open = make_auth(parse_bind("0.0.0.0:0"), "");
  EXPECT_TRUE(open.required);
  EXPECT_EQ(open.token.size(), 64u);
  EXPECT_NE(open.token, make_auth(parse_bind("0.0.0.0:0"), "").token);
  TempDir dir;
  atomic_write(dir / "t", "  s3cret-token-of-some-length\n");
  ::chmod((dir / "t").c_str(), 0600);
  AuthConfig file = make_auth(parse_bind("127.0.0.1:0"), (dir / "t").string());
  EXPECT_TRUE(file.required);
  EXPECT_EQ(file.token, "s3cret-token-of-some-length");
  atomic_write(dir / "short", "abc");
  ::chmod((dir / "short").c_str(), 0600);
  EXPECT_THROW(make_auth(parse_bind("127.0.0.1:0"), (dir / "short").string()), Error);
  EXPECT_THROW(make_auth(parse_bind("127.0.0.1:0"), (dir / "missing").string()), Error);
}

TEST(WebAuth, TokensCompareWhole) {
  EXPECT_TRUE(tokens_equal("abcdef", "abcdef"));
  EXPECT_FALSE(tokens_equal("abcdef", "abcdeg"));
  EXPECT_FALSE(tokens_equal("abc", "abcdef"));
  EXPECT_FALSE(tokens_equal("", ""));
  EXPECT_EQ(host_of_header("localhost:8642"), "localhost");
  EXPECT_EQ(host_of_header("[::1]:8642"), "::1");
  EXPECT_EQ(host_of_header("example.org"), "example.org");
}
