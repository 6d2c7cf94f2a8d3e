// The HTTP side, in process on a free loopback port: pages and API, 4xx for bad requests (never a
// crash), the token on every request (and for every change, on loopback too), loopback Host and
// same-origin checks (GETs included, X-Forwarded-Host never trusted), no file outside the task's
// folders (symlinks and hard links), escaped text, and the event stream.
#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "croq/gpu/lease.hpp"
#include "croq/util/fs.hpp"
#include "croq/web/http_server.hpp"
#include "croq/web/monitor.hpp"
#include "support/test_support.hpp"
#include "support/web_support.hpp"

using namespace croq;
using namespace croq::web;
using croq::test::TempDir;

namespace {

struct Server {
  TempDir dir;
  Workspace ws{dir.path()};
  std::unique_ptr<Database> db = open_database((dir / ".croq/monitor.db").string());
  test::FakeLauncher launcher;
  std::unique_ptr<Monitor> monitor;
  std::unique_ptr<HttpServer> http;
  std::thread thread;
  int port = 0;
  TaskRef task = make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "search");
  std::string uid;

  static constexpr const char* k_token = "0123456789abcdef0123456789abcdef";
  std::string token;

  // With a token by default (changes need one); an empty one: an open loopback monitor.
  explicit Server(const std::string& token_ = k_token, size_t max_body = 4096) : token(token_) {
    test::store_rounds(ws, task, {110, 120});
    MonitorOptions mo;
    mo.query_gpus = false;
    mo.scheduler.croq_exe = "/bin/true";
    monitor = std::make_unique<Monitor>(ws, *db, launcher, mo);
    monitor->initial_sync();
    uid = db->tasks().at(0).uid;
    HttpOptions ho;
    ho.bind = parse_bind("127.0.0.1:0");
    ho.max_body_bytes = max_body;
    if (!token.empty()) {
      ho.auth.required = true;
      ho.auth.token = token;
    }
    http = std::make_unique<HttpServer>(*monitor, ho);
    port = http->bind();
    thread = std::thread([this] { http->run(); });
  }
  ~Server() {
    monitor->bus().close();
    http->stop();
    thread.join();
  }
  // A client that sends the token (when the server has one and `with_token`).
  httplib::Client client(bool with_token = true) const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(10, 0);
    if (with_token && !token.empty()) c.set_bearer_token_auth(token.c_str());
    return c;
  }
};

json body_json(const httplib::Result& r) {
  if (!r) return nullptr;
  auto j = try_parse_json(r->body);
  return j ? *j : json(nullptr);
}

}  // namespace

TEST(WebHttp, PagesAndApiShowTheIndexedTasks) {
  Server s;
  auto c = s.client();
  auto list = c.Get("/");
  ASSERT_TRUE(list);
  EXPECT_EQ(list->status, 200);
  EXPECT_NE(list->body.find("href=\"/tasks/" + s.uid + "\""), std::string::npos);
  EXPECT_NE(list->body.find("64x64x64"), std::string::npos);
  EXPECT_NE(list->get_header_value("Content-Security-Policy").find("script-src 'self'"), std::string::npos);
  auto page = c.Get("/tasks/" + s.uid);
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("id=\"convergence-svg\""), std::string::npos);
  EXPECT_NE(page->body.find("id=\"rounds\""), std::string::npos);
  auto api = c.Get("/api/v1/tasks");
  json j = body_json(api);
  ASSERT_EQ(j["tasks"].size(), 1u);
  EXPECT_EQ(j["tasks"][0]["uid"], s.uid);
  EXPECT_EQ(j["tasks"][0]["stats"]["best_tflops"], 120.0);
  json rounds = body_json(c.Get("/api/v1/tasks/" + s.uid + "/rounds?decision=KEEP"));
  EXPECT_EQ(rounds["rounds"].size(), 2u);
  auto svg = c.Get("/api/v1/tasks/" + s.uid + "/charts/convergence.svg");
  ASSERT_TRUE(svg);
  EXPECT_EQ(svg->get_header_value("Content-Type"), "image/svg+xml");
  auto css = c.Get("/static/app.css");
  ASSERT_TRUE(css);
  EXPECT_EQ(css->status, 200);
  EXPECT_NE(css->body.find("--accent"), std::string::npos);
  for (const char* p : {"/add", "/system", "/api/v1/system", "/api/v1/check", "/fragments/tasks"}) {
    auto r = c.Get(p);
    ASSERT_TRUE(r) << p;
    EXPECT_EQ(r->status, 200) << p << r->body;
  }
}

