// Whether a process of this host still runs. A rank waiting for a peer of
// its own host to connect asks this, so that a peer that has died is
// reported at once instead of at the deadline.
#pragma once

#include <sys/types.h>

namespace hora {

// True when no process `pid` runs: none exists, or it has exited and waits
// to be reaped (a zombie: kill() still finds it, but it will never
// connect). False when it runs, or when this cannot be told (no right to
// ask counts as running).
bool processGone(pid_t pid);

// True when process `pid` is stopped (SIGSTOP, a debugger): alive, but it
// will not move until someone continues it. A rank that waits in vain for
// a peer of its host names a stopped one as the cause.
bool processStopped(pid_t pid);

}  // namespace hora
