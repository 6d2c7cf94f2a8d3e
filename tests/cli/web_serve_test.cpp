// croq serve and croq report as a user runs them: --check and --once against the disk, one server
// per database, tokens for non-loopback binds, the kill -9 restart (children adopted, database in
// step with the ledgers, no task lost), and the report folder.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <algorithm>

#include "croq/measure/elf_scan.hpp"
#include "croq/util/fs.hpp"
#include "croq/web/task_spec.hpp"
#include "support/test_support.hpp"
#include "support/web_support.hpp"

using namespace croq;
using croq::test::run_croq;
using croq::test::ServeProcess;
using croq::test::slurp;
using croq::test::TempDir;
using croq::test::wait_for;

namespace {

const TaskRef k_task = make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "search");

// A GET that sends the tests' token (a server without one ignores it).
json get_json(int port, const std::string& path, const httplib::Headers& h = {}) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(10, 0);
  if (h.find("Authorization") == h.end()) c.set_bearer_token_auth(test::k_test_token);
  auto r = c.Get(path, h);
  if (!r) return nullptr;
  auto j = try_parse_json(r->body);
  return j ? *j : json(nullptr);
}

std::string copy_driver(const TempDir& dir) {
  std::filesystem::copy_file(std::string(CROQ_TEST_DATA_DIR) + "/web/drive.sh", dir / "drive.sh");
  return "drive.sh";
}

}  // namespace

TEST(WebServeCli, CheckComparesTheDatabaseWithTheLedgers) {
  TempDir dir;
  Workspace ws(dir.path());
  test::store_rounds(ws, k_task, {110, 120});
  auto none = run_croq(dir.path(), {"serve", "--check"});
  EXPECT_EQ(none.rc, 4) << none.err;  // no database yet
  auto once = run_croq(dir.path(), {"serve", "--once"});
  ASSERT_EQ(once.rc, 0) << once.err;
  EXPECT_EQ(once.doc["tasks_adopted"], 1);
  EXPECT_EQ(once.doc["rounds_added"], 3);
  auto clean = run_croq(dir.path(), {"serve", "--check"});
  EXPECT_EQ(clean.rc, 0) << clean.out;
  EXPECT_EQ(clean.doc["clean"], true);
  EXPECT_EQ(clean.doc["rounds_in_db"], 3);
  // A task the server has not seen yet.
  test::store_rounds(ws, make_task("cpu_x86_64", "cpp", "matmul_f32_32x32x32", "search"), {90});
  auto diff = run_croq(dir.path(), {"serve", "--check"});
  EXPECT_EQ(diff.rc, 1);
  EXPECT_EQ(diff.doc["differences"][0]["kind"], "missing_in_db");
  EXPECT_NE(diff.err.find("missing_in_db"), std::string::npos);
  // Indexing again adopts it without duplicating the first.
  ASSERT_EQ(run_croq(dir.path(), {"serve", "--once"}).rc, 0);
  auto again = run_croq(dir.path(), {"serve", "--check"});
  EXPECT_EQ(again.rc, 0);
  EXPECT_EQ(again.doc["tasks_in_db"], 2);
}

TEST(WebServeCli, OneServerPerDatabase) {
  TempDir dir;
  ServeProcess a(dir.path(), dir.path(), {}, "a");
  ASSERT_TRUE(a.wait_ready()) << a.err();
  EXPECT_EQ(a.doc()["auth"], "none");
  auto b = run_croq(dir.path(), {"serve", "--bind", "127.0.0.1:0"});
  EXPECT_EQ(b.rc, 6);
  EXPECT_NE(b.err.find("another croq serve"), std::string::npos) << b.err;
}

