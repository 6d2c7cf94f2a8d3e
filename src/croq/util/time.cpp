// Timestamps of time.hpp.
#include "croq/util/time.hpp"

#include <ctime>
#include <fmt/format.h>

namespace croq {

std::string to_iso8601(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  if (ms < 0 && ms % 1000 != 0) secs -= 1;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ((ms % 1000) + 1000) % 1000);
}

std::string now_iso8601() { return to_iso8601(std::chrono::system_clock::now()); }

std::optional<std::chrono::system_clock::time_point> parse_iso8601(const std::string& text) {
  std::tm tm{};
  int y, mo, d, h, mi;
  double s;
  char rest[16] = {0};
  int n = std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%lf%15s", &y, &mo, &d, &h, &mi, &s, rest);
  if (n < 6) {
    n = std::sscanf(text.c_str(), "%d-%d-%d %d:%d:%lf%15s", &y, &mo, &d, &h, &mi, &s, rest);
    if (n < 6) return std::nullopt;
  }
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = 0;
  std::time_t base = timegm(&tm);
  if (base == static_cast<std::time_t>(-1)) return std::nullopt;
  long long offset_s = 0;
  std::string r(rest);
  if (!r.empty() && (r[0] == '+' || r[0] == '-')) {
    int oh = 0, om = 0;
    if (std::sscanf(r.c_str() + 1, "%d:%d", &oh, &om) >= 1) {
      offset_s = (oh * 3600 + om * 60) * (r[0] == '+' ? 1 : -1);
    }
  }
  auto tp = std::chrono::system_clock::from_time_t(base - offset_s);
  // Rounded to the microsecond: a plain cast of 12.345 s as a double truncates to 12.344999999 s,
  // and a time written then read back would move back by a nanosecond.
  tp += std::chrono::round<std::chrono::microseconds>(std::chrono::duration<double>(s));
  return tp;
}

}  // namespace croq
