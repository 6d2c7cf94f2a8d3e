// The connection stage of the monitor (connections.hpp).
#include "croq/web/connections.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

namespace croq::web {

namespace {

using Clock = std::chrono::steady_clock;

bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-': case '.':
    case '^': case '_': case '`': case '|': case '~': return true;
    default: return false;
  }
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

RequestHead bad(RequestHead h, int status, std::string why) {
  h.state = RequestHead::State::bad;
  h.status = status;
  h.why = std::move(why);
  return h;
}

const char* reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

std::string error_body(int status, std::string_view message, std::string_view hint = {}) {
  std::string code = status == 503 ? "busy" : status == 408 ? "timeout" : status == 413 || status == 414 || status == 431
                                                                              ? "too_large"
                                                                              : "usage";
  std::string esc;
  for (char c : message) {
    if (c == '"' || c == '\\') esc += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    esc += c;
  }
  std::string out = fmt::format(R"({{"ok":false,"error":{{"code":"{}","message":"{}")", code, esc);
  if (!hint.empty()) out += fmt::format(R"(,"hint":"{}")", hint);
  return out + "}}\n";
}

std::string response_text(int status, std::string_view json_body, std::string_view extra_headers) {
  return fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nCache-Control: no-store\r\n"
      "X-Content-Type-Options: nosniff\r\nConnection: close\r\n{}\r\n{}",
      status, reason_phrase(status), json_body.size(), extra_headers, json_body);
}

}  // namespace

RequestHead parse_request_head(std::string_view buf, const HeadLimits& limits) {
  RequestHead h;
  // Empty lines before the request line are ignored (a client may send CRLF after a body).
  size_t p = 0;
  while (p < buf.size()) {
    if (buf[p] == '\n') {
      ++p;
    } else if (buf[p] == '\r' && (p + 1 == buf.size() || buf[p + 1] == '\n')) {
      if (p + 1 == buf.size()) break;
      p += 2;
    } else {
      break;
    }
    if (p > 64) return bad(h, 400, "empty lines instead of a request");
  }
  h.skipped = p;
  std::string_view rest = buf.substr(p);
  if (rest.empty() || (rest.size() == 1 && rest[0] == '\r')) return h;

  // The request line: METHOD SP target SP HTTP/1.x
  size_t nl = rest.find('\n');
  if (nl == std::string_view::npos) {
    if (rest.size() > limits.max_line_bytes) return bad(h, 414, "the request line is too long");
    return h;
  }
  std::string_view line = rest.substr(0, nl);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > limits.max_line_bytes) return bad(h, 414, "the request line is too long");
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos || sp1 == 0 || sp1 > 16 || sp2 == sp1 + 1) {
    return bad(h, 400, "malformed request line");
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!std::all_of(method.begin(), method.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
    return bad(h, 400, "malformed request method");
  }
  if (!std::all_of(target.begin(), target.end(),
                   [](char c) { return static_cast<unsigned char>(c) > 0x20 && c != 0x7f; })) {
    return bad(h, 400, "malformed request target");
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return bad(h, 400, "only HTTP/1.1 and HTTP/1.0 are served");
  h.method = std::string(method);
  h.target = std::string(target);
  h.path = h.target.substr(0, h.target.find_first_of("?#"));
  h.version = std::string(version);

  // Header lines up to the empty line.
  bool have_length = false, have_te = false;
  int hosts = 0;
  size_t headers = 0;
  size_t q = nl + 1;
  while (true) {
    size_t e = rest.find('\n', q);
    if (e == std::string_view::npos) {
      if (rest.size() > limits.max_head_bytes) return bad(h, 431, "the request head is too large");
      return h;
    }
    if (e + 1 > limits.max_head_bytes) return bad(h, 431, "the request head is too large");
    std::string_view hl = rest.substr(q, e - q);
    if (!hl.empty() && hl.back() == '\r') hl.remove_suffix(1);
    if (hl.empty()) {
      h.head_bytes = e + 1;
      break;
    }
    if (++headers > limits.max_headers) return bad(h, 431, "too many header lines");
    if (hl.front() == ' ' || hl.front() == '\t') return bad(h, 400, "folded header lines are not accepted");
    size_t colon = hl.find(':');
    if (colon == std::string_view::npos || colon == 0) return bad(h, 400, "malformed header line");
    std::string_view name = hl.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), is_tchar)) return bad(h, 400, "malformed header name");
    std::string_view value = trim_ows(hl.substr(colon + 1));
    if (std::any_of(value.begin(), value.end(),
                    [](char c) { return (static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f; })) {
      return bad(h, 400, "control characters in a header value");
    }
    if (iequals(name, "Content-Length")) {
      if (have_length) return bad(h, 400, "duplicate Content-Length headers");
      have_length = true;
      if (value.empty() || value.size() > 18 ||
          !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return bad(h, 400, "Content-Length must be one decimal number");
      }
      h.content_length = std::stoull(std::string(value));
      if (h.content_length > limits.max_body_bytes) {
        return bad(h, 413, fmt::format("the request body has {} bytes; at most {} are accepted", h.content_length,
                                       limits.max_body_bytes));
      }
    } else if (iequals(name, "Transfer-Encoding")) {
      have_te = true;
    } else if (iequals(name, "Host")) {
      if (++hosts > 1) return bad(h, 400, "several Host headers");
    } else if (iequals(name, "Expect") && iequals(value, "100-continue")) {
      h.expect_begin = q;
      h.expect_end = e + 1;
    }
    q = e + 1;
  }
  if (have_te && have_length) return bad(h, 400, "Content-Length and Transfer-Encoding together");
  if (have_te) return bad(h, 411, "chunked request bodies are not accepted; send Content-Length");
  if (h.version == "HTTP/1.1" && hosts == 0) return bad(h, 400, "no Host header");
  h.state = RequestHead::State::complete;
  return h;
}

