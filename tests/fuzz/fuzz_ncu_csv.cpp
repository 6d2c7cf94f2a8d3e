// Fuzz target: Nsight Compute CSV exports (raw page and details forms). Bad input is refused
// with croq::Error; anything else thrown, or a crash, is a bug.
#include <cstddef>
#include <cstdint>

#include "croq/profile/ncu_csv.hpp"
#include "croq/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& row : croq::profile::split_csv(text)) {
      for (const auto& cell : row) {
        (void)croq::profile::parse_ncu_number(cell);
        (void)croq::profile::looks_like_decimal_comma(cell);
      }
    }
  } catch (const croq::Error&) {
  }
  try {
    croq::profile::NcuCsv csv = croq::profile::parse_ncu_csv(text, "fuzz.csv");
    for (const auto& k : csv.kernels) (void)k;
  } catch (const croq::Error&) {
  }
  return 0;
}
