// Wall-clock timestamps for records (UTC, ISO 8601 with milliseconds) and a monotonic stopwatch.
#pragma once
#include <chrono>
#include <optional>
#include <string>

namespace croq {

// "2026-11-29T07:12:50.123Z"
std::string now_iso8601();
std::string to_iso8601(std::chrono::system_clock::time_point t);
// Parses the forms croq writes and the seeds' variants ("...Z", "+00:00", no fraction).
std::optional<std::chrono::system_clock::time_point> parse_iso8601(const std::string& text);

class Stopwatch {
 public:
  Stopwatch() : m_start(std::chrono::steady_clock::now()) {}
  double elapsed_ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - m_start)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point m_start;
};

}  // namespace croq
