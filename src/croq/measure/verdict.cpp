// Verdict names and their ledger decisions (verdict.hpp).
#include "croq/measure/verdict.hpp"

#include "croq/util/text.hpp"

namespace croq {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::PASS: return "PASS";
    case Verdict::VERIFY_FAIL: return "VERIFY_FAIL";
    case Verdict::RUNTIME_FAIL: return "RUNTIME_FAIL";
    case Verdict::SEGFAULT: return "SEGFAULT";
    case Verdict::HANG: return "HANG";
    case Verdict::IMPOSSIBLE: return "IMPOSSIBLE";
    case Verdict::LIBRARY_CALL_FORBIDDEN: return "LIBRARY_CALL_FORBIDDEN";
    case Verdict::UNSUPPORTED: return "UNSUPPORTED";
  }
  return "?";
}

std::optional<Verdict> parse_verdict(const std::string& text) {
  for (Verdict v : {Verdict::PASS, Verdict::VERIFY_FAIL, Verdict::RUNTIME_FAIL, Verdict::SEGFAULT, Verdict::HANG,
                    Verdict::IMPOSSIBLE, Verdict::LIBRARY_CALL_FORBIDDEN, Verdict::UNSUPPORTED}) {
    if (to_lower(text) == to_lower(verdict_name(v))) return v;
  }
  return std::nullopt;
}

std::optional<Decision> failure_decision(Verdict v) {
  switch (v) {
    case Verdict::PASS: return std::nullopt;
    case Verdict::VERIFY_FAIL:
    case Verdict::IMPOSSIBLE:
    case Verdict::UNSUPPORTED:
    case Verdict::LIBRARY_CALL_FORBIDDEN: return Decision::VERIFY_FAIL;
    case Verdict::RUNTIME_FAIL: return Decision::RUNTIME_FAIL;
    case Verdict::SEGFAULT: return Decision::SEGFAULT;
    case Verdict::HANG: return Decision::HANG;
  }
  return std::nullopt;
}

}  // namespace croq
