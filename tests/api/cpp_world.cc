#include "cpp_world.h"

#include <stdexcept>
#include <thread>

#include "child_process.h"

namespace hora_api_test {

World makeWorld(const std::string& initMethod, int size, const hora::CommunicatorOptions& options) {
  World world(size);
  std::vector<std::exception_ptr> errors(size);
  onEachRank(size, [&](int rank) {
    try {
      world[rank] = hora::Communicator::fromInitMethod(initMethod, rank, size, options);
    } catch (...) {
      errors[rank] = std::current_exception();
    }
  });
  for (auto& error : errors)
    if (error) std::rethrow_exception(error);
  return world;
}

std::string freeTcpInitMethod() { return "tcp://127.0.0.1:" + std::to_string(freeLoopbackPort()); }

std::exception_ptr finishWithin(hora::Work& work, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!work.test()) {
    if (std::chrono::steady_clock::now() >= deadline)
      throw std::runtime_error("the operation did not finish in time");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return work.error();
}

}  // namespace hora_api_test
