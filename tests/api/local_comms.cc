#include "local_comms.h"

#include <stdexcept>
#include <string>
#include <thread>

namespace hora_api_test {

LocalComms::LocalComms(int nranks) : comms_(nranks, nullptr) {
  ncclResult_t result = ncclCommInitAll(comms_.data(), nranks, nullptr);
  if (result != ncclSuccess)
    throw std::runtime_error(std::string("ncclCommInitAll failed: ") + ncclGetLastError(nullptr));
}

LocalComms::~LocalComms() {
  for (ncclComm_t comm : comms_)
    if (comm != nullptr) ncclCommDestroy(comm);
}

void LocalComms::onEachRank(const std::function<void(int)>& body) const {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size(); ++rank) threads.emplace_back(body, rank);
  for (auto& thread : threads) thread.join();
}

}  // namespace hora_api_test
