// A TCP port for a test's rendezvous: rank 0 of a test listens there.
#pragma once

namespace hora::test_support {

// A TCP port on 127.0.0.1 that was free a moment ago: the kernel picks one
// for a socket bound to port 0, and the socket is closed again. Another
// process could take it before the test listens on it; on a test machine
// that is rare enough. Throws std::runtime_error if no socket can be bound.
int freeLoopbackPort();

}  // namespace hora::test_support
