// Numbers that name one lifetime of some memory in this process: a
// buffer's registration with a communicator (user_registrations.h), a
// stream's own buffers. Never reused, so memory freed and allocated again
// at the same address under a new owner is never taken for the old.
#pragma once

#include <cstdint>

namespace hora::transport {

// A number no other call in this process returns (never 0).
std::uint64_t newMemoryOwner();

}  // namespace hora::transport
