// Choosing MASTER_PORT for a single-node job: a port no one uses right
// now, so two jobs on one machine do not collide on 29500.
#pragma once

#include <string>

namespace hora::launcher {

struct PortRange {
  int low = 32768;
  int high = 60999;
};

// The kernel's ephemeral port range (ip_local_port_range), or Linux's
// default when the file cannot be read.
PortRange ephemeral_port_range(const std::string& proc_file = "/proc/sys/net/ipv4/ip_local_port_range");

// A port that a TCP socket could bind just now. Rank 0 binds it again
// moments later, so it is taken outside the ephemeral range: the ports the
// kernel hands to every bind(0) and connect() on the machine come from
// that range, and one of them landing on ours in between would make rank 0
// fail to host the rendezvous. Random among the free ones, so two jobs
// starting together do not pick the same. Throws when no port can be bound.
int pick_free_port(const PortRange& ephemeral = ephemeral_port_range());

}  // namespace hora::launcher
