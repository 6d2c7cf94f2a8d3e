// Fuzz target: an HTTP request as the monitor reads it. The connection stage's head check
// (parse_request_head: Content-Length, Transfer-Encoding, Host, folding, sizes) first; a request
// it accepts is handed, as the stage hands it, to the HTTP library's own request processing
// (request line, headers, ranges, query, body) on an in-memory stream, with handlers that run
// croq's header readers (Origin, Host, cookies) and JSON body reader.
#include <httplib.h>

#include <cstddef>
#include <cstdint>

#include "croq/util/json.hpp"
#include "croq/web/auth.hpp"
#include "croq/web/connections.hpp"

namespace {

class FuzzServer : public httplib::Server {
 public:
  bool answer(httplib::Stream& strm) {
    bool closed = false;
    return process_request(strm, false, closed, nullptr);
  }
};

class MemoryStream : public httplib::Stream {
 public:
  explicit MemoryStream(std::string_view in) : m_in(in) {}
  bool is_readable() const override { return m_pos < m_in.size(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    size_t n = std::min(size, m_in.size() - m_pos);
    std::memcpy(ptr, m_in.data() + m_pos, n);
    m_pos += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char*, size_t size) override { return static_cast<ssize_t>(size); }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 40000;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 8642;
  }
  socket_t socket() const override { return -1; }

 private:
  std::string_view m_in;
  size_t m_pos = 0;
};

void read_headers(const httplib::Request& req, httplib::Response& res) {
  (void)croq::web::same_origin(req.get_header_value("Origin"), req.get_header_value("Host"));
  std::string host = croq::web::host_of_header(req.get_header_value("Host"));
  (void)croq::web::is_loopback_host(host);
  (void)croq::web::cookie_value(req.get_header_value("Cookie"), "croq_token");
  (void)croq::web::tokens_equal(req.get_param_value("token"), "0123456789abcdef0123456789abcdef");
  res.set_content("{}", "application/json");
}

FuzzServer& server() {
  static FuzzServer* s = [] {
    auto* svr = new FuzzServer;
    svr->set_payload_max_length(4096);
    svr->Get("/api/v1/tasks/([A-Za-z0-9_.-]{1,128})/files(/.*)?", read_headers);
    svr->Get(".*", read_headers);
    svr->Post(".*", [](const httplib::Request& req, httplib::Response& res) {
      read_headers(req, res);
      auto j = croq::try_parse_json(req.body);
      if (j) (void)croq::dump_compact(*j);
    });
    return svr;
  }();
  return *s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  croq::web::HeadLimits limits;
  limits.max_body_bytes = 4096;
  croq::web::RequestHead head = croq::web::parse_request_head(text, limits);
  if (head.state == croq::web::RequestHead::State::bad && (head.status < 400 || head.why.empty())) __builtin_trap();
  if (head.state != croq::web::RequestHead::State::complete) return 0;
  if (head.head_bytes == 0 || head.skipped + head.head_bytes > size) __builtin_trap();
  // As the stage hands it over: without the empty lines before it and without Expect.
  std::string request(text.substr(head.skipped));
  size_t request_bytes = std::min(request.size(), head.head_bytes + head.content_length);
  if (head.expect_end > head.expect_begin) {
    if (head.expect_end > head.head_bytes) __builtin_trap();
    request.erase(head.expect_begin, head.expect_end - head.expect_begin);
    request_bytes -= head.expect_end - head.expect_begin;
  }
  MemoryStream strm(std::string_view(request).substr(0, request_bytes));
  (void)server().answer(strm);
  return 0;
}