TEST(WebServeCli, AnyOtherAddressThanLoopbackNeedsAToken) {
  TempDir dir;
  ServeProcess s(dir.path(), dir.path(), {"--bind", "0.0.0.0:0"});
  ASSERT_TRUE(s.wait_ready()) << s.err();
  EXPECT_EQ(s.doc()["auth"], "token");
  // The token line follows the startup document (stdout first, then stderr): wait for it.
  const std::string marker = "access token (shown once; keep it): ";
  wait_for([&] { return s.err().find(marker) != std::string::npos; }, std::chrono::seconds(10));
  std::string err = s.err();
  auto pos = err.find(marker);
  ASSERT_NE(pos, std::string::npos) << err;
  std::string token = err.substr(pos + 36, 64);
  EXPECT_EQ(get_json(s.port(), "/api/v1/tasks")["error"]["code"], "unauthorized");
  EXPECT_EQ(get_json(s.port(), "/api/v1/tasks", {{"Authorization", "Bearer " + token}})["ok"], true);
  EXPECT_EQ(s.out().find(token), std::string::npos);  // not in the JSON document (logs keep stdout)
}

TEST(WebServeCli, TokenFileMustBeReadableOnlyByItsOwner) {
  TempDir dir;
  atomic_write(dir / "token", "0123456789abcdef0123456789abcdef\n");
  ::chmod((dir / "token").c_str(), 0644);
  auto r = run_croq(dir.path(), {"serve", "--bind", "127.0.0.1:0", "--token-file", (dir / "token").string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("chmod 600"), std::string::npos) << r.err;
  auto bad_bind = run_croq(dir.path(), {"serve", "--bind", "localhost:http"});
  EXPECT_EQ(bad_bind.rc, 2);
}

TEST(WebServeCli, KillNineMidRunLosesNothingAndTheNextServerAdoptsTheChild) {
  TempDir dir;
  std::string script = copy_driver(dir);
  const std::string token_file = test::write_token_file(dir.path());
  const int n = 30;
  std::string uid;
  int child_pid = 0;
  {
    ServeProcess s(dir.path(), dir.path(), {"--poll-ms", "100", "--scan-every", "2", "--token-file", token_file},
                   "first");
    ASSERT_TRUE(s.wait_ready()) << s.err();
    httplib::Client c("127.0.0.1", s.port());
    c.set_bearer_token_auth(test::k_test_token);
    json spec = {{"gpu", "cpu_x86_64"},
                 {"dsl", "cpp"},
                 {"shape_key", "matmul_f32_64x64x64"},
                 {"model", "driver"},
                 {"driver", {{"kind", "command"}, {"argv", {"bash", script, std::to_string(n), "0.25"}}}},
                 {"budgets", {{"rounds", n + 10}}}};  // the driver ends first, by itself
    auto created = c.Post("/api/v1/tasks", dump_compact(spec), "application/json");
    ASSERT_TRUE(created);
    ASSERT_EQ(created->status, 201) << created->body;
    uid = try_parse_json(created->body)->at("task")["uid"];
    ASSERT_TRUE(wait_for([&] {
      json t = get_json(s.port(), "/api/v1/tasks/" + uid);
      return t["task"]["stats"].value("rounds", 0) >= 5;
    })) << s.err();
    child_pid = get_json(s.port(), "/api/v1/tasks/" + uid)["task"]["pid"];
    s.kill(SIGKILL);
    EXPECT_EQ(s.wait(), 128 + SIGKILL);
  }
  // The child outlives the server.
  ASSERT_GT(child_pid, 0);
  EXPECT_EQ(::kill(child_pid, 0), 0);
  Workspace ws(dir.path());
  TaskRef t = make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "driver");
  size_t on_disk_at_kill = Ledger(ws, t).read_all().records.size();
  EXPECT_LT(on_disk_at_kill, static_cast<size_t>(n + 1));  // it was still running

  ServeProcess s(dir.path(), dir.path(), {"--poll-ms", "100", "--scan-every", "2", "--token-file", token_file}, "second");
  ASSERT_TRUE(s.wait_ready()) << s.err();
  EXPECT_EQ(s.doc()["adopted"], 0);  // the database knew the task: not adopted again
  json t1 = get_json(s.port(), "/api/v1/tasks/" + uid);
  EXPECT_EQ(t1["task"]["state"], "running");
  EXPECT_EQ(t1["task"]["pid"], child_pid);
  bool adopted = false;
  for (const auto& h : t1["history"]) adopted = adopted || h["kind"] == "adopted_child";
  EXPECT_TRUE(adopted) << t1.dump();
  ASSERT_TRUE(wait_for([&] { return get_json(s.port(), "/api/v1/tasks/" + uid)["task"]["state"] == "done"; },
                       std::chrono::seconds(90)))
      << get_json(s.port(), "/api/v1/tasks/" + uid).dump() << s.err();
  json tasks = get_json(s.port(), "/api/v1/tasks");
  EXPECT_EQ(tasks["tasks"].size(), 1u);
  json done = get_json(s.port(), "/api/v1/tasks/" + uid)["task"];
  EXPECT_EQ(done["runs"], 1);  // adopted, never started twice
  // The database matches the ledger once the last records are indexed.
  test::CroqRun check;
  ASSERT_TRUE(wait_for([&] {
    check = run_croq(dir.path(), {"serve", "--check"});
    return check.rc == 0 && check.doc["pending"].empty();
  })) << check.out;
  EXPECT_EQ(check.doc["rounds_on_disk"], Ledger(ws, t).read_all().records.size());
  EXPECT_EQ(check.doc["rounds_in_db"], check.doc["rounds_on_disk"]);
  EXPECT_GE(check.doc["rounds_on_disk"].get<int>(), n);
  std::string log = slurp(web::run_log_path(ws, t, 1));
  EXPECT_NE(log.find("done: " + std::to_string(n) + " rounds"), std::string::npos) << log;
}

