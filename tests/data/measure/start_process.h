// A test candidate's constructor that starts a process by the raw clone system call (no import
// the purity scan sees); the child, had the clone been allowed, writes the file $CROQ_TEST_MARKER.
// Both runners forbid the call (seccomp), so no file appears. Included by the cpp test candidate
// (cpu_candidate.cpp, mode rawclone) and the CUDA one (tests/gpu/kernels/cheats.cu, start_process).
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>

__attribute__((constructor)) static void start_a_process() {
  const char* marker = std::getenv("CROQ_TEST_MARKER");
  if (marker == nullptr) return;
  if (syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0) == 0) {  // the child, had the clone been allowed
    const int fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) (void)!write(fd, "escaped\n", 8);
    syscall(SYS_exit_group, 0);
  }
}
