#include "local_comms.h"

#include <stdexcept>
#include <string>

#include "support/rank_threads.h"

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
  hora::test_support::onEachRank(size(), body);
}

}  // namespace hora_api_test