// The figures here are typed (store-round --tflops: source reported): the task list and the task's
// page mark them and the ratio built on them, as `croq status` does (before, they showed as any
// measurement).
TEST(WebHttp, TypedFiguresAreMarkedAsReported) {
  Server s;
  auto c = s.client();
  auto list = c.Get("/");
  ASSERT_TRUE(list);
  EXPECT_NE(list->body.find("120.0 <span class=\"warn small\""), std::string::npos) << list->body;
  auto page = c.Get("/tasks/" + s.uid);
  ASSERT_TRUE(page);
  size_t marks = 0;
  for (size_t at = page->body.find(">(reported)<"); at != std::string::npos; at = page->body.find(">(reported)<", at + 1)) {
    ++marks;
  }
  EXPECT_EQ(marks, 3u) << page->body;  // the best, the baseline and the ratio
}

TEST(WebHttp, BadRequestsGetA4xxWithAMessage) {
  Server s;
  auto c = s.client();
  auto bad_json = c.Post("/api/v1/tasks", "{not json", "application/json");
  ASSERT_TRUE(bad_json);
  EXPECT_EQ(bad_json->status, 400);
  EXPECT_NE(body_json(bad_json)["error"]["message"].get<std::string>().find("not valid JSON"), std::string::npos);
  auto wrong_type = c.Post("/api/v1/tasks", R"({"dsl": 5})", "application/json");
  EXPECT_EQ(wrong_type->status, 400);
  auto unknown_field = c.Post("/api/v1/tasks", R"({"dsl":"cpp","shape_key":"matmul_f32_8x8x8","model":"a","rm":"-rf"})",
                              "application/json");
  EXPECT_EQ(unknown_field->status, 400);
  auto shell = c.Post("/api/v1/tasks",
                      R"({"dsl":"cpp","gpu":"cpu_x86_64","shape_key":"matmul_f32_8x8x8","model":"a","driver":{"argv":"rm -rf /"}})",
                      "application/json");
  EXPECT_EQ(shell->status, 400);  // a string is not an argument vector
  auto array = c.Post("/api/v1/tasks", "[1,2]", "application/json");
  EXPECT_EQ(array->status, 400);
  auto big = c.Post("/api/v1/tasks", std::string(10000, ' '), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  auto nothing = c.Get("/api/v1/nothing");
  EXPECT_EQ(nothing->status, 404);
  EXPECT_EQ(body_json(nothing)["error"]["code"], "not_found");
  auto no_task = c.Get("/api/v1/tasks/abcdef123456");
  EXPECT_EQ(no_task->status, 404);
  auto bad_param = c.Get("/api/v1/tasks/" + s.uid + "/rounds?limit=banana");
  EXPECT_EQ(bad_param->status, 400);
  auto not_json = c.Post("/api/v1/tasks", "dsl=cpp", "application/x-www-form-urlencoded");
  EXPECT_EQ(not_json->status, 415);
  // And the server is still there.
  EXPECT_EQ(c.Get("/api/v1/health")->status, 200);
}

TEST(WebHttp, CrossOriginChangesAndForeignHostsAreRefused) {
  Server s;
  auto c = s.client();
  httplib::Headers evil = {{"Origin", "http://evil.example"}};
  auto r = c.Post("/api/v1/tasks/" + s.uid + "/pause", evil, "{}", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  httplib::Headers same = {{"Origin", "http://127.0.0.1:" + std::to_string(s.port)}};
  auto ok = c.Post("/api/v1/tasks/" + s.uid + "/pause", same, "{}", "application/json");
  EXPECT_EQ(ok->status, 409);  // reached the handler: an external task cannot be paused
  // X-Forwarded-Host is the client's word: it never makes a foreign origin the server's own.
  httplib::Headers forged = {{"Origin", "http://evil.example"}, {"X-Forwarded-Host", "evil.example"}};
  EXPECT_EQ(c.Post("/api/v1/tasks/" + s.uid + "/pause", forged, "{}", "application/json")->status, 403);
  // Reading views with a foreign Origin (a page elsewhere fetching them) is refused too.
  for (const char* path : {"/api/v1/tasks", "/api/v1/health", "/", "/api/v1/events"}) {
    auto r = c.Get(path, forged);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 403) << path;
    EXPECT_EQ(r->body.find(s.uid), std::string::npos) << path;
  }
  EXPECT_EQ(c.Get("/api/v1/tasks", {{"Origin", "null"}})->status, 403);
  EXPECT_EQ(c.Get("/api/v1/tasks", same)->status, 200);
  // Without a token, only loopback names are served (DNS rebinding).
  Server open("");
  auto oc = open.client();
  httplib::Headers rebinding = {{"Host", "attacker.example:8642"}};
  auto page = oc.Get("/", rebinding);
  EXPECT_EQ(page->status, 403);
}

TEST(WebHttp, ChangesNeedATokenEvenOnLoopback) {
  Server open("");
  auto c = open.client();
  // Reading stays open on loopback.
  EXPECT_EQ(c.Get("/api/v1/tasks")->status, 200);
  EXPECT_EQ(c.Get("/")->status, 200);
  // Adding a task (it runs a command), acting on one or changing one is refused, with the way out.
  std::string spec = R"({"gpu":"cpu_x86_64","dsl":"cpp","shape_key":"matmul_f32_32x32x32","model":"cmd",
    "driver":{"kind":"command","argv":["bash","-c","touch /tmp/pwned"]}})";
  auto add = c.Post("/api/v1/tasks", spec, "application/json");
  ASSERT_TRUE(add);
  EXPECT_EQ(add->status, 403);
  json e = body_json(add)["error"];
  EXPECT_EQ(e["code"], "token_required");
  EXPECT_NE(e["hint"].get<std::string>().find("--token-file"), std::string::npos) << e;
  EXPECT_EQ(c.Post("/api/v1/tasks/" + open.uid + "/pause", "{}", "application/json")->status, 403);
  EXPECT_EQ(c.Patch("/api/v1/tasks/" + open.uid, R"({"driver":{"argv":["bash","x.sh"]}})", "application/json")->status, 403);
  open.monitor->step(false);
  EXPECT_EQ(open.db->tasks().size(), 1u);
  EXPECT_EQ(open.db->task(open.uid)->state, "external");
  // With a token, the same request without it is refused and with it accepted.
  Server s;
  EXPECT_EQ(s.client(false).Post("/api/v1/tasks", spec, "application/json")->status, 401);
  EXPECT_EQ(s.client().Post("/api/v1/tasks", spec, "application/json")->status, 201);
}

