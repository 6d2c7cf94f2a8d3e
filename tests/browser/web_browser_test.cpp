// The dashboard in a real browser: headless Chromium driven through chromedriver's W3C WebDriver
// HTTP API. Starts `croq serve` on a temporary workspace and a free port, adds a task through the
// add-task form (a small driver that stores rounds with `croq store-round`), watches the rounds
// arrive and the chart grow without a reload, cancels the task, and saves screenshots of the task
// page (laptop and phone widths) and of the task list. Screenshots go to $CROQ_SCREENSHOTS, else
// <build>/screenshots. Fails (does not skip) when chromium or chromedriver is missing: CI
// installs them (scripts/setup.sh).
#include <gtest/gtest.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmath>
#include <fstream>

#include "croq/util/fs.hpp"
#include "croq/util/process.hpp"
#include "support/test_support.hpp"
#include "support/web_support.hpp"

using namespace croq;
using croq::test::ServeProcess;
using croq::test::TempDir;
using croq::test::wait_for;

namespace {

std::string base64_decode(const std::string& in) {
  static const std::string chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int val = 0, bits = -8;
  for (char c : in) {
    auto p = chars.find(c);
    if (p == std::string::npos) continue;
    val = (val << 6) + static_cast<int>(p);
    bits += 6;
    if (bits >= 0) {
      out.push_back(static_cast<char>((val >> bits) & 0xFF));
      bits -= 8;
    }
  }
  return out;
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

// A chromedriver process and one browser session.
class Browser {
 public:
  Browser(const std::filesystem::path& chromium, const std::filesystem::path& driver, const TempDir& dir) {
    m_port = free_port();
    std::vector<std::string> args = {driver.string(), "--port=" + std::to_string(m_port), "--log-path=" + (dir / "chromedriver.log").string()};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, (dir / "chromedriver.out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, (dir / "chromedriver.out").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn(&m_pid, driver.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    m_client = std::make_unique<httplib::Client>("127.0.0.1", m_port);
    m_client->set_read_timeout(60, 0);
    m_client->set_connection_timeout(5, 0);
    bool up = wait_for([&] {
      int st = 0;
      if (::waitpid(m_pid, &st, WNOHANG) == m_pid) {
        m_pid = 0;
        return true;  // it exited: reported below
      }
      auto r = m_client->Get("/status");
      if (!r) return false;
      auto j = try_parse_json(r->body);
      return j && (*j)["value"].value("ready", false);
    }, std::chrono::seconds(30));
    if (!up || m_pid == 0) throw std::runtime_error("chromedriver did not start: " + test::slurp(dir / "chromedriver.out"));
    json caps = {{"capabilities",
                  {{"alwaysMatch",
                    {{"browserName", "chrome"},
                     {"goog:chromeOptions",
                      {{"binary", chromium.string()},
                       {"args",
                        {"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                         "--disable-background-networking", "--disable-component-update", "--disable-sync",
                         "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1280,1000",
                         "--user-data-dir=" + (dir / "chromium-profile").string()}}}}}}}}};
    json r = call("POST", "/session", caps);
    m_session = r["value"]["sessionId"];
  }
  ~Browser() {
    if (!m_session.empty()) {
      try {
        call("DELETE", "/session/" + m_session, json::object());
      } catch (const std::exception&) {
      }
    }
    if (m_pid > 0) {
      ::kill(m_pid, SIGTERM);
      int st = 0;
      ::waitpid(m_pid, &st, 0);
    }
  }

  json call(const std::string& method, const std::string& path, const json& body) {
    httplib::Result r = method == "GET"      ? m_client->Get(path)
                        : method == "DELETE" ? m_client->Delete(path)
                                             : m_client->Post(path, dump_compact(body), "application/json");
    if (!r) throw std::runtime_error("webdriver " + method + " " + path + ": no answer");
    auto j = try_parse_json(r->body);
    if (!j) throw std::runtime_error("webdriver " + path + ": not JSON: " + r->body.substr(0, 300));
    if (r->status >= 400) throw std::runtime_error("webdriver " + path + ": " + (*j)["value"].dump().substr(0, 500));
    return *j;
  }
  json s(const std::string& what, const json& body = json::object()) {
    return call("POST", "/session/" + m_session + what, body);
  }
  void go(const std::string& url) { s("/url", {{"url", url}}); }
  std::string url() { return call("GET", "/session/" + m_session + "/url", nullptr)["value"]; }
  json script(const std::string& js, json args = json::array()) {
    return s("/execute/sync", {{"script", js}, {"args", args}})["value"];
  }
  std::string element(const std::string& css) {
    json v = s("/element", {{"using", "css selector"}, {"value", css}})["value"];
    return v.begin().value();
  }
  void type(const std::string& css, const std::string& text) {
    s("/element/" + element(css) + "/clear");
    s("/element/" + element(css) + "/value", {{"text", text}});
  }
  // Parts of the page are replaced as events arrive: an element can go stale between finding and
  // clicking it, so find it again and retry.
  void click(const std::string& css) {
    for (int attempt = 0;; ++attempt) {
      try {
        s("/element/" + element(css) + "/click");
        return;
      } catch (const std::runtime_error& e) {
        if (attempt >= 10 || std::string(e.what()).find("stale element") == std::string::npos) throw;
      }
    }
  }
  void window(int w, int h) { s("/window/rect", {{"width", w}, {"height", h}}); }
  void screenshot(const std::filesystem::path& file) {
    json v = call("GET", "/session/" + m_session + "/screenshot", nullptr)["value"];
    ensure_dir(file.parent_path());
    std::ofstream(file, std::ios::binary) << base64_decode(v.get<std::string>());
  }

 private:
  int m_port = 0;
  pid_t m_pid = 0;
  std::unique_ptr<httplib::Client> m_client;
  std::string m_session;
};

std::filesystem::path screenshots_dir() {
  if (const char* d = std::getenv("CROQ_SCREENSHOTS"); d && *d) return std::filesystem::absolute(d);
  return std::filesystem::path(CROQ_BINARY_DIR) / "screenshots";
}

}  // namespace

TEST(WebBrowser, AddATaskWatchItsRoundsArriveThenCancelIt) {
  auto chromium = find_executable("chromium");
  if (!chromium) chromium = find_executable("chromium-browser");
  auto driver = find_executable("chromedriver");
  ASSERT_TRUE(chromium && driver)
      << "the browser test needs Debian's chromium and chromium-driver packages (scripts/setup.sh installs them): "
      << (chromium ? "" : "chromium not found on PATH; ") << (driver ? "" : "chromedriver not found on PATH");

  TempDir dir;
  std::filesystem::copy_file(std::string(CROQ_SOURCE_DIR) + "/tests/data/web/drive.sh", dir / "drive.sh");
  // Two tasks made outside the monitor (it adopts them) so the list shows more than one.
  Workspace ws(dir.path());
  std::vector<double> climb;
  for (int i = 1; i <= 60; ++i) climb.push_back(i % 9 == 0 ? 0 : 480 + 240 * (1 - std::exp(-i / 18.0)) + (i * 37 % 23) - 11);
  test::store_rounds(ws, make_task("sm90_NVIDIA_H200", "cuda", "matmul_f16fp32_4096x4096x4096", "agent"), climb, 612.0);
  test::store_rounds(ws, make_task("sm90_NVIDIA_H200", "croqtile", "matmul_bf16fp32_2048x2048x2048", "search"),
                     {301, 298, 335, 352, 349, 0, 371}, 402.0);
  // Adding and stopping tasks needs the token, on loopback too: the browser logs in once.
  ServeProcess serve(dir.path(), dir.path(),
                     {"--poll-ms", "150", "--scan-every", "2", "--token-file", test::write_token_file(dir.path())});
  ASSERT_TRUE(serve.wait_ready()) << serve.err();
  EXPECT_EQ(serve.doc()["adopted"], 2);
  const std::string base = "http://127.0.0.1:" + std::to_string(serve.port());
  httplib::Client api("127.0.0.1", serve.port());
  api.set_bearer_token_auth(test::k_test_token);
  auto add = [&](const json& spec) {
    auto r = api.Post("/api/v1/tasks", dump_compact(spec), "application/json");
    return r && r->status == 201 ? try_parse_json(r->body)->at("task")["uid"].get<std::string>() : std::string();
  };

  Browser b(*chromium, *driver, dir);
  b.go(base + "/?token=" + test::k_test_token);  // sets the cookie, then drops the token from the address
  ASSERT_EQ(b.url().find("token="), std::string::npos) << b.url();
  // The add-task form, typed in like a person would.
  b.go(base + "/add");
  b.type("#f-shape_key", "matmul_f32_256x256x256");
  b.script("document.getElementById('f-dsl').value = 'cpp';");
  b.type("#f-model", "driver");
  b.type("#f-gpu", "cpu_x86_64");
  b.type("#f-device", "cpu");
  b.type("#f-argv", "bash\ndrive.sh\n40\n0.35");
  b.type("#f-rounds", "40");
  b.click("button[type=submit]");
  ASSERT_TRUE(wait_for([&] { return b.url().find("/tasks/") != std::string::npos; }, std::chrono::seconds(20)))
      << b.url() << " " << b.script("return document.getElementById('flash').textContent;").dump();
  std::string uid = b.url().substr(b.url().find("/tasks/") + 7);
  // Another task waits for the same device; one fails at once.
  std::string waiting = add({{"gpu", "cpu_x86_64"}, {"dsl", "cpp"}, {"shape_key", "matmul_f32_512x512x512"},
                             {"model", "driver"}, {"device", "cpu"},
                             {"driver", {{"argv", {"bash", "drive.sh", "200", "1.5"}}}}});
  std::string failing = add({{"gpu", "cpu_x86_64"}, {"dsl", "cpp"}, {"shape_key", "matmul_f32_128x128x128"},
                             {"model", "broken"}, {"device", "cpu1"}, {"driver", {{"argv", {"false"}}}},
                             {"budgets", {{"max_restarts", 0}}}});
  ASSERT_FALSE(waiting.empty());
  ASSERT_FALSE(failing.empty());

  // Rounds arrive; the chart and the table grow while the page stays loaded (no reload).
  b.script("window.__croq_marker = 'still here';");
  auto points = [&] { return b.script("return document.querySelectorAll('#convergence circle.pt').length;").get<int>(); };
  ASSERT_TRUE(wait_for([&] { return points() >= 4; }, std::chrono::seconds(60))) << serve.err();
  int first = points();
  ASSERT_TRUE(wait_for([&] { return points() >= first + 4; }, std::chrono::seconds(60)));
  EXPECT_EQ(b.script("return window.__croq_marker || '';"), "still here");
  EXPECT_GE(b.script("return document.querySelectorAll('#rounds tbody tr').length;").get<int>(), first + 4);
  EXPECT_NE(b.script("return document.getElementById('log').textContent;").get<std::string>().find("TFLOPS"),
            std::string::npos);
  EXPECT_EQ(b.script("return document.querySelector('#task-head .badge').textContent;"), "running");
  EXPECT_EQ(b.script("return document.getElementById('live').className;"), "live on");
  // The filters hide rows without a request.
  b.script("var s = document.querySelector('[data-filter=decision]'); s.value = 'keep';"
           "s.dispatchEvent(new Event('input'));");
  int shown = b.script("return document.querySelectorAll('#rounds tbody tr:not(.hidden)').length;").get<int>();
  int keeps = b.script("return document.querySelectorAll('#rounds tbody tr[data-decision=KEEP]').length;").get<int>();
  EXPECT_EQ(shown, keeps);
  b.script("var s = document.querySelector('[data-filter=decision]'); s.value = '';"
           "s.dispatchEvent(new Event('input'));");

  const auto shots = screenshots_dir();
  wait_for([&] { return points() >= 22; }, std::chrono::seconds(40));
  b.window(1280, 2300);
  wait_for([&] { return b.script("var s = document.querySelector('#convergence svg');"
                                 "return s ? s.viewBox.baseVal.width : 0;").get<double>() > 1000; },
           std::chrono::seconds(10));
  b.screenshot(shots / "task.png");
  b.window(390, 1800);
  // The charts are drawn again at phone width (readable text), still without a reload.
  ASSERT_TRUE(wait_for([&] {
    return b.script("var s = document.querySelector('#convergence svg'); return s ? s.viewBox.baseVal.width : 0;")
               .get<double>() < 400;
  }, std::chrono::seconds(10)));
  b.screenshot(shots / "task-phone.png");
  b.window(1280, 1000);
  EXPECT_EQ(b.script("return window.__croq_marker || '';"), "still here");

  // Cancel it from the page.
  b.script("window.confirm = function () { return true; };");
  b.click("button[data-action=cancel]");
  ASSERT_TRUE(wait_for([&] {
    return b.script("var e = document.querySelector('#task-head .badge'); return e ? e.textContent : '';") == "cancelled";
  }, std::chrono::seconds(30))) << "the task as the API has it: " << [&] {
    auto r = api.Get("/api/v1/tasks/" + uid);
    return r ? r->body.substr(0, 3000) : std::string("no answer");
  }()
                                << "\nserver: " << serve.err();
  auto t = try_parse_json(api.Get("/api/v1/tasks/" + uid)->body);
  ASSERT_TRUE(t);
  EXPECT_EQ((*t)["task"]["state"], "cancelled");
  EXPECT_EQ((*t)["task"]["last_exit"]["outcome"], "stopped");

  // The device is free: the waiting task starts. The list shows every task and its state.
  auto state_of = [&](const std::string& u) {
    auto r = api.Get("/api/v1/tasks/" + u);
    return r ? try_parse_json(r->body)->at("task")["state"].get<std::string>() : std::string();
  };
  ASSERT_TRUE(wait_for([&] { return state_of(waiting) == "running"; }, std::chrono::seconds(30)));
  EXPECT_EQ(state_of(failing), "failed");
  b.go(base + "/");
  ASSERT_TRUE(wait_for([&] {
    return b.script("return document.querySelectorAll('#task-rows tr').length;").get<int>() == 5;
  }));
  std::string rows = b.script("return document.getElementById('task-rows').textContent;");
  for (const char* s : {"cancelled", "running", "failed", "external", "matmul_f16fp32_4096x4096x4096"}) {
    EXPECT_NE(rows.find(s), std::string::npos) << s << " in " << rows;
  }
  b.window(1280, 760);
  b.screenshot(shots / "tasks.png");
  EXPECT_GT(std::filesystem::file_size(shots / "tasks.png"), 1000u);

  // Leave nothing running.
  api.Post("/api/v1/tasks/" + waiting + "/cancel", "{}", "application/json");
  EXPECT_TRUE(wait_for([&] { return state_of(waiting) == "cancelled"; }, std::chrono::seconds(30)));
}

// Issue 23, point 5: the rounds table shows each round's time, spread and parameters; a kernel's
// page shows its source and its diff against its base; the header names the device and how it is
// measured; a task croq tune started says so (not "found on disk").
TEST(WebBrowser, RoundsShowTimeSpreadParametersAndTheSourceWithItsDiff) {
  auto chromium = find_executable("chromium");
  if (!chromium) chromium = find_executable("chromium-browser");
  auto driver = find_executable("chromedriver");
  ASSERT_TRUE(chromium && driver) << "the browser test needs chromium and chromedriver (scripts/setup.sh)";
  TempDir dir;
  Workspace ws(dir.path());
  const TaskRef t = make_task("cpu_x86_64", "cpp", "matmul_f32_512x512x512", "croq-search");
  Ledger ledger(ws, t);
  StoreRequest b;
  b.iter = "iter000";
  b.kernel = "iter000_openblas";
  b.tflops = 0.08;
  b.decision = "BASELINE";
  store_round(ledger, b, std::chrono::seconds(5));
  const fs::path srcs = ws.kind_dir(t, ArtifactKind::srcs);
  ensure_dir(srcs);
  atomic_write(srcs / "iter001_tiled.cpp", "// starting kernel\nconstexpr int BM = 64;\nconstexpr int BN = 64;\nint f() { return BM * BN; }\n");
  atomic_write(srcs / "iter002_bm128.cpp", "// starting kernel\nconstexpr int BM = 128;\nconstexpr int BN = 64;\nint f() { return BM * BN; }\n");
  for (int i = 1; i <= 2; ++i) {
    StoreRequest r;
    r.iter = i == 1 ? "iter001" : "iter002";
    r.kernel = i == 1 ? "iter001_tiled" : "iter002_bm128";
    r.tflops = i == 1 ? 0.05 : 0.061;
    r.decision = "KEEP";
    r.round = i - 1;
    r.bottleneck = i == 1 ? "" : "memory_bound";
    r.idea = i == 1 ? "" : "BM 64 -> 128";
    r.extra = {{"measurement", {{"median_ms", i == 1 ? 5.3 : 4.4}, {"cv", 0.012}, {"robust_cv", 0.008}, {"verdict", "PASS"}}},
               {"params", {{"BM", i == 1 ? 64 : 128}, {"BN", 64}}}};
    if (i == 2) r.extra["base"] = "iter001_tiled";
    store_round(ledger, r, std::chrono::seconds(5));
  }
  ensure_dir(ws.baseline_result(t).parent_path());
  atomic_write(ws.baseline_result(t),
               "{\"library\":\"openblas\",\"tflops\":0.08,\"device\":{\"name\":\"host CPU\",\"key\":\"cpu_x86_64\"},"
               "\"statistics\":{\"method\":\"steady_clock\",\"warmup\":10,\"l2_flush\":true,\"reps\":40,\"cv\":0.004}}");
  atomic_write(ws.kind_dir(t, ArtifactKind::logs) / "tune.json",
               "{\"schema\":\"croq-tune-v1\",\"started_at\":\"2026-12-01T10:00:00.000Z\",\"finished_at\":"
               "\"2026-12-01T10:02:30.000Z\",\"completed\":true}");
  ServeProcess serve(dir.path(), dir.path(), {"--poll-ms", "150", "--token-file", test::write_token_file(dir.path())});
  ASSERT_TRUE(serve.wait_ready()) << serve.err();
  httplib::Client api("127.0.0.1", serve.port());
  api.set_bearer_token_auth(test::k_test_token);
  auto list = try_parse_json(api.Get("/api/v1/tasks")->body);
  ASSERT_TRUE(list);
  std::string uid;
  for (const auto& task : (*list)["tasks"]) uid = task.value("uid", "");
  ASSERT_FALSE(uid.empty()) << list->dump();
  const std::string base = "http://127.0.0.1:" + std::to_string(serve.port());
  Browser br(*chromium, *driver, dir);
  br.go(base + "/?token=" + test::k_test_token);
  std::string rows = br.script("return document.getElementById('task-rows').textContent;");
  EXPECT_NE(rows.find("started by croq tune"), std::string::npos) << rows;
  EXPECT_EQ(rows.find("found on disk"), std::string::npos) << rows;

  br.go(base + "/tasks/" + uid);
  std::string table = br.script("return document.getElementById('rounds').textContent;");
  for (const char* s : {"4.40 ms", "0.80 %", "BM=128 BN=64", "61.0 GFLOPS"}) {
    EXPECT_NE(table.find(s), std::string::npos) << s << " in " << table;
  }
  std::string head = br.script("return document.getElementById('task-head').textContent;");
  EXPECT_NE(head.find("Running time"), std::string::npos);
  EXPECT_NE(head.find(" min"), std::string::npos) << "croq tune's run time (150 s), not 0 s: " << head;
  EXPECT_NE(head.find("device host CPU"), std::string::npos) << head;
  EXPECT_NE(head.find("L2 flush on"), std::string::npos) << head;
  br.window(1280, 1700);
  br.screenshot(screenshots_dir() / "rounds-params.png");
  br.window(1280, 900);

  br.go(base + "/tasks/" + uid + "/source/iter002_bm128");
  std::string diff = br.script("return document.getElementById('diff').textContent;");
  EXPECT_NE(diff.find("- constexpr int BM = 64;"), std::string::npos) << diff;
  EXPECT_NE(diff.find("+ constexpr int BM = 128;"), std::string::npos) << diff;
  EXPECT_NE(br.script("return document.getElementById('source').textContent;").get<std::string>().find("BM * BN"),
            std::string::npos);
  br.screenshot(screenshots_dir() / "source-diff.png");
}