std::string peer_address(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  char buf[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
  } else if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
      ::inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12], buf, sizeof buf);
    } else {
      ::inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
    }
  } else {
    return "local";
  }
  return buf;
}


struct ConnectionStage::Impl {
  struct Conn {
    int fd = -1;
    std::string client;
    std::string buf;
    Clock::time_point since;     // entered the stage (eviction picks the oldest)
    Clock::time_point deadline;
    bool idle = false;           // a kept-alive connection waiting for its next request
    bool body = false;           // the head is complete; the body is arriving
    bool closing = false;        // an error response was sent; input is drained until the deadline
    bool continue_sent = false;  // "100 Continue" answered an Expect header
    RequestHead head;
  };
  struct Message {
    enum class Kind { add, resume, release, refuse } kind;
    int fd = -1;
    std::string client;
    std::string leftover;  // resume: the bytes after the last request; refuse: the response
  };

  ConnectionLimits limits;
  Dispatch dispatch;
  int epfd = -1;
  int evfd = -1;
  std::thread thread;
  std::atomic<bool> started{false};
  std::atomic<bool> stopping{false};

  mutable std::mutex inbox_mu;
  std::vector<Message> inbox;

  // Owned by the stage's thread.
  std::unordered_map<int, Conn> conns;
  std::unordered_map<std::string, int> open_per_client;
  int open_total = 0;

  mutable std::mutex stats_mu;
  ConnectionStats st;

