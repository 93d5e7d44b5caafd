// The TCP ports another process listens on, read from /proc: tests use it
// to reach a rank's own listeners, whose ports the kernel picked.
#pragma once

#include <sys/types.h>

#include <set>

namespace hora::test_support {

// Ports of the sockets that `pid` holds open in the LISTEN state (IPv4 and
// IPv6). Empty if the process is gone or /proc cannot be read.
std::set<int> listeningPorts(pid_t pid);

}  // namespace hora::test_support
