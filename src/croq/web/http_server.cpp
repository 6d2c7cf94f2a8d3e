// Routes, checks and the event stream of the monitor (http_server.hpp).
#include "croq/web/http_server.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <httplib.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/util/hash.hpp"
#include "croq/util/text.hpp"
#include "croq/web/assets.hpp"
#include "croq/web/charts.hpp"
#include "croq/web/connections.hpp"
#include "croq/web/pages.hpp"

namespace croq::web {

namespace {

using httplib::Request;
using httplib::Response;

constexpr const char* k_uid = "([A-Za-z0-9_.-]{1,128})";
constexpr uint64_t k_max_file_bytes = 8u << 20;

int http_status(ExitCode code) {
  switch (code) {
    case ExitCode::usage: return 400;
    case ExitCode::not_found: return 404;
    case ExitCode::conflict: return 409;
    case ExitCode::refused: return 409;
    case ExitCode::busy: return 503;
    default: return 500;
  }
}

void send_json(Response& res, const json& doc, int status = 200) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(dump_compact(doc) + "\n", "application/json");
}

void send_error(Response& res, int status, const std::string& code, const std::string& message,
                const std::string& hint = {}) {
  json e = {{"code", code}, {"message", message}};
  if (!hint.empty()) e["hint"] = hint;
  send_json(res, {{"ok", false}, {"error", e}}, status);
}

void send_html(Response& res, const std::string& html, int status = 200) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(html, "text/html; charset=utf-8");
}

json parse_body(const Request& req) {
  if (req.body.empty()) return json::object();
  std::string err;
  auto j = try_parse_json(req.body, &err);
  if (!j) throw_usage("the request body is not valid JSON: " + preview(err, 160), "send one JSON object");
  if (!j->is_object()) throw_usage("the request body must be a JSON object");
  return *j;
}

int int_param(const Request& req, const char* name, int fallback, int lo, int hi) {
  if (!req.has_param(name)) return fallback;
  std::string v = req.get_param_value(name);
  try {
    size_t used = 0;
    long long n = std::stoll(v, &used);
    if (used != v.size() || n < lo || n > hi) throw std::out_of_range("range");
    return static_cast<int>(n);
  } catch (const std::exception&) {
    throw_usage(fmt::format("query parameter {} must be a whole number in [{}, {}]", name, lo, hi));
  }
}

// The path of a request without the token parameter (after a token login).
std::string without_token(const Request& req) {
  std::string q;
  for (const auto& [k, v] : req.params) {
    if (k == "token") continue;
    q += (q.empty() ? "?" : "&") + httplib::detail::encode_query_param(k) + "=" + httplib::detail::encode_query_param(v);
  }
  return req.path + q;
}

