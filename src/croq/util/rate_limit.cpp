// The rate-limit phrases (rate_limit.hpp).
#include "croq/util/rate_limit.hpp"

#include <string>

#include "croq/util/text.hpp"

namespace croq {

bool mentions_rate_limit_phrase(std::string_view text) {
  static const char* phrases[] = {"rate limit", "rate-limit", "rate_limit", "ratelimit", "too many requests",
                                  "usage limit", "http 429", "status 429", "error 429"};
  std::string lower = to_lower(text);
  for (const char* p : phrases) {
    if (lower.find(p) != std::string::npos) return true;
  }
  return false;
}

}  // namespace croq
