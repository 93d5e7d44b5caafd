#include "comm_world.h"

#include <string>

#include "in_process_group.h"
#include "support/free_port.h"

namespace hora::ddp::testing {

void runWithCommunicators(int size, std::chrono::milliseconds timeout,
                          const std::function<void(Communicator&)>& body) {
  const std::string initMethod =
      "tcp://127.0.0.1:" + std::to_string(test_support::freeLoopbackPort());
  onEachRank(size, [&](int rank) {
    auto communicator =
        Communicator::fromInitMethod(initMethod, rank, size, CommunicatorOptions{timeout});
    body(*communicator);
  });
}

}  // namespace hora::ddp::testing
