// A child process started before croq takes a resource it needs later (the device's lease): the
// child gets `--go-file GO` as its last arguments, does its slow start (the Python runner imports
// torch and triton), creates GO.ready and waits for GO. croq then calls `gate` (takes the lease)
// and creates GO. Used by `croq measure` and `croq profile` of Python candidates.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "croq/util/process.hpp"

namespace croq {

// Runs `spec` with `--go-file go` appended; its time limit is spec.timeout + gate_timeout (the
// gate may wait for the lease). `opened` says whether the gate opened. A gate that throws stops
// the waiting child and the error goes on; GO and GO.ready are removed afterwards.
ProcessResult run_at_gate(ProcessSpec spec, const std::string& go, const std::function<void()>& gate,
                          std::chrono::milliseconds gate_timeout, ProcessRunner& runner, bool& opened);

}  // namespace croq
