// The monitor's connection stage: request heads checked before the HTTP library reads them
// (Content-Length smuggling, folded lines, oversized heads), and the monitor answering
// /api/v1/health within a second while 200 clients trickle their headers and while more event
// streams are asked for than it allows (issue: one hundred slow clients starved it).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "croq/web/connections.hpp"
#include "croq/web/http_server.hpp"
#include "croq/web/monitor.hpp"
#include "support/test_support.hpp"
#include "support/web_support.hpp"

using namespace croq;
using namespace croq::web;
using croq::test::TempDir;
using State = RequestHead::State;

namespace {

RequestHead head(std::string_view text, size_t max_body = 1 << 20) {
  HeadLimits l;
  l.max_body_bytes = max_body;
  return parse_request_head(text, l);
}

}  // namespace

TEST(WebConnections, WholeHeadsAreParsed) {
  auto h = head("POST /api/v1/tasks?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}");
  ASSERT_EQ(h.state, State::complete) << h.why;
  EXPECT_EQ(h.method, "POST");
  EXPECT_EQ(h.path, "/api/v1/tasks");
  EXPECT_EQ(h.target, "/api/v1/tasks?x=1");
  EXPECT_EQ(h.content_length, 2u);
  EXPECT_EQ(h.head_bytes, std::string_view("POST /api/v1/tasks?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n").size());
  // Bare LF line ends, empty lines before the request, HTTP/1.0 without Host.
  EXPECT_EQ(head("GET / HTTP/1.1\nHost: a\n\n").state, State::complete);
  auto skipped = head("\r\n\r\nGET / HTTP/1.0\r\n\r\n");
  EXPECT_EQ(skipped.state, State::complete);
  EXPECT_EQ(skipped.skipped, 4u);
  // Not there yet.
  EXPECT_EQ(head("GET / HTTP/1.1\r\nHost: a\r\n").state, State::incomplete);
  EXPECT_EQ(head("GET / HT").state, State::incomplete);
  EXPECT_EQ(head("").state, State::incomplete);
  // Expect: 100-continue is located so that the stage can answer it and take it out.
  std::string e = "POST /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n";
  auto ex = head(e);
  ASSERT_EQ(ex.state, State::complete);
  EXPECT_EQ(e.substr(ex.expect_begin, ex.expect_end - ex.expect_begin), "Expect: 100-continue\r\n");
}

