// The measurement rules as one JSON document (schema croq-measurement-rules-v1), built from the
// C++ tables themselves: every dtype spelling with its canonical pair and its tolerance row
// (tolerance.hpp), the runners' timing and pacing defaults (runner_options.hpp), and the peak
// table with the estimate for unlisted devices (peak.hpp). croq passes it to the Python runner
// (`croq_runner.py --rules JSON`), which has no copy of any of these; `croq-cpu-runner
// --print-rules` prints it. Changing a C++ table changes what every runner applies.
#pragma once
#include "croq/util/json.hpp"

namespace croq {

inline constexpr const char* k_rules_schema = "croq-measurement-rules-v1";

json measurement_rules();

}  // namespace croq