  Impl(ConnectionLimits l, Dispatch d) : limits(l), dispatch(std::move(d)) {
    // Leave room under the open-file limit for the database, the ledgers and the children.
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
      long room = static_cast<long>(rl.rlim_cur) - 256;
      limits.max_total = static_cast<int>(std::clamp<long>(room, 16, limits.max_total));
    }
    limits.max_per_client = std::clamp(limits.max_per_client, 1, limits.max_total);
    epfd = ::epoll_create1(EPOLL_CLOEXEC);
    evfd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = evfd;
    ::epoll_ctl(epfd, EPOLL_CTL_ADD, evfd, &ev);
  }
  ~Impl() {
    if (evfd >= 0) ::close(evfd);
    if (epfd >= 0) ::close(epfd);
  }

  void post(Message msg) {
    {
      std::lock_guard lock(inbox_mu);
      inbox.push_back(std::move(msg));
    }
    uint64_t one = 1;
    (void)!::write(evfd, &one, sizeof one);
  }

  void count(long long ConnectionStats::*field) {
    std::lock_guard lock(stats_mu);
    ++(st.*field);
  }

  void forget(const std::string& client) {
    auto it = open_per_client.find(client);
    if (it != open_per_client.end() && --it->second <= 0) open_per_client.erase(it);
    --open_total;
  }

  void drop(int fd, bool release_count = true) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    ::epoll_ctl(epfd, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    if (release_count) forget(it->second.client);
    conns.erase(it);
  }

  // Sends an error response, then drains the client's input for a moment before closing, so
  // that the response is not lost to a reset (closing a socket with unread input resets it).
  void fail(Conn& c, int status, const std::string& body, const std::string& extra_headers = {}) {
    std::string out = response_text(status, body, extra_headers);
    (void)::send(c.fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::shutdown(c.fd, SHUT_WR);
    c.closing = true;
    c.buf.clear();
    c.deadline = Clock::now() + std::chrono::milliseconds(500);
  }

  // A connection answered with an error without being read (it counts against its client until
  // it is closed).
  void refuse_new(int fd, const std::string& client, int status, const std::string& body,
                  const std::string& extra_headers) {
    Conn c;
    c.fd = fd;
    c.client = client;
    c.since = Clock::now();
    c.closing = true;
    conns[fd] = std::move(c);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    if (::epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
      drop(fd);
      return;
    }
    fail(conns[fd], status, body, extra_headers);
  }

  // The oldest connection in the stage, of `client` (or of anyone when empty).
  int oldest_waiting(const std::string& client) const {
    int best = -1;
    Clock::time_point t = Clock::time_point::max();
    for (const auto& [fd, c] : conns) {
      if (!client.empty() && c.client != client) continue;
      if (c.since < t) {
        t = c.since;
        best = fd;
      }
    }
    return best;
  }

  void watch(Conn&& c) {
    int fd = c.fd;
    conns[fd] = std::move(c);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    if (::epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
      drop(fd);
      return;
    }
    evaluate(conns[fd]);
  }

  void on_add(int fd) {
    count(&ConnectionStats::accepted);
    int flags = ::fcntl(fd, F_GETFL, 0);
    ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    Conn c;
    c.fd = fd;
    c.client = peer_address(fd);
    // Room for it: the same client's oldest waiting connection goes first, then anyone's.
    auto make_room = [&](const std::string& who) {
      int victim = oldest_waiting(who);
      if (victim < 0) return false;
      count(&ConnectionStats::evicted);
      drop(victim);
      return true;
    };
    std::string refusal;
    auto it = open_per_client.find(c.client);
    if (it != open_per_client.end() && it->second >= limits.max_per_client && !make_room(c.client)) {
      refusal = error_body(503,
                           fmt::format("{} connections from {} are being answered; at most {}", limits.max_per_client,
                                       c.client, limits.max_per_client),
                           "close some, or raise croq serve --max-client-connections");
    } else if (open_total >= limits.max_total && !make_room("")) {
      refusal = error_body(503, "the server has too many connections open");
    }
    ++open_per_client[c.client];
    ++open_total;
    if (!refusal.empty()) {
      count(&ConnectionStats::refused);
      refuse_new(fd, c.client, 503, refusal, "Retry-After: 2\r\n");
      return;
    }
    c.since = Clock::now();
    c.deadline = c.since + limits.head_timeout;
    watch(std::move(c));
  }

  void refuse_dispatched(Message& m) {
    count(&ConnectionStats::refused);
    Conn c;
    c.fd = m.fd;
    c.client = m.client;
    c.since = Clock::now();
    c.closing = true;
    conns[m.fd] = std::move(c);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = m.fd;
    if (::epoll_ctl(epfd, EPOLL_CTL_ADD, m.fd, &ev) != 0) {
      drop(m.fd);
      return;
    }
    Conn& in = conns[m.fd];
    (void)::send(in.fd, m.leftover.data(), m.leftover.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::shutdown(in.fd, SHUT_WR);
    in.deadline = Clock::now() + std::chrono::milliseconds(500);
  }

  void on_resume(Message& m) {
    Conn c;
    c.fd = m.fd;
    c.client = m.client;
    c.buf = std::move(m.leftover);
    c.since = Clock::now();
    c.idle = c.buf.empty();
    c.deadline = c.since + (c.idle ? limits.idle_timeout : limits.head_timeout);
    watch(std::move(c));
  }

  void evaluate(Conn& c) {
    if (c.closing) return;
    if (!c.body) {
      if (c.buf.empty()) return;
      RequestHead h = parse_request_head(c.buf, limits.head);
      if (h.state == RequestHead::State::incomplete) return;
      if (h.state == RequestHead::State::bad) {
        count(&ConnectionStats::bad_requests);
        fail(c, h.status, error_body(h.status, h.why));
        return;
      }
      c.head = std::move(h);
      c.body = true;
      c.deadline = Clock::now() + limits.body_timeout;
    }
    const size_t total = c.head.skipped + c.head.head_bytes + c.head.content_length;
    bool expect = c.head.expect_end > c.head.expect_begin;
    if (c.buf.size() < total) {
      if (expect && c.head.content_length > 0 && !c.continue_sent) {
        static const char k_continue[] = "HTTP/1.1 100 Continue\r\n\r\n";
        (void)::send(c.fd, k_continue, sizeof k_continue - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        c.continue_sent = true;
      }
      return;
    }
    Admitted a;
    a.fd = c.fd;
    a.client = c.client;
    a.head = c.head;
    a.bytes = c.buf.substr(c.head.skipped);
    a.request_bytes = c.head.head_bytes + c.head.content_length;
    if (expect) {  // the library would answer it again
      a.bytes.erase(a.head.expect_begin, a.head.expect_end - a.head.expect_begin);
      a.request_bytes -= a.head.expect_end - a.head.expect_begin;
    }
    const int fd = c.fd;
    ::epoll_ctl(epfd, EPOLL_CTL_DEL, fd, nullptr);
    conns.erase(fd);
    dispatch(std::move(a));
  }

  void on_readable(int fd) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    Conn& c = it->second;
    char chunk[65536];
    ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      drop(fd);
      return;
    }
    if (n < 0) return;
    if (c.closing) return;  // drained
    if (c.idle) {
      c.idle = false;
      c.deadline = Clock::now() + limits.head_timeout;
    }
    c.buf.append(chunk, static_cast<size_t>(n));
    // A head is complete (or refused) only at a line end, or past the size limits: a client
    // that trickles bytes is not parsed again for each one.
    if (!c.body && std::memchr(chunk, '\n', static_cast<size_t>(n)) == nullptr &&
        c.buf.size() <= limits.head.max_line_bytes) {
      return;
    }
    evaluate(c);
  }

  void expire() {
    auto now = Clock::now();
    std::vector<int> late;
    for (const auto& [fd, c] : conns) {
      if (now >= c.deadline) late.push_back(fd);
    }
    for (int fd : late) {
      Conn& c = conns[fd];
      if (c.closing || c.idle || c.buf.empty()) {
        if (!c.closing && !c.idle) count(&ConnectionStats::timed_out);
        drop(fd);
      } else {
        count(&ConnectionStats::timed_out);
        fail(c, 408, error_body(408, c.body ? "the request body did not arrive in time"
                                            : "the request head did not arrive in time"));
      }
    }
  }

  void loop() {
    std::vector<epoll_event> events(256);
    auto last_expiry = Clock::now();
    while (!stopping) {
      int n = ::epoll_wait(epfd, events.data(), static_cast<int>(events.size()), 100);
      for (int i = 0; i < n; ++i) {
        int fd = events[static_cast<size_t>(i)].data.fd;
        if (fd == evfd) {
          uint64_t v;
          (void)!::read(evfd, &v, sizeof v);
          continue;
        }
        on_readable(fd);
      }
      std::vector<Message> msgs;
      {
        std::lock_guard lock(inbox_mu);
        msgs.swap(inbox);
      }
      for (auto& m : msgs) {
        switch (m.kind) {
          case Message::Kind::add: on_add(m.fd); break;
          case Message::Kind::resume: on_resume(m); break;
          case Message::Kind::release: forget(m.client); break;
          case Message::Kind::refuse: refuse_dispatched(m); break;
        }
      }
      if (Clock::now() - last_expiry > std::chrono::milliseconds(50)) {
        expire();
        last_expiry = Clock::now();
      }
      std::lock_guard lock(stats_mu);
      st.waiting = static_cast<int>(conns.size());
      st.open = open_total;
    }
    for (auto& [fd, c] : conns) ::close(fd);
    conns.clear();
    std::lock_guard lock(inbox_mu);
    for (auto& m : inbox) {
      if (m.kind != Message::Kind::release) ::close(m.fd);
    }
    inbox.clear();
  }
};

