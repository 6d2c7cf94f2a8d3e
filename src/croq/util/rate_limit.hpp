// Recognising a rate limit in an agent's output: the phrases the agent CLIs and their APIs print
// when a quota or request rate is exhausted. Shared by the monitor's scheduler (a run that ends
// with such output is parked, not counted as a crash) and `croq agent run` (which waits and
// retries before giving up with exit 75).
#pragma once
#include <string_view>

namespace croq {

// True if `text` holds "rate limit", "rate-limit", "rate_limit", "ratelimit", "too many requests",
// "usage limit", "http 429", "status 429" or "error 429" (case-insensitive).
bool mentions_rate_limit_phrase(std::string_view text);

}  // namespace croq
