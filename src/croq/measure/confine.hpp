// What a runner forbids the candidate it is about to load (its constructors run at load). The
// candidate runs inside the runner's process, so it may start no other: no fork, no new process
// (clone without CLONE_THREAD), no exec, no tracing or writing of another process's memory. Both
// runners (croq-cpu-runner, croq-gpu-runner) call this right before loading a candidate.
#pragma once
#include <string>

namespace croq {

// Installs the filter (seccomp, through libseccomp) for the rest of the process's life. Threads
// stay allowed (clone with CLONE_THREAD; clone3 answers ENOSYS, and glibc falls back to clone), so
// do the device driver's own calls. Returns "" or why the filter could not be installed.
std::string forbid_new_processes();

}  // namespace croq