TEST(WebHttp, DeeplyNestedJsonBodiesAre400s) {
  Server s(Server::k_token, 1 << 20);
  auto c = s.client();
  for (const std::string& body : {std::string(100000, '[') + std::string(100000, ']'),
                                  [] {
                                    std::string b;
                                    for (int i = 0; i < 100000; ++i) b += "{\"a\":";
                                    return b + "1" + std::string(100000, '}');
                                  }()}) {
    auto r = c.Post("/api/v1/tasks", body, "application/json");
    ASSERT_TRUE(r) << "the server answered";
    EXPECT_EQ(r->status, 400);
    EXPECT_NE(body_json(r)["error"]["message"].get<std::string>().find("nested deeper than"), std::string::npos)
        << r->body;
  }
  EXPECT_EQ(c.Get("/api/v1/health")->status, 200);
}

TEST(WebHttp, WithATokenEveryRequestMustCarryIt) {
  const std::string token = "0123456789abcdef0123456789abcdef";
  Server s(token);
  auto c = s.client(false);
  EXPECT_EQ(c.Get("/api/v1/tasks")->status, 401);
  EXPECT_EQ(c.Get("/")->status, 401);
  EXPECT_EQ(c.Get("/static/app.js")->status, 401);
  EXPECT_EQ(c.Get("/api/v1/events")->status, 401);
  EXPECT_EQ(c.Get("/api/v1/tasks", {{"Authorization", "Bearer wrong-token-wrong-token"}})->status, 401);
  EXPECT_EQ(c.Get("/api/v1/tasks", {{"Authorization", "Bearer " + token}})->status, 200);
  // A browser logs in once with ?token= and gets a cookie; the address loses the token.
  auto login = c.Get("/?token=" + token);
  ASSERT_TRUE(login);
  EXPECT_EQ(login->status, 303);
  EXPECT_EQ(login->get_header_value("Location"), "/");
  std::string cookie = login->get_header_value("Set-Cookie");
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos);
  EXPECT_NE(cookie.find("SameSite=Strict"), std::string::npos);
  EXPECT_EQ(c.Get("/", {{"Cookie", "croq_token=" + token}})->status, 200);
  // With a token, other Host names are fine (a reverse proxy).
  EXPECT_EQ(c.Get("/api/v1/health", {{"Authorization", "Bearer " + token}, {"Host", "monitor.example.org"}})->status, 200);
}