TEST(WebConnections, SmugglingAndMalformedHeadsAreRefused) {
  struct Case {
    std::string text;
    int status;
  };
  const std::vector<Case> cases = {
      {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}", 400},   // duplicate
      {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\ncontent-length: 40\r\n\r\n{}", 400},  // conflicting
      {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2, 2\r\n\r\n{}", 400},                      // a list
      {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +2\r\n\r\n{}", 400},
      {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x2\r\n\r\n{}", 400},
      {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}", 400},
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 411},
      {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999\r\n\r\n", 413},
      {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\n\r\n", 400},                       // no Host
      {"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost a\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nBad Name: x\r\nHost: a\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n", 400},
      {"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 400},
      {"get / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"GET /" + std::string(9000, 'a') + " HTTP/1.1\r\n", 414},
      {"GET /" + std::string(9000, 'a'), 414},  // refused before the line ends
      {"GET / HTTP/1.1\r\nHost: a\r\nX: " + std::string(20000, 'a'), 431},
  };
  for (const auto& c : cases) {
    auto h = head(c.text);
    EXPECT_EQ(h.state, State::bad) << c.text.substr(0, 80);
    EXPECT_EQ(h.status, c.status) << c.text.substr(0, 80) << ": " << h.why;
    EXPECT_FALSE(h.why.empty());
  }
  std::string many = "GET / HTTP/1.1\r\nHost: a\r\n";
  for (int i = 0; i < 200; ++i) many += "X: y\r\n";
  EXPECT_EQ(head(many).status, 431);
}

namespace {

// A monitor in process with a token, on a free loopback port.
struct Monitored {
  TempDir dir;
  Workspace ws{dir.path()};
  std::unique_ptr<Database> db = open_database((dir / ".croq/monitor.db").string());
  test::FakeLauncher launcher;
  std::unique_ptr<Monitor> monitor;
  std::unique_ptr<HttpServer> http;
  std::thread thread;
  int port = 0;
  const std::string token = "0123456789abcdef0123456789abcdef";

  explicit Monitored(HttpOptions ho = {}) {
    test::store_rounds(ws, make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "search"), {110, 120});
    MonitorOptions mo;
    mo.query_gpus = false;
    mo.scheduler.croq_exe = "/bin/true";
    monitor = std::make_unique<Monitor>(ws, *db, launcher, mo);
    monitor->initial_sync();
    ho.bind = parse_bind("127.0.0.1:0");
    ho.auth.required = true;
    ho.auth.token = token;
    http = std::make_unique<HttpServer>(*monitor, ho);
    port = http->bind();
    thread = std::thread([this] { http->run(); });
  }
  ~Monitored() {
    monitor->bus().close();
    http->stop();
    thread.join();
  }
  // A connection from 127.0.0.1, or from another loopback address (another client).
  int connect_raw(int from = 1) const {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (from != 1) {
      sockaddr_in src{};
      src.sin_family = AF_INET;
      src.sin_addr.s_addr = htonl((127u << 24) | static_cast<uint32_t>(from));
      if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0) {
        ::close(fd);
        return -1;
      }
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }
  // Sends `request` on a fresh connection and returns what comes back until the server closes
  // (or `limit` passes).
  std::string raw(const std::string& request, std::chrono::milliseconds limit = std::chrono::seconds(5)) const {
    int fd = connect_raw();
    if (fd < 0) return {};
    (void)!::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    std::string out;
    auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char buf[4096];
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
  }
  // Milliseconds for GET /api/v1/health on a fresh connection; -1 if it failed.
  double health_ms() const {
    auto t0 = std::chrono::steady_clock::now();
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(3, 0);
    c.set_read_timeout(3, 0);
    auto r = c.Get("/api/v1/health", {{"Authorization", "Bearer " + token}});
    if (!r || r->status != 200) return -1;
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
};

int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return 0;
  return std::stoi(response.substr(9, 3));
}

}  // namespace

TEST(WebConnections, DuplicateOrConflictingContentLengthGets400) {
  Monitored m;
  const std::string auth = "Authorization: Bearer " + m.token + "\r\n";
  for (const char* lengths : {"Content-Length: 2\r\nContent-Length: 2\r\n", "Content-Length: 2\r\nContent-Length: 7\r\n",
                                     "Content-Length: 2, 7\r\n", "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n"}) {
    std::string r = m.raw("POST /api/v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth +
                          "Content-Type: application/json\r\n" + lengths + "\r\n{}");
    EXPECT_EQ(status_of(r), 400) << lengths << r;
    EXPECT_NE(r.find("\"ok\":false"), std::string::npos) << r;
  }
  EXPECT_EQ(m.db->tasks().size(), 1u);  // nothing was created
  // A well-formed request on the same server is answered, kept alive and pipelined.
  std::string two = m.raw("GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth +
                              "\r\nGET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + "Connection: close\r\n\r\n",
                          std::chrono::seconds(3));
  EXPECT_EQ(status_of(two), 200) << two;
  size_t second = two.find("HTTP/1.1 200", 12);
  EXPECT_NE(second, std::string::npos) << two;
}

TEST(WebConnections, AHeadOrBodyThatDoesNotArriveInTimeGets408) {
  HttpOptions ho;
  ho.head_timeout = std::chrono::milliseconds(400);
  ho.body_timeout = std::chrono::milliseconds(400);
  Monitored m(ho);
  auto t0 = std::chrono::steady_clock::now();
  std::string r = m.raw("GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ", std::chrono::seconds(5));
  EXPECT_EQ(status_of(r), 408) << r;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  std::string b = m.raw("POST /api/v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        "Content-Length: 100\r\n\r\n{",
                        std::chrono::seconds(5));
  EXPECT_EQ(status_of(b), 408) << b;
}

// The attacks together, the slow one at twice its size: 200 clients (each from its own
// loopback address, so no cap per client applies) trickle header lines, one byte per connection
// every 50 ms, while 120 clients ask for the event stream from one address, token configured.
// /api/v1/health must stay answered within a second throughout.
TEST(WebConnections, HealthIsAnsweredUnderSlowClientsAndManyEventStreams) {
  Monitored m;
  std::vector<int> slow;
  for (int i = 0; i < 200; ++i) {
    int fd = m.connect_raw(2 + i);
    ASSERT_GE(fd, 0);
    std::string start = "GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    (void)!::send(fd, start.data(), start.size(), MSG_NOSIGNAL);
    slow.push_back(fd);
  }
  std::vector<int> streams;
  const std::string sse = "GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + m.token + "\r\n\r\n";
  for (int i = 0; i < 120; ++i) {
    int fd = m.connect_raw();
    ASSERT_GE(fd, 0);
    (void)!::send(fd, sse.data(), sse.size(), MSG_NOSIGNAL);
    streams.push_back(fd);
  }
  std::atomic<bool> done{false};
  std::thread trickle([&] {
    while (!done) {
      for (int fd : slow) (void)!::send(fd, "X", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  std::vector<double> ms;
  int held = 0;
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (std::chrono::steady_clock::now() < end) {
    ms.push_back(m.health_ms());
    held = std::max(held, m.http->connection_stats()["waiting"].get<int>());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  done = true;
  trickle.join();
  EXPECT_GE(held, 200) << "the slow clients were all held, not dropped: " << m.http->connection_stats();
  ASSERT_GE(ms.size(), 10u);
  for (double v : ms) {
    EXPECT_GE(v, 0) << "a health request failed";
    EXPECT_LT(v, 1000) << "a health request took " << v << " ms";
  }
  // Streams beyond the per-client cap were refused with 503, the others opened.
  int opened = 0, refused = 0;
  for (int fd : streams) {
    char buf[512] = {0};
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 1000) > 0 && ::recv(fd, buf, sizeof buf - 1, 0) > 0) {
      std::string s(buf);
      opened += s.find("200 OK") != std::string::npos;
      refused += s.find(" 503 ") != std::string::npos;
    }
    ::close(fd);
  }
  EXPECT_EQ(opened, HttpOptions{}.max_streams_per_client);
  EXPECT_EQ(refused, 120 - opened);
  for (int fd : slow) ::close(fd);
}

// Past its cap, a client's oldest connection that is still sending gives way to a new one.
TEST(WebConnections, AClientAtItsCapLosesItsOldestWaitingConnection) {
  HttpOptions ho;
  ho.max_client_connections = 4;
  Monitored m(ho);
  std::vector<int> slow;
  for (int i = 0; i < 4; ++i) {
    int fd = m.connect_raw();
    (void)!::send(fd, "GET / HTTP/1.1\r\n", 16, MSG_NOSIGNAL);
    slow.push_back(fd);
  }
  ASSERT_TRUE(test::wait_for([&] { return m.http->connection_stats()["waiting"] == 4; }, std::chrono::seconds(5)));
  EXPECT_GE(m.health_ms(), 0);
  json stats = m.http->connection_stats();
  EXPECT_EQ(stats["evicted"], 1) << stats;
  // The oldest was closed by the server.
  char b;
  pollfd p{slow[0], POLLIN, 0};
  ASSERT_GT(::poll(&p, 1, 2000), 0);
  EXPECT_EQ(::recv(slow[0], &b, 1, 0), 0);
  for (int fd : slow) ::close(fd);
}
