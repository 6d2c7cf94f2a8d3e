// A candidate's constructor once forked a child that, after the runner left, rewrote the
// measurement file (an attack: 3x the figure, stored as measured). The purity scan refuses a
// candidate that imports the calls; this filter forbids them to one that makes them raw.
#include "croq/measure/confine.hpp"

#include <sched.h>
#include <seccomp.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace croq {

std::string forbid_new_processes() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return "seccomp_init failed";
  int rc = 0;
  for (int call : {SCMP_SYS(fork), SCMP_SYS(vfork), SCMP_SYS(execve), SCMP_SYS(execveat), SCMP_SYS(ptrace),
                   SCMP_SYS(process_vm_writev), SCMP_SYS(process_vm_readv)}) {
    rc = rc ? rc : seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), call, 0);
  }
  if (!rc) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                                 SCMP_A0(SCMP_CMP_MASKED_EQ, static_cast<scmp_datum_t>(CLONE_THREAD), 0));
  if (!rc) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  if (!rc) rc = seccomp_load(ctx);
  seccomp_release(ctx);
  return rc ? fmt::format("seccomp: {}", std::strerror(-rc)) : std::string();
}

}  // namespace croq