TEST(WebHttp, NoFileOutsideTheTaskFoldersIsServed) {
  Server s;
  auto c = s.client();
  std::string base = "/api/v1/tasks/" + s.uid + "/files";
  // A hard link in the task folder to a file outside the workspace (same file system).
  TempDir outside;
  croq::atomic_write(outside / "secret.txt", "root:x:0:0 secret\n");
  std::error_code ec;
  std::filesystem::create_hard_link(outside / "secret.txt", s.ws.kind_dir(s.task, ArtifactKind::logs) / "notes.txt", ec);
  ASSERT_FALSE(ec) << ec.message();
  auto linked = c.Get(base + "/logs/notes.txt");
  ASSERT_TRUE(linked);
  EXPECT_GE(linked->status, 400);
  EXPECT_LT(linked->status, 500);
  EXPECT_EQ(linked->body.find("secret"), std::string::npos);
  EXPECT_NE(body_json(linked)["error"]["message"].get<std::string>().find("hard links"), std::string::npos);
  // A symlink inside the folder that stays inside is followed.
  std::filesystem::create_symlink("idea-log.jsonl", s.ws.kind_dir(s.task, ArtifactKind::logs) / "ideas");
  EXPECT_EQ(c.Get(base + "/logs/ideas")->status, 200);
  auto listing = c.Get(base + "/logs");
  ASSERT_TRUE(listing);
  EXPECT_EQ(listing->status, 200);
  EXPECT_NE(listing->body.find("idea-log.jsonl"), std::string::npos);
  auto file = c.Get(base + "/logs/idea-log.jsonl");
  EXPECT_EQ(file->status, 200);
  EXPECT_EQ(file->get_header_value("Content-Type"), "text/plain; charset=utf-8");
  // A symlink in the task folder that points out of the workspace.
  std::filesystem::create_symlink("/etc/passwd", s.ws.kind_dir(s.task, ArtifactKind::logs) / "passwd");
  for (const std::string& p : {base + "/logs/../../../../../../etc/passwd", base + "/logs/%2e%2e/%2e%2e/x",
                               base + "/logs/..%2f..%2f..%2fetc%2fpasswd", base + "/logs/passwd", base + "//etc/passwd",
                               base + "/etc/passwd", base + "/logs/./idea-log.jsonl", std::string("/static/../../etc/passwd"),
                               std::string("/static/%2e%2e%2fapp.css")}) {
    auto r = c.Get(p);
    ASSERT_TRUE(r) << p;
    EXPECT_GE(r->status, 400) << p;
    EXPECT_LT(r->status, 500) << p;
    EXPECT_EQ(r->body.find("root:"), std::string::npos) << p;
  }
}

TEST(WebHttp, LedgerTextIsEscapedInPages) {
  Server s;
  Ledger ledger(s.ws, s.task);
  StoreRequest r;
  r.iter = "iter003";
  r.kernel = "iter003_xss";
  r.tflops = 50;
  r.decision = "DISCARD";
  r.bottleneck = "mixed";
  r.idea = "<script>alert(1)</script><img src=x onerror=alert(2)>";
  store_round(ledger, r, std::chrono::seconds(5));
  s.monitor->step(false);
  auto c = s.client();
  auto page = c.Get("/tasks/" + s.uid);
  ASSERT_TRUE(page);
  EXPECT_EQ(page->body.find("<script>alert"), std::string::npos);
  EXPECT_EQ(page->body.find("<img src=x"), std::string::npos);
  EXPECT_NE(page->body.find("&lt;script&gt;alert(1)"), std::string::npos);
}

