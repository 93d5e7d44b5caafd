// Real hora communicators for tests: ranks as threads of this process,
// meeting at tcp://127.0.0.1 on a free port.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "hora/communicator.h"

namespace hora::ddp::testing {

// Starts `size` threads; each creates its communicator (all through the same
// tcp:// address, with the given timeout) and runs body(communicator).
// Rethrows the first exception after every thread ended.
void runWithCommunicators(int size, std::chrono::milliseconds timeout,
                          const std::function<void(Communicator&)>& body);

}  // namespace hora::ddp::testing
