// The monitor's connections before a request reaches a handler, so that no client can starve it.
// One thread (epoll) holds every connection that is still sending its request, or idle between
// two requests: a request is read whole — head within `head_timeout`, body within `body_timeout`
// — without holding a worker. Only whole requests go to the workers: the API's from a pool of
// their own, event streams from a separate, capped set of threads, so neither slow senders nor
// open streams can take the threads that answer /api/v1/health. Each client address has a cap on
// open connections: past it, the client's oldest connection still waiting for its request is
// closed to make room (a trickling sender loses to a quick one), and a new connection is refused
// (503) only when all the client's others are being served.
//
// The request head is checked here (parse_request_head) before the HTTP library reads it:
// duplicate or conflicting Content-Length, Content-Length with Transfer-Encoding, chunked
// request bodies, several Host headers, folded header lines and oversized heads are refused.
#pragma once
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace croq::web {

struct HeadLimits {
  size_t max_line_bytes = 8192;    // the request line
  size_t max_head_bytes = 16384;   // request line and headers
  size_t max_headers = 100;
  size_t max_body_bytes = 1 << 20;
};

// A request head as far as the connection stage needs it.
struct RequestHead {
  enum class State { incomplete, complete, bad };
  State state = State::incomplete;
  int status = 0;          // when bad: 400, 411, 413, 414, 431
  std::string why;         // when bad: what is wrong, for the error response
  size_t skipped = 0;      // empty lines before the request line (ignored, RFC 9112 2.2)
  std::string method;
  std::string target;      // as sent
  std::string path;        // target without its query
  std::string version;     // "HTTP/1.1" or "HTTP/1.0"
  size_t head_bytes = 0;   // from the request line through the empty line
  size_t content_length = 0;
  // An `Expect: 100-continue` line (byte range within the head, after `skipped`): the stage
  // answers it itself when it waits for the body, and removes it before the library sees it.
  size_t expect_begin = 0, expect_end = 0;
};

// Parses the start of a connection's buffer. Incomplete until the empty line; bad with a status
// as soon as anything is wrong (or too long), even before the head is complete.
RequestHead parse_request_head(std::string_view buffer, const HeadLimits& limits);

struct ConnectionLimits {
  HeadLimits head;
  std::chrono::milliseconds head_timeout{5000};  // from the first byte of a request to its empty line
  std::chrono::milliseconds body_timeout{10000};  // from the head to the body's last byte
  std::chrono::milliseconds idle_timeout{5000};   // between two requests of a kept-alive connection
  int max_per_client = 128;  // open connections of one client address
  int max_total = 4096;      // open connections in all (lowered to fit the open-file limit)
};

// A whole request, taken off the connection stage.
struct Admitted {
  int fd = -1;
  std::string client;       // the peer's address
  RequestHead head;
  std::string bytes;        // the request (head and body), then any bytes the client sent after it
  size_t request_bytes = 0;  // head + body
};

struct ConnectionStats {
  long long accepted = 0;
  long long evicted = 0;       // closed to make room for a newer connection of the same client
  long long refused = 0;       // 503: the client or the server had too many connections in service
  long long timed_out = 0;     // 408: the head or body did not arrive in time
  long long bad_requests = 0;  // 4xx from parse_request_head
  int waiting = 0;             // connections in the stage now
  int open = 0;                // connections open now (in the stage and being served)
};

class ConnectionStage {
 public:
  // `dispatch` gets every whole request, on the stage's thread; it must not block. It owns the
  // Admitted and must end with resume() or release() for its fd.
  using Dispatch = std::function<void(Admitted&&)>;
  ConnectionStage(ConnectionLimits limits, Dispatch dispatch);
  ~ConnectionStage();
  ConnectionStage(const ConnectionStage&) = delete;
  ConnectionStage& operator=(const ConnectionStage&) = delete;

  void start();
  // Closes every connection in the stage; later add() and resume() close theirs at once.
  void stop();

  // A freshly accepted connection (any thread).
  void add(int fd);
  // A connection whose response is written and that stays open (any thread): `leftover` holds
  // bytes the client sent after its last request.
  void resume(int fd, std::string client, std::string leftover);
  // A dispatched connection was closed by its worker (any thread).
  void release(const std::string& client);
  // Answers a dispatched connection with an error and closes it once the client has read it
  // (any thread; the stage releases it).
  void refuse(int fd, std::string client, int status, std::string_view json_body,
              std::string_view extra_headers = {});

  ConnectionStats stats() const;
  const ConnectionLimits& limits() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> m;
};

// The peer address of a socket ("127.0.0.1", "::1"; IPv4-mapped IPv6 addresses as IPv4).
std::string peer_address(int fd);

}  // namespace croq::web