TEST(WebHttp, TasksAreCreatedAndControlledThroughTheApi) {
  Server s;
  auto c = s.client();
  std::string spec = R"({"gpu":"cpu_x86_64","dsl":"cpp","shape_key":"matmul_f32_32x32x32","model":"cmd",
    "driver":{"kind":"command","argv":["bash","drive.sh"]},"budgets":{"rounds":5}})";
  auto created = c.Post("/api/v1/tasks", spec, "application/json");
  ASSERT_TRUE(created);
  ASSERT_EQ(created->status, 201) << created->body;
  std::string uid = body_json(created)["task"]["uid"];
  EXPECT_EQ(created->get_header_value("Location"), "/api/v1/tasks/" + uid);
  EXPECT_EQ(c.Post("/api/v1/tasks", spec, "application/json")->status, 409);
  s.monitor->step(false);
  EXPECT_EQ(s.db->task(uid)->state, "running");
  auto pause = c.Post("/api/v1/tasks/" + uid + "/pause", "{}", "application/json");
  EXPECT_EQ(pause->status, 200);
  s.monitor->step(false);
  EXPECT_EQ(s.db->task(uid)->state, "paused");
  EXPECT_EQ(c.Post("/api/v1/tasks/" + uid + "/pause", "{}", "application/json")->status, 409);
  auto patch = c.Patch("/api/v1/tasks/" + uid, R"({"budgets":{"rounds":9}})", "application/json");
  ASSERT_EQ(patch->status, 200) << patch->body;
  EXPECT_EQ(s.db->task(uid)->spec["budgets"]["rounds"], 9);
  EXPECT_EQ(c.Patch("/api/v1/tasks/" + uid, R"({"model":"renamed"})", "application/json")->status, 400);
  // An adopted task gets a driver and can then be started.
  auto attach = c.Patch("/api/v1/tasks/" + s.uid, R"({"driver":{"argv":["bash","x.sh"]}})", "application/json");
  ASSERT_EQ(attach->status, 200) << attach->body;
  EXPECT_EQ(s.db->task(s.uid)->state, "paused");
}

TEST(WebHttp, EventStreamDeliversChangesAsTheyHappen) {
  Server s;
  std::string received;
  std::mutex mu;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    httplib::Client c("127.0.0.1", s.port);
    c.set_read_timeout(30, 0);
    c.set_bearer_token_auth(s.token.c_str());
    c.Get("/api/v1/events?task=" + s.uid, [&](const char* data, size_t n) {
      std::lock_guard lock(mu);
      received.append(data, n);
      return !done.load();
    });
  });
  ASSERT_TRUE(test::wait_for([&] {
    std::lock_guard lock(mu);
    return received.find("event: hello") != std::string::npos;
  }));
  test::store_rounds(s.ws, s.task, {130}, std::nullopt, 3);
  s.monitor->step(false);
  bool got = test::wait_for([&] {
    std::lock_guard lock(mu);
    return received.find("event: round") != std::string::npos;
  });
  done = true;
  s.monitor->bus().publish("sync", "", json::object());  // wake the stream so the reader returns
  reader.join();
  ASSERT_TRUE(got) << received;
  EXPECT_NE(received.find("\"tflops\":130"), std::string::npos);
  EXPECT_NE(received.find("id: "), std::string::npos);
}

TEST(WebHttp, SystemPanelShowsWhoHoldsAGpuLease) {
  Server s;
  const char* old = std::getenv("CROQ_LEASE_DIR");
  std::string saved = old ? old : "";
  ::setenv("CROQ_LEASE_DIR", (s.dir / "leases").c_str(), 1);
  auto c = s.client();
  // A task on GPU 0 makes index 0 part of the panel.
  auto created = c.Post("/api/v1/tasks",
                        R"({"gpu":"sm90_NVIDIA_H200","dsl":"cuda","shape_key":"matmul_f16fp32_64x64x64","model":"m","device":"0"})",
                        "application/json");
  ASSERT_EQ(created->status, 201) << created->body;
  json free_now = body_json(c.Get("/api/v1/system"));
  ASSERT_EQ(free_now["leases"].size(), 1u);
  EXPECT_EQ(free_now["leases"][0]["held"], false);
  {
    // The one device lease (no nvidia-smi here: GPU 0's id is gpu0), as croq measure takes it.
    auto lease = DeviceLease::try_acquire("gpu0", "croq measure iter004_x");
    ASSERT_TRUE(lease);
    json held = body_json(c.Get("/api/v1/system"));
    EXPECT_EQ(held["leases"][0]["held"], true);
    EXPECT_NE(held["leases"][0]["holder"].get<std::string>().find("croq measure"), std::string::npos);
    auto page = c.Get("/system");
    EXPECT_NE(page->body.find("croq measure iter004_x"), std::string::npos);
  }
  EXPECT_EQ(body_json(c.Get("/api/v1/system"))["leases"][0]["held"], false);
  if (old) ::setenv("CROQ_LEASE_DIR", saved.c_str(), 1);
  else ::unsetenv("CROQ_LEASE_DIR");
}

