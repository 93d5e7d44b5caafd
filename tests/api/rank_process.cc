#include "rank_process.h"

#include <chrono>
#include <cstdlib>

#include "nonblocking_support.h"

namespace hora_api_test {

void useRendezvous(int port, const std::string& timeoutSeconds) {
  setEnvironment("HORA_COMM_ID", "127.0.0.1:" + std::to_string(port));
  setEnvironment("HORA_SOCKET_IFNAME", "lo");
  setEnvironment("HORA_TIMEOUT", timeoutSeconds);
}

void reportOutcome(Reporter& reporter, const std::string& name, const Outcome& outcome) {
  reporter.report(name + "_result", std::to_string(outcome.result));
  reporter.report(name + "_text", outcome.text);
}

ncclComm_t joinCommunicator(Reporter& reporter, int nranks, int rank, ncclConfig_t* config) {
  ncclUniqueId id;
  ncclComm_t comm = nullptr;
  ncclResult_t result = ncclGetUniqueId(&id);
  if (result == ncclSuccess) result = ncclCommInitRankConfig(&comm, nranks, id, rank, config);
  if (result == ncclInProgress) result = settle(comm, std::chrono::seconds(60));  // a non-blocking init's outcome
  if (result != ncclSuccess) {
    reportOutcome(reporter, "init", outcomeOf(result));
    return nullptr;
  }
  reporter.report("ready", std::to_string(rank));
  return comm;
}

long long millisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start)
      .count();
}

Outcome reportedOutcome(ChildProcess& child, const std::string& name) {
  std::string code = child.value(name + "_result");
  return {code.empty() ? static_cast<ncclResult_t>(-1) : static_cast<ncclResult_t>(std::atoi(code.c_str())),
          child.value(name + "_text")};
}

}  // namespace hora_api_test
