// Fuzz target: the checkpoint (current_idea.json) as read_checkpoint reads it. A checkpoint that
// is read, written and read again is the same checkpoint.
#include <cstddef>
#include <cstdint>

#include "croq/ledger/documents.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto j = croq::try_parse_json(text);
  if (!j) return 0;
  std::string why;
  auto cp = croq::Checkpoint::from_json(*j, &why);
  if (!cp) {
    if (why.empty()) __builtin_trap();
    return 0;
  }
  croq::json written = cp->to_json();
  auto reread = croq::try_parse_json(croq::dump_pretty(written));
  if (!reread) __builtin_trap();
  auto again = croq::Checkpoint::from_json(*reread);
  if (!again || again->to_json() != written) __builtin_trap();
  return 0;
}