// A damaged file the task page reads (the baseline's result: device and measurement method) is
// named on the page instead of being left out without a word.
TEST(WebHttp, ADamagedBaselineResultIsNamedOnTheTaskPage) {
  Server s;
  atomic_write(s.ws.baseline_result(s.task), "{ damaged");
  auto page = s.client().Get("/tasks/" + s.uid);
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find(s.ws.display(s.ws.baseline_result(s.task)) + " cannot be read"), std::string::npos);
}

// One monitor shows every server's tasks of a shared database, each with its owner; an action on
// another server's task is recorded for its owner (202), and its files and logs are not looked
// for on this machine (where a task of the same key may be this server's own).
TEST(WebHttp, AnotherServersTaskIsShownWithItsOwnerAndActionsOnItBecomeRequests) {
  Server s;
  TaskRow other;
  other.uid = "0ther0000001";
  other.gpu = s.task.gpu;
  other.dsl = s.task.dsl;
  other.shape_key = s.task.shape.text;
  other.model = s.task.model;
  other.key = s.task.id();  // the same key as this server's task
  other.origin = "created";
  other.owner = "gpu-node-7:/data/tuning";
  other.state = "queued";
  other.created_at = other.updated_at = other.queued_at = "2026-01-01T00:00:00.000Z";
  other.spec = {{"device", "cpu"}, {"driver", {{"kind", "command"}, {"argv", {"bash", "x.sh"}}}}};
  s.db->insert_task(other);
  auto c = s.client();
  json list = body_json(c.Get("/api/v1/tasks"));
  ASSERT_EQ(list["tasks"].size(), 2u) << list.dump();
  for (const auto& t : list["tasks"]) {
    const bool mine = t["uid"] == s.uid;
    EXPECT_EQ(t["owner"], mine ? s.monitor->owner() : other.owner);
    EXPECT_EQ(t["this_server"], mine);
  }
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_NE(page->body.find("gpu-node-7"), std::string::npos);
  EXPECT_NE(page->body.find("(this server)"), std::string::npos);
  auto task_page = c.Get("/tasks/" + other.uid);
  ASSERT_TRUE(task_page);
  EXPECT_EQ(task_page->status, 200);
  EXPECT_NE(task_page->body.find("The run logs are on gpu-node-7:/data/tuning"), std::string::npos);

  auto pause = c.Post("/api/v1/tasks/" + other.uid + "/pause", "{}", "application/json");
  ASSERT_TRUE(pause);
  EXPECT_EQ(pause->status, 202) << pause->body;
  json doc = body_json(pause);
  EXPECT_EQ(doc["request"]["action"], "pause");
  EXPECT_EQ(doc["request"]["requested_by"], s.monitor->owner());
  EXPECT_NE(doc.value("message", "").find(other.owner), std::string::npos) << pause->body;
  EXPECT_EQ(s.db->task(other.uid)->state, "queued");  // left to its owner
  ASSERT_EQ(s.db->task_requests(other.uid).size(), 1u);
  EXPECT_EQ(body_json(c.Get("/api/v1/tasks/" + other.uid))["requests"].size(), 1u);
  s.monitor->step(true);
  EXPECT_EQ(s.db->task(other.uid)->state, "queued");
  EXPECT_EQ(s.db->task_requests(other.uid).size(), 1u);

  auto patch = c.Patch("/api/v1/tasks/" + other.uid, R"({"priority": 3})", "application/json");
  ASSERT_TRUE(patch);
  EXPECT_EQ(patch->status, 409);
  EXPECT_NE(patch->body.find(other.owner), std::string::npos) << patch->body;
  for (const std::string p : {"/files", "/files/logs/idea-log.jsonl", "/log"}) {
    auto r = c.Get("/api/v1/tasks/" + other.uid + p);
    ASSERT_TRUE(r) << p;
    EXPECT_EQ(r->status, 404) << p;
    EXPECT_NE(r->body.find(other.owner), std::string::npos) << p << ": " << r->body;
  }
  // This server's own task is untouched and still served from this disk.
  auto own = c.Post("/api/v1/tasks/" + s.uid + "/pause", "{}", "application/json");
  ASSERT_TRUE(own);
  EXPECT_EQ(own->status, 409);  // an external task cannot be paused: acted on here, not requested
  EXPECT_EQ(c.Get("/api/v1/tasks/" + s.uid + "/files/logs/idea-log.jsonl")->status, 200);
}
