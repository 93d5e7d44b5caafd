// A TCP port for a test's rendezvous: rank 0 of a test listens there.
#pragma once

namespace hora::test_support {

// A TCP port on 127.0.0.1 that was free a moment ago: drawn at random below
// the kernel's ephemeral range (where no connecting socket gets its port),
// checked by binding it, and the socket closed again. Another test could
// still draw the same port before this one listens on it; that is rare
// enough. Throws std::runtime_error if no socket can be bound.
int freeLoopbackPort();

}  // namespace hora::test_support
