// Choosing MASTER_PORT for a single-node job: ask the kernel for a port no
// one uses right now, so two jobs on one machine do not collide on 29500.
#pragma once

namespace hora::launcher {

// Binds a TCP socket to port 0 on all interfaces, reads back the port the
// kernel chose, and closes the socket. Rank 0 binds it again moments later;
// the kernel hands out ephemeral ports in rotation, so the same number is
// very unlikely to be given to someone else in between. Throws on failure.
int pick_free_port();

}  // namespace hora::launcher
