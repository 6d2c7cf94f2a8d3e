// Fuzz target: croq's one JSON reader (try_parse_json, with its depth and size bounds) and the
// idea-log reader on the same bytes. What croq writes it must read back: a parsed document
// printed and parsed again is the same document, and a record read from the log is written and
// read again.
#include <cstddef>
#include <cstdint>

#include "croq/ledger/records.hpp"
#include "croq/util/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string error;
  auto doc = croq::try_parse_json(text, &error);
  if (doc) {
    auto again = croq::try_parse_json(croq::dump_compact(*doc));
    if (!again || *again != *doc) __builtin_trap();
    (void)croq::dump_pretty(*doc);
  } else if (error.empty()) {
    __builtin_trap();  // a refusal always says why
  }
  croq::JsonlParse log = croq::parse_idea_log(text);
  for (const auto& r : log.records) {
    std::string line = croq::dump_compact(r.to_json());
    auto j = croq::try_parse_json(line);
    if (!j || !croq::RoundRecord::from_json(*j)) __builtin_trap();
    (void)croq::tsv_row(r);
  }
  return 0;
}