ConnectionStage::ConnectionStage(ConnectionLimits limits, Dispatch dispatch)
    : m(std::make_unique<Impl>(limits, std::move(dispatch))) {}

ConnectionStage::~ConnectionStage() { stop(); }

void ConnectionStage::start() {
  if (m->started.exchange(true)) return;
  m->thread = std::thread([this] { m->loop(); });
}

void ConnectionStage::stop() {
  if (m->stopping.exchange(true)) return;
  uint64_t one = 1;
  (void)!::write(m->evfd, &one, sizeof one);
  if (m->thread.joinable()) m->thread.join();
}

void ConnectionStage::add(int fd) {
  if (m->stopping) {
    ::close(fd);
    return;
  }
  m->post({Impl::Message::Kind::add, fd, {}, {}});
}

void ConnectionStage::resume(int fd, std::string client, std::string leftover) {
  if (m->stopping) {
    ::close(fd);
    return;
  }
  m->post({Impl::Message::Kind::resume, fd, std::move(client), std::move(leftover)});
}

void ConnectionStage::refuse(int fd, std::string client, int status, std::string_view json_body,
                             std::string_view extra_headers) {
  if (m->stopping) {
    ::close(fd);
    return;
  }
  m->post({Impl::Message::Kind::refuse, fd, std::move(client), response_text(status, json_body, extra_headers)});
}

void ConnectionStage::release(const std::string& client) { m->post({Impl::Message::Kind::release, -1, client, {}}); }

ConnectionStats ConnectionStage::stats() const {
  std::lock_guard lock(m->stats_mu);
  return m->st;
}

const ConnectionLimits& ConnectionStage::limits() const { return m->limits; }

}  // namespace croq::web