TEST(WebServeCli, ReportWritesAStaticFolder) {
  TempDir dir;
  Workspace ws(dir.path());
  test::store_rounds(ws, k_task, {110, 0, 130});
  auto r = run_croq(dir.path(), {"report", "--all", "--out", (dir / "report").string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.doc["tasks"], 1);
  EXPECT_TRUE(std::filesystem::exists(dir / "report/index.html"));
  EXPECT_TRUE(std::filesystem::exists(dir / "report/summary.csv"));
  auto missing = run_croq(dir.path(), {"report", "--task", "nope", "--out", (dir / "r2").string()});
  EXPECT_EQ(missing.rc, 4);
}

// The verbs an agent calls in a loop start without the monitor's libraries: croq's own executable
// needs none of them (read from its ELF dynamic section), and croq serve / croq report reach the
// monitor in croq-web beside it with the same command line.
TEST(WebServeCli, TheVerbExecutableLeavesTheMonitorsLibrariesToCroqWeb) {
  PurityReport croq_elf = scan_candidate(CROQ_BIN);
  ASSERT_TRUE(croq_elf.is_elf) << croq_elf.error;
  for (const auto& lib : croq_elf.needed) {
    for (const char* web : {"sqlite", "httplib", "libssl", "brotli", "libz."}) {
      EXPECT_EQ(lib.find(web), std::string::npos) << "croq needs " << lib;
    }
  }
  const std::filesystem::path web = std::filesystem::path(CROQ_BIN).parent_path() / "croq-web";
  PurityReport web_elf = scan_candidate(web);
  ASSERT_TRUE(web_elf.is_elf) << web_elf.error;
  EXPECT_TRUE(std::any_of(web_elf.needed.begin(), web_elf.needed.end(),
                          [](const std::string& l) { return l.find("sqlite") != std::string::npos; }));
  // serve --help is croq's own (same verb table); serve --once runs in croq-web.
  TempDir dir;
  auto help = run_croq(dir.path(), {"serve", "--help"});
  EXPECT_EQ(help.rc, 0);
  EXPECT_NE(help.out.find("--bind"), std::string::npos);
  auto once = run_croq(dir.path(), {"serve", "--once", "--db", (dir / "m.db").string()});
  ASSERT_EQ(once.rc, 0) << once.out << once.err;
  EXPECT_EQ(once.doc.value("ok", false), true) << once.out;
  EXPECT_TRUE(std::filesystem::exists(dir / "m.db"));
}