bool is_mutation(const std::string& method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

// httplib's server with its connection handling replaced: accepted sockets go to the
// ConnectionStage (connections.hpp), and whole requests are answered here by the library's own
// request processing (parsing, routing, the handlers, the response) on a RequestStream.
class CroqServer : public httplib::Server {
 public:
  std::function<void(int)> on_accept;
  bool answer(httplib::Stream& strm, bool close_connection, bool& connection_closed) {
    return process_request(strm, close_connection, connection_closed, nullptr);
  }
  // The library listens with a backlog of 5: a burst of connections would overflow it and make
  // every client, health checks included, wait for SYN retries (1 s, 3 s, ...). Listening again
  // on the bound socket raises it.
  void raise_backlog() {
    socket_t s = svr_sock_;
    if (s != INVALID_SOCKET) ::listen(s, SOMAXCONN);
  }

 private:
  bool process_and_close_socket(socket_t sock) override {
    on_accept(sock);
    return true;
  }
};

// The accept loop hands each socket over at once (on_accept never blocks).
class InlineQueue : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

// One request, already read whole by the stage, then the (non-blocking) socket for the response.
class RequestStream : public httplib::Stream {
 public:
  RequestStream(int fd, std::string_view request, int write_timeout_ms)
      : m_fd(fd), m_request(request), m_timeout_ms(write_timeout_ms) {}
  bool is_readable() const override { return m_pos < m_request.size(); }
  bool is_writable() const override {
    pollfd p{m_fd, POLLOUT, 0};
    if (::poll(&p, 1, m_timeout_ms) <= 0 || !(p.revents & POLLOUT)) return false;
    // Alive: nothing to read, more bytes, or a would-block; 0 means the client has gone.
    char b;
    ssize_t n = ::recv(m_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
  }
  ssize_t read(char* ptr, size_t size) override {
    size_t n = std::min(size, m_request.size() - m_pos);
    std::memcpy(ptr, m_request.data() + m_pos, n);
    m_pos += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    size_t done = 0;
    while (done < size) {
      ssize_t n = ::send(m_fd, ptr + done, size - done, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        done += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pollfd p{m_fd, POLLOUT, 0};
        if (::poll(&p, 1, m_timeout_ms) > 0 && (p.revents & POLLOUT)) continue;
      }
      return done > 0 ? static_cast<ssize_t>(done) : -1;
    }
    return static_cast<ssize_t>(done);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { address(true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address(false, ip, port); }
  socket_t socket() const override { return m_fd; }

 private:
  void address(bool peer, std::string& ip, int& port) const {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    int r = peer ? ::getpeername(m_fd, reinterpret_cast<sockaddr*>(&ss), &len)
                 : ::getsockname(m_fd, reinterpret_cast<sockaddr*>(&ss), &len);
    if (r != 0) return;
    char buf[INET6_ADDRSTRLEN] = {0};
    if (ss.ss_family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(&ss);
      ::inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
      port = ntohs(a->sin_port);
    } else if (ss.ss_family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
      ::inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
      port = ntohs(a->sin6_port);
    }
    ip = buf;
  }
  int m_fd;
  std::string_view m_request;
  size_t m_pos = 0;
  int m_timeout_ms;
};

// Threads started on demand up to `max_threads`; at most `max_queue` jobs wait.
class WorkerPool {
 public:
  WorkerPool(size_t max_threads, size_t max_queue) : m_max_threads(max_threads), m_max_queue(max_queue) {}
  ~WorkerPool() { stop(); }
  bool submit(std::function<void()> job) {
    std::lock_guard lock(m_mu);
    if (m_stopping || m_jobs.size() >= m_max_queue) return false;
    m_jobs.push_back(std::move(job));
    if (m_idle == 0 && m_threads.size() < m_max_threads) {
      m_threads.emplace_back([this] { work(); });
    } else {
      m_cv.notify_one();
    }
    return true;
  }
  // Runs what is queued, then joins.
  void stop() {
    {
      std::lock_guard lock(m_mu);
      if (m_stopping && m_threads.empty()) return;
      m_stopping = true;
    }
    m_cv.notify_all();
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(m_mu);
      threads.swap(m_threads);
    }
    for (auto& t : threads) t.join();
  }

 private:
  void work() {
    std::unique_lock lock(m_mu);
    while (true) {
      ++m_idle;
      m_cv.wait(lock, [&] { return m_stopping || !m_jobs.empty(); });
      --m_idle;
      if (m_jobs.empty()) return;
      auto job = std::move(m_jobs.front());
      m_jobs.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }
  size_t m_max_threads, m_max_queue;
  std::mutex m_mu;
  std::condition_variable m_cv;
  std::deque<std::function<void()>> m_jobs;
  std::vector<std::thread> m_threads;
  size_t m_idle = 0;
  bool m_stopping = false;
};

// An owned file descriptor.
class Fd {
 public:
  explicit Fd(int fd) : m_fd(fd) {}
  ~Fd() {
    if (m_fd >= 0) ::close(m_fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return m_fd; }

 private:
  int m_fd;
};

// Opens `sub` (relative, '/'-separated) below the folder `base` for reading, never leaving it:
// openat2 with RESOLVE_BENEATH (Linux 5.6+); on older kernels, the resolved path must stay under
// the resolved base and the last component must not be a link. Never blocks on a FIFO.
int open_beneath(const fs::path& base, const std::string& sub) {
  const int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  int dir = ::open(base.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) throw_not_found("no such folder");
  Fd dir_fd(dir);
  open_how how{};
  how.flags = static_cast<uint64_t>(flags);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  long fd = ::syscall(SYS_openat2, dir, sub.c_str(), &how, sizeof how);
  if (fd >= 0) return static_cast<int>(fd);
  if (errno == EXDEV || errno == ELOOP) throw Error(ExitCode::refused, "that path leads outside the task's folder");
  if (errno != ENOSYS && errno != EPERM) throw_not_found("no such file");
  std::error_code ec;
  fs::path real = fs::weakly_canonical(base / sub, ec);
  auto d = base.begin();
  auto q = real.begin();
  for (; d != base.end(); ++d, ++q) {
    if (ec || q == real.end() || *d != *q) throw Error(ExitCode::refused, "that path leads outside the task's folder");
  }
  int f = ::open(real.c_str(), flags | O_NOFOLLOW);
  if (f < 0) throw_not_found("no such file");
  return f;
}

// A file or folder of a task's artifact tree, for GET .../files/<kind>/<path>.
void serve_task_file(Monitor& m, const TaskRow& row, const std::string& rel, Response& res) {
  const Workspace& ws = m.workspace();
  TaskRef task = make_task(row.gpu, row.dsl, row.shape_key, row.model);
  if (rel.empty()) {
    json kinds = json::array();
    for (auto k : all_artifact_kinds()) {
      std::error_code ec;
      if (fs::is_directory(ws.kind_dir(task, k), ec)) kinds.push_back(artifact_kind_name(k));
    }
    send_json(res, {{"task", row.uid}, {"kinds", kinds}});
    return;
  }
  std::vector<std::string> parts;
  size_t p = 0;
  while (p <= rel.size()) {
    size_t e = rel.find('/', p);
    parts.push_back(rel.substr(p, e == std::string::npos ? std::string::npos : e - p));
    if (e == std::string::npos) break;
    p = e + 1;
  }
  if (!parts.empty() && parts.back().empty()) parts.pop_back();  // a trailing slash
  std::optional<ArtifactKind> kind;
  for (auto k : all_artifact_kinds()) {
    if (!parts.empty() && parts[0] == artifact_kind_name(k)) kind = k;
  }
  if (!kind) {
    throw_not_found(fmt::format("'{}' is not an artifact folder", preview(parts.empty() ? "" : parts[0], 40)),
                    "folders: srcs bin cmd perf logs checkpoints baseline memory");
  }
  fs::path base = ws.kind_dir(task, *kind);
  fs::path target = base;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    if (part.empty() || part == "." || part == ".." || part.find('\\') != std::string::npos ||
        part.find('\0') != std::string::npos) {
      throw_usage("a file path must not contain empty, '.' or '..' components");
    }
    target /= part;
  }
  // The artifact folder itself must lie in the workspace. Below it the path is opened in one
  // step with RESOLVE_BENEATH: a symlink may lead elsewhere inside the folder, never out of it,
  // and nothing can be swapped between a check and the open. A file with several hard links is
  // refused, since another of its names may lie anywhere on the same file system.
  std::error_code ec;
  fs::path real_base = fs::weakly_canonical(base, ec);
  if (ec || !ws.contains(real_base)) throw Error(ExitCode::refused, "that path leads outside the task's folder");
  std::string sub = ".";
  for (size_t i = 1; i < parts.size(); ++i) sub += "/" + parts[i];
  Fd fd(open_beneath(real_base, sub));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_not_found("no such file");
  if (S_ISDIR(st.st_mode)) {
    json entries = json::array();
    DIR* d = ::fdopendir(::dup(fd.get()));
    if (!d) throw_not_found("cannot list that folder");
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      struct stat es {};
      bool known = ::fstatat(fd.get(), e->d_name, &es, 0) == 0;
      bool dir = known && S_ISDIR(es.st_mode);
      json item = {{"name", name}, {"type", dir ? "dir" : "file"}};
      if (!dir) item["bytes"] = known && S_ISREG(es.st_mode) ? static_cast<long long>(es.st_size) : 0;
      entries.push_back(item);
    }
    ::closedir(d);
    std::sort(entries.begin(), entries.end(),
              [](const json& a, const json& b) { return a["name"].get<std::string>() < b["name"].get<std::string>(); });
    send_json(res, {{"task", row.uid}, {"path", rel}, {"entries", entries}});
    return;
  }
  if (!S_ISREG(st.st_mode)) throw_not_found("not a regular file");
  if (st.st_nlink > 1) {
    throw Error(ExitCode::refused,
                fmt::format("that file has {} hard links; a file with more than one name is not served", st.st_nlink),
                "copy the file into the task's folder instead of linking it");
  }
  if (static_cast<uint64_t>(st.st_size) > k_max_file_bytes) {
    throw Error(ExitCode::usage, fmt::format("the file has {} bytes; at most {} are served", st.st_size, k_max_file_bytes));
  }
  std::string content;
  char buf[65536];
  while (content.size() <= k_max_file_bytes) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    content.append(buf, static_cast<size_t>(n));
  }
  if (content.size() > k_max_file_bytes) throw Error(ExitCode::usage, "the file grew past the size served");
  res.set_header("Cache-Control", "no-store");
  // Never as HTML: a kernel source or a log is shown as text whatever it contains.
  if (is_valid_utf8(content)) {
    res.set_content(content, "text/plain; charset=utf-8");
  } else {
    res.set_header("Content-Disposition", "attachment");
    res.set_content(content, "application/octet-stream");
  }
}

}  // namespace

struct HttpServer::Impl {
  Monitor& monitor;
  HttpOptions options;
  CroqServer svr;
  int port = 0;
  std::mutex etags_mu;
  std::map<std::string, std::string> etags;

  // Connections: the stage reads requests whole; the API and the event streams have threads of
  // their own, so streams cannot take the API's.
  ConnectionStage stage;
  WorkerPool api_pool;
  WorkerPool stream_pool;
  std::mutex streams_mu;
  std::map<std::string, int> streams_of;  // open event streams per client address
  int streams = 0;
  std::mutex serving_mu;
  std::set<int> serving;  // sockets a worker is answering on
  std::atomic<bool> stopping{false};
  std::atomic<bool> shut{false};

  static ConnectionLimits connection_limits(const HttpOptions& o) {
    ConnectionLimits l;
    l.head.max_body_bytes = o.max_body_bytes;
    l.head_timeout = o.head_timeout;
    l.body_timeout = o.body_timeout;
    l.idle_timeout = std::chrono::seconds(o.keepalive_seconds);
    l.max_per_client = o.max_client_connections;
    return l;
  }

  Impl(Monitor& m, HttpOptions o)
      : monitor(m),
        options(std::move(o)),
        stage(connection_limits(options), [this](Admitted&& a) { dispatch(std::move(a)); }),
        api_pool(static_cast<size_t>(std::max(1, options.threads)), 4096),
        stream_pool(static_cast<size_t>(std::max(1, options.max_streams)), static_cast<size_t>(std::max(1, options.max_streams))) {}

  // On the stage's thread: a whole request goes to a worker, or is refused at once.
  void dispatch(Admitted&& in) {
    const int fd = in.fd;
    const std::string client = in.client;
    const bool stream = in.head.method == "GET" && in.head.path == "/api/v1/events";
    auto a = std::make_shared<Admitted>(std::move(in));
    auto refuse = [&](const std::string& message, const std::string& hint) {
      json e = {{"ok", false}, {"error", {{"code", "busy"}, {"message", message}, {"hint", hint}}}};
      stage.refuse(fd, client, 503, dump_compact(e) + "\n", "Retry-After: 5\r\n");
    };
    if (stream) {
      std::string why;
      {
        std::lock_guard lock(streams_mu);
        int mine = streams_of.count(client) ? streams_of[client] : 0;
        if (mine >= options.max_streams_per_client) {
          why = fmt::format("{} event streams are open from {}; at most {}", mine, client, options.max_streams_per_client);
        } else if (streams >= options.max_streams) {
          why = fmt::format("{} event streams are open; at most {}", streams, options.max_streams);
        } else {
          ++streams_of[client];
          ++streams;
        }
      }
      if (!why.empty()) {
        refuse(why, "close other pages of this monitor, or raise croq serve --max-streams / --max-client-streams");
        return;
      }
      if (!stream_pool.submit([this, a] { serve(*a, true); })) {
        end_stream(client);
        refuse("the server is stopping", "try again later");
      }
      return;
    }
    if (!api_pool.submit([this, a] { serve(*a, false); })) {
      refuse("too many requests are waiting", "try again in a moment");
    }
  }

  void end_stream(const std::string& client) {
    std::lock_guard lock(streams_mu);
    auto it = streams_of.find(client);
    if (it != streams_of.end() && --it->second <= 0) streams_of.erase(it);
    --streams;
  }

  // On a worker: the library reads the request from the stage's bytes and writes the response.
  void serve(Admitted& a, bool stream) {
    {
      std::lock_guard lock(serving_mu);
      serving.insert(a.fd);
    }
    RequestStream strm(a.fd, std::string_view(a.bytes).substr(0, a.request_bytes), options.write_timeout_ms);
    const bool close = stream || stopping;
    bool closed = false;
    bool ok = false;
    try {
      ok = svr.answer(strm, close, closed);
    } catch (...) {
      ok = false;
    }
    if (stream) end_stream(a.client);
    {
      std::lock_guard lock(serving_mu);
      serving.erase(a.fd);
    }
    if (ok && !close && !closed && !stopping) {
      stage.resume(a.fd, a.client, a.bytes.substr(a.request_bytes));
    } else {
      ::shutdown(a.fd, SHUT_WR);
      ::close(a.fd);
      stage.release(a.client);
    }
  }

  // Stops accepting, closes the connections waiting in the stage, wakes the workers (their
  // sockets are shut down so a stream's next write fails) and joins them.
  void shutdown_all() {
    if (shut.exchange(true)) return;
    stopping = true;
    stage.stop();
    {
      std::lock_guard lock(serving_mu);
      for (int fd : serving) ::shutdown(fd, SHUT_RDWR);
    }
    api_pool.stop();
    stream_pool.stop();
  }

  TaskRow task_or_404(const std::string& uid) {
    auto row = monitor.db().task(uid);
    if (!row) throw_not_found(fmt::format("no task {}", preview(uid, 40)), "GET /api/v1/tasks lists them");
    return *row;
  }

  // Files and logs of another server's task are on that machine, not under this workspace (where
  // a task of the same key may be this server's own).
  void require_here(const TaskRow& row, const char* what) const {
    if (monitor.owns(row)) return;
    throw Error(ExitCode::not_found,
                fmt::format("task {} belongs to {}: {} are on that machine", row.uid,
                            row.owner.empty() ? std::string("no server yet") : "server " + row.owner, what),
                row.owner.empty() ? std::string("the server whose workspace holds it claims it at its next scan")
                                  : "open the monitor of " + row.owner + " for them");
  }

  httplib::Server::HandlerResponse check(const Request& req, Response& res) {
    // cpp-httplib prefers brotli whenever a client accepts it and compresses at brotli's
    // slowest setting (seconds for a task page); gzip is as good for these pages at a fraction
    // of the cost. The request object is httplib's own, mutable one, handed to us as const.
    if (req.has_header("Accept-Encoding")) {
      std::string enc = req.get_header_value("Accept-Encoding");
      if (enc.find("br") != std::string::npos) {
        std::string kept;
        for (const auto& part : split_kinds(enc)) {
          if (trim(part.substr(0, part.find(';'))) == "br") continue;
          kept += (kept.empty() ? "" : ", ") + part;
        }
        auto& headers = const_cast<Request&>(req).headers;
        headers.erase("Accept-Encoding");
        if (!kept.empty()) headers.emplace("Accept-Encoding", kept);
      }
    }
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("X-Frame-Options", "DENY");
    res.set_header("Referrer-Policy", "no-referrer");
    res.set_header("Content-Security-Policy",
                   "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                   "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'");
    const AuthConfig& auth = options.auth;
    if (auth.required) {
      std::string token;
      std::string from;
      std::string authz = req.get_header_value("Authorization");
      if (starts_with(authz, "Bearer ")) {
        token = trim(authz.substr(7));
        from = "header";
      } else if (std::string c = cookie_value(req.get_header_value("Cookie"), "croq_token"); !c.empty()) {
        token = c;
        from = "cookie";
      } else if (req.has_param("token")) {
        token = req.get_param_value("token");
        from = "query";
      }
      if (!tokens_equal(token, auth.token)) {
        res.set_header("WWW-Authenticate", "Bearer realm=\"croq\"");
        if (starts_with(req.path, "/api/") || starts_with(req.path, "/fragments/") || starts_with(req.path, "/static/")) {
          send_error(res, 401, "unauthorized",
                     token.empty() ? "this monitor needs a token" : "the token is not this monitor's",
                     "send Authorization: Bearer <token> (docs/monitor.md)");
        } else {
          send_html(res,
                    page_message("Token needed",
                                 "This croq monitor needs its token. Open this address with <code>?token=&lt;the "
                                 "token&gt;</code> once; the browser then keeps it in a cookie."),
                    401);
        }
        return httplib::Server::HandlerResponse::Handled;
      }
      if (from == "query" && req.method == "GET" && !starts_with(req.path, "/api/")) {
        bool https = req.get_header_value("X-Forwarded-Proto") == "https";
        res.set_header("Set-Cookie", fmt::format("croq_token={}; Path=/; HttpOnly; SameSite=Strict{}", token,
                                                 https ? "; Secure" : ""));
        res.set_redirect(without_token(req), 303);
        return httplib::Server::HandlerResponse::Handled;
      }
    } else {
      // No token: only a page that names the loopback interface may talk to us (DNS rebinding).
      std::string host = host_of_header(req.get_header_value("Host"));
      if (!host.empty() && !is_loopback_host(host)) {
        send_error(res, 403, "forbidden", fmt::format("Host '{}' is not this loopback-only monitor", preview(host, 60)),
                   "to serve other names (a reverse proxy), start croq serve with --token-file");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    // A browser names the page that sent a request in Origin (every cross-origin request, and
    // same-origin ones that change something): only this server's own pages are answered. The
    // origin is compared with Host as the client sent it; X-Forwarded-Host is a header any
    // client can set, so it is never trusted here.
    std::string origin = req.get_header_value("Origin");
    if (req.has_header("Origin") && !same_origin(origin, req.get_header_value("Host"))) {
      send_error(res, 403, "forbidden", fmt::format("cross-origin request from {}", preview(origin, 80)),
                 "open the monitor's own address; behind a reverse proxy, forward the Host header unchanged");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (is_mutation(req.method)) {
      // Starting a process or changing a task needs the token, on loopback too: any local user
      // can reach a loopback port.
      if (!auth.required) {
        send_error(res, 403, "token_required",
                   "this monitor has no token: requests that add, start or change a task need one",
                   "restart it with a token: openssl rand -hex 32 > ~/.croq-token && chmod 600 ~/.croq-token && "
                   "croq serve --token-file ~/.croq-token; then send Authorization: Bearer <token>, or open "
                   "the dashboard once with ?token=<token> (docs/monitor.md)");
        return httplib::Server::HandlerResponse::Handled;
      }
      std::string ct = to_lower(req.get_header_value("Content-Type"));
      if (!starts_with(ct, "application/json")) {
        send_error(res, 415, "unsupported_media_type", "requests that change something must be JSON",
                   "send Content-Type: application/json");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  }

  // Runs a handler, turning croq errors into JSON error responses.
  template <class F>
  httplib::Server::Handler guarded(F f) {
    return [f](const Request& req, Response& res) {
      try {
        f(req, res);
      } catch (const Error& e) {
        send_error(res, http_status(e.code()), exit_code_name(e.code()), e.what(), e.hint());
      } catch (const json::exception& e) {
        send_error(res, 400, "usage", std::string("bad JSON value: ") + e.what());
      } catch (const std::exception& e) {
        send_error(res, 500, "internal", e.what());
      }
    };
  }

  void routes() {
    // ---- pages ----
    svr.Get("/", guarded([this](const Request& req, Response& res) {
      ListQuery q;
      q.state = req.get_param_value("state");
      send_html(res, page_tasks(monitor, q));
    }));
    svr.Get(std::string("/tasks/") + k_uid, guarded([this](const Request& req, Response& res) {
      auto row = monitor.db().task(req.matches[1]);
      if (!row) {
        send_html(res, page_message("No such task", "There is no task with that uid. <a href=\"/\">All tasks</a>"), 404);
        return;
      }
      send_html(res, page_task(monitor, *row, req.get_param_value("rounds") == "all"));
    }));
    svr.Get(std::string("/tasks/") + k_uid + "/source/(iter[0-9]{3,6}_[a-z][a-z0-9_]{0,40})",
            guarded([this](const Request& req, Response& res) {
              auto row = monitor.db().task(req.matches[1]);
              if (!row) {
                send_html(res, page_message("No such task", "There is no task with that uid. <a href=\"/\">All tasks</a>"), 404);
                return;
              }
              send_html(res, page_source(monitor, *row, req.matches[2]));
            }));
    svr.Get("/add", guarded([this](const Request&, Response& res) { send_html(res, page_add(monitor)); }));
    svr.Get("/system", guarded([this](const Request&, Response& res) { send_html(res, page_system(monitor)); }));
    svr.Get("/static/([A-Za-z0-9._-]{1,64})", guarded([this](const Request& req, Response& res) {
      std::string name = req.matches[1];
      const Asset* a = find_asset(name);
      if (!a) throw_not_found("no such asset");
      std::string tag;
      {
        std::lock_guard lock(etags_mu);
        auto& t = etags[name];
        if (t.empty()) t = "\"" + sha256_hex(a->data).substr(0, 16) + "\"";
        tag = t;
      }
      res.set_header("ETag", tag);
      res.set_header("Cache-Control", "no-cache");
      if (req.get_header_value("If-None-Match") == tag) {
        res.status = 304;
        return;
      }
      res.set_content(std::string(a->data), asset_content_type(name).c_str());
    }));

    // ---- fragments (swapped in by app.js) ----
    svr.Get("/fragments/tasks", guarded([this](const Request& req, Response& res) {
      ListQuery q;
      q.state = req.get_param_value("state");
      send_html(res, fragment_task_rows(monitor, q));
    }));
    svr.Get(std::string("/fragments/tasks/") + k_uid + "/head", guarded([this](const Request& req, Response& res) {
      send_html(res, fragment_task_head(monitor, task_or_404(req.matches[1])));
    }));
    svr.Get(std::string("/fragments/tasks/") + k_uid + "/ideas", guarded([this](const Request& req, Response& res) {
      send_html(res, fragment_ideas(monitor, task_or_404(req.matches[1])));
    }));
    svr.Get(std::string("/fragments/tasks/") + k_uid + "/rounds", guarded([this](const Request& req, Response& res) {
      TaskRow row = task_or_404(req.matches[1]);
      RoundQuery q;
      q.after_seq = int_param(req, "after_seq", -1, -1, 1 << 30);
      auto rows = monitor.db().rounds(row.uid, q);
      res.set_header("X-Last-Seq", std::to_string(rows.empty() ? q.after_seq : rows.back().seq));
      send_html(res, fragment_rounds(rows, row.uid));
    }));
    svr.Get("/fragments/system", guarded([this](const Request&, Response& res) {
      send_html(res, fragment_system(monitor));
    }));

    // ---- API ----
    svr.Get("/api/v1/health", guarded([this](const Request&, Response& res) {
      send_json(res, {{"ok", true}, {"root", monitor.workspace().root().string()}, {"last_event", monitor.bus().last_id()}});
    }));
    svr.Get("/api/v1/tasks", guarded([this](const Request& req, Response& res) {
      std::string state = req.get_param_value("state");
      json list = json::array();
      for (const auto& r : monitor.db().tasks()) {
        if (state.empty() || r.state == state) list.push_back(monitor.task_json(r));
      }
      send_json(res, {{"ok", true}, {"tasks", list}});
    }));
    svr.Post("/api/v1/tasks", guarded([this](const Request& req, Response& res) {
      TaskRow row = monitor.create_task(parse_body(req));
      res.set_header("Location", "/api/v1/tasks/" + row.uid);
      send_json(res, {{"ok", true}, {"task", monitor.task_json(row)}}, 201);
    }));
    svr.Get(std::string("/api/v1/tasks/") + k_uid, guarded([this](const Request& req, Response& res) {
      TaskRow row = task_or_404(req.matches[1]);
      json doc = {{"ok", true}, {"task", monitor.task_json(row)}};
      doc["history"] = monitor.db().history(row.uid, 20);
      json requests = json::array();
      for (const auto& q : monitor.db().task_requests(row.uid)) requests.push_back(q.to_json());
      doc["requests"] = requests;
      send_json(res, doc);
    }));
    svr.Patch(std::string("/api/v1/tasks/") + k_uid, guarded([this](const Request& req, Response& res) {
      TaskRow row = monitor.update_task(req.matches[1], parse_body(req));
      send_json(res, {{"ok", true}, {"task", monitor.task_json(row)}});
    }));
    svr.Post(std::string("/api/v1/tasks/") + k_uid + "/(pause|resume|cancel|retry)",
             guarded([this](const Request& req, Response& res) {
               (void)parse_body(req);
               ActResult done = monitor.act(req.matches[1], req.matches[2]);
               if (done.request) {
                 // Another server's task: recorded for its owner, whose scheduler carries it out.
                 send_json(res,
                           {{"ok", true},
                            {"task", monitor.task_json(done.task)},
                            {"request", done.request->to_json()},
                            {"message", fmt::format("task {} belongs to server {}: the request is recorded and that "
                                                    "server carries it out at its next poll",
                                                    done.task.uid, done.task.owner)}},
                           202);
                 return;
               }
               send_json(res, {{"ok", true}, {"task", monitor.task_json(done.task)}});
             }));
    svr.Get(std::string("/api/v1/tasks/") + k_uid + "/rounds", guarded([this](const Request& req, Response& res) {
      TaskRow row = task_or_404(req.matches[1]);
      RoundQuery q;
      q.after_seq = int_param(req, "after_seq", -1, -1, 1 << 30);
      q.limit = int_param(req, "limit", 0, 0, 1000000);
      q.newest_first = req.get_param_value("order") == "desc";
      q.decision = req.get_param_value("decision");
      q.bottleneck = req.get_param_value("bottleneck");
      q.category = req.get_param_value("category");
      q.text = req.get_param_value("q");
      json list = json::array();
      for (const auto& r : monitor.db().rounds(row.uid, q)) list.push_back(r.to_json());
      send_json(res, {{"ok", true}, {"task", row.uid}, {"rounds", list}});
    }));
    svr.Get(std::string("/api/v1/tasks/") + k_uid + "/ideas", guarded([this](const Request& req, Response& res) {
      TaskRow row = task_or_404(req.matches[1]);
      json list = json::array();
      for (const auto& r : monitor.db().rounds(row.uid)) {
        if (r.idea.empty()) continue;
        list.push_back({{"round", r.round}, {"iter", r.iter}, {"kernel", r.kernel}, {"category", r.category},
                        {"bottleneck", r.bottleneck}, {"expected_gain", r.expected_gain}, {"decision", r.decision},
                        {"tflops", r.tflops ? json(*r.tflops) : json(nullptr)}, {"idea", r.idea},
                        {"timestamp", r.timestamp}});
      }
      send_json(res, {{"ok", true}, {"task", row.uid}, {"ideas", list}});
    }));
    svr.Get(std::string("/api/v1/tasks/") + k_uid + "/history", guarded([this](const Request& req, Response& res) {
      TaskRow row = task_or_404(req.matches[1]);
      send_json(res, {{"ok", true}, {"task", row.uid},
                      {"history", monitor.db().history(row.uid, int_param(req, "limit", 100, 1, 10000))}});
    }));
    svr.Get(std::string("/api/v1/tasks/") + k_uid + "/log", guarded([this](const Request& req, Response& res) {
      TaskRow row = task_or_404(req.matches[1]);
      int run = int_param(req, "run", 0, 0, 1 << 30);
      int lines = int_param(req, "tail", 200, 1, 100000);
      require_here(row, "its run logs");
      if (run > row.runs) throw_not_found(fmt::format("task {} has {} runs", row.uid, row.runs));
      res.set_header("Cache-Control", "no-store");
      res.set_content(run_log_tail(monitor.workspace(), row, run, lines), "text/plain; charset=utf-8");
    }));
    svr.Get(std::string("/api/v1/tasks/") + k_uid + "/charts/([a-z]+)\\.svg",
            guarded([this](const Request& req, Response& res) {
              TaskRow row = task_or_404(req.matches[1]);
              int width = int_param(req, "width", 0, 0, 4000);  // 0: the page's default
              if (width > 0) width = std::clamp(width, 320, 1600);
              auto svg = task_chart(monitor, row, req.matches[2], width);
              if (!svg) throw_not_found("charts: convergence progression bottlenecks");
              res.set_header("Cache-Control", "no-store");
              res.set_content(*svg, "image/svg+xml");
            }));
    svr.Get(std::string("/api/v1/tasks/") + k_uid + "/files(/.*)?", guarded([this](const Request& req, Response& res) {
      TaskRow row = task_or_404(req.matches[1]);
      require_here(row, "its files");
      std::string rel = req.matches[2];
      if (!rel.empty()) rel.erase(0, 1);
      serve_task_file(monitor, row, rel, res);
    }));
    svr.Get("/api/v1/system", guarded([this](const Request&, Response& res) {
      json doc = monitor.system_info();
      doc["ok"] = true;
      send_json(res, doc);
    }));
    svr.Get("/api/v1/check", guarded([this](const Request&, Response& res) {
      json doc = check_database(monitor.workspace(), monitor.db(), monitor.owner()).to_json();
      doc["ok"] = true;
      send_json(res, doc);
    }));
    svr.Get("/api/v1/events", [this](const Request& req, Response& res) { events(req, res); });
  }

  // Server-sent events: every change after Last-Event-ID (or ?since=), or from now on.
  void events(const Request& req, Response& res) {
    struct Stream {
      uint64_t after = 0;
      std::string task;
      std::vector<std::string> kinds;
      bool opened = false;
    };
    auto st = std::make_shared<Stream>();
    std::string last = req.get_header_value("Last-Event-ID");
    if (last.empty()) last = req.get_param_value("since");
    st->after = monitor.bus().last_id();
    if (!last.empty()) {
      try {
        st->after = std::stoull(last);
      } catch (const std::exception&) {
        send_error(res, 400, "usage", "Last-Event-ID / since must be an event id");
        return;
      }
    }
    st->task = req.get_param_value("task");
    for (const auto& k : split_kinds(req.get_param_value("kinds"))) st->kinds.push_back(k);
    res.set_header("Cache-Control", "no-store");
    res.set_header("X-Accel-Buffering", "no");
    EventBus* bus = &monitor.bus();
    res.set_chunked_content_provider(
        "text/event-stream",
        [bus, st](size_t, httplib::DataSink& sink) {
          if (!st->opened) {
            st->opened = true;
            bus->client_joined();
            std::string hello = fmt::format("retry: 2000\nevent: hello\ndata: {{\"last_id\":{}}}\n\n", bus->last_id());
            return sink.write(hello.data(), hello.size());
          }
          // Wait in one-second steps so that a client that has gone frees its stream within
          // a second (its slot counts against --max-streams), with a comment every 15 s.
          auto quiet_until = std::chrono::steady_clock::now() + std::chrono::seconds(15);
          auto batch = bus->wait_after(st->after, std::chrono::seconds(1));
          while (!batch.closed && !batch.reset && batch.events.empty() &&
                 std::chrono::steady_clock::now() < quiet_until) {
            if (!sink.is_writable()) return false;
            batch = bus->wait_after(st->after, std::chrono::seconds(1));
          }
          if (batch.closed) {
            sink.done();
            return true;
          }
          std::string out;
          if (batch.reset) out += "event: reset\ndata: {}\n\n";
          for (const auto& e : batch.events) {
            st->after = e->id;
            if (!st->task.empty() && e->task_uid != st->task && !e->task_uid.empty()) continue;
            if (!st->kinds.empty() && std::find(st->kinds.begin(), st->kinds.end(), e->kind) == st->kinds.end()) continue;
            out += e->sse;
          }
          if (out.empty() && batch.events.empty()) out = ": keep-alive\n\n";
          if (out.empty()) return true;
          return sink.write(out.data(), out.size());
        },
        [bus, st](bool) {
          if (st->opened) bus->client_left();
        });
  }

  static std::vector<std::string> split_kinds(const std::string& s) {
    std::vector<std::string> out;
    size_t p = 0;
    while (p < s.size()) {
      size_t e = s.find(',', p);
      std::string k = trim(s.substr(p, e == std::string::npos ? std::string::npos : e - p));
      if (!k.empty()) out.push_back(k);
      if (e == std::string::npos) break;
      p = e + 1;
    }
    return out;
  }
};

HttpServer::HttpServer(Monitor& monitor, HttpOptions options)
    : m(std::make_unique<Impl>(monitor, std::move(options))) {
  auto& svr = m->svr;
  Impl* impl = m.get();
  svr.new_task_queue = [] { return new InlineQueue; };
  svr.on_accept = [impl](int fd) { impl->stage.add(fd); };
  svr.set_payload_max_length(m->options.max_body_bytes);
  svr.set_keep_alive_timeout(m->options.keepalive_seconds);  // announced in Keep-Alive; the stage enforces it
  svr.set_tcp_nodelay(true);
  svr.set_pre_routing_handler([impl](const Request& req, Response& res) { return impl->check(req, res); });
  svr.set_exception_handler([](const Request&, Response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
      what = "an exception that is not a std::exception";
    }
    send_error(res, 500, "internal", what);
  });
  svr.set_error_handler([](const Request& req, Response& res) {
    if (!res.body.empty()) return;
    switch (res.status) {
      case 404: send_error(res, 404, "not_found", fmt::format("no route for {} {}", req.method, preview(req.path, 80)),
                           "see docs/api.md"); break;
      case 413: send_error(res, 413, "too_large", "the request body is too large"); break;
      case 414: send_error(res, 414, "too_large", "the request line is too long"); break;
      case 400: send_error(res, 400, "usage", "malformed request"); break;
      default: send_error(res, res.status, "error", fmt::format("HTTP {}", res.status)); break;
    }
  });
  m->routes();
}

HttpServer::~HttpServer() {
  stop();
  if (m) m->shutdown_all();
}

int HttpServer::bind() {
  const BindAddress& b = m->options.bind;
  std::string host = b.host == "localhost" ? "127.0.0.1" : b.host;
  if (host.find(':') != std::string::npos) m->svr.set_address_family(AF_INET6);
  if (b.port == 0) {
    int p = m->svr.bind_to_any_port(host);
    if (p <= 0) throw Error(ExitCode::busy, fmt::format("cannot bind {}", b.text()), "check the address");
    m->port = p;
  } else {
    if (!m->svr.bind_to_port(host, b.port)) {
      throw Error(ExitCode::busy, fmt::format("cannot listen on {} (in use, or not an address of this machine)", b.text()),
                  "pick another port with --bind HOST:PORT");
    }
    m->port = b.port;
  }
  m->svr.raise_backlog();
  return m->port;
}

bool HttpServer::run() {
  m->stage.start();
  bool ok = m->svr.listen_after_bind();
  m->shutdown_all();
  return ok;
}

void HttpServer::stop() {
  if (!m) return;
  m->stopping = true;
  if (m->svr.is_running()) m->svr.stop();
}

json HttpServer::connection_stats() const {
  ConnectionStats c = m->stage.stats();
  std::lock_guard lock(m->streams_mu);
  return {{"open", c.open},         {"waiting", c.waiting},   {"accepted", c.accepted},
          {"evicted", c.evicted},   {"refused", c.refused},   {"timed_out", c.timed_out},
          {"bad_requests", c.bad_requests}, {"streams", m->streams}};
}

}  // namespace croq::web
