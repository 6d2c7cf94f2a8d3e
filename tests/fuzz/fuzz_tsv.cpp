// Fuzz target: results.tsv in croq's form and the older hand-written variants. A row croq
// writes for a record it read is read back as one record with the same iteration and decision.
#include <cstddef>
#include <cstdint>

#include "croq/ledger/records.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string content(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> warnings;
  auto records = croq::parse_results_tsv(content, &warnings);
  for (const auto& r : records) {
    std::string written = std::string(croq::k_tsv_header) + "\n" + croq::tsv_row(r) + "\n";
    std::vector<std::string> w2;
    auto back = croq::parse_results_tsv(written, &w2);
    if (back.size() != 1 || back[0].iter != r.iter || back[0].decision != r.decision) __builtin_trap();
    (void)croq::tsv_unescape(croq::tsv_escape(r.idea));
  }
  return 0;
}
