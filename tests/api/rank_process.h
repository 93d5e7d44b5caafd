// Pieces of a rank that runs in a forked child (see child_process.h) and
// joins its communicator through HORA_COMM_ID, as separate processes do.
#pragma once

#include <chrono>
#include <string>

#include "child_process.h"
#include "nccl_outcome.h"

namespace hora_api_test {

// Sets the environment of a rank process: rendezvous at 127.0.0.1:port
// (rank 0 hosts it), loopback interface, and HORA_TIMEOUT in seconds.
void useRendezvous(int port, const std::string& timeoutSeconds);

// Reports `outcome` as "<name>_result" (the code) and "<name>_text".
void reportOutcome(Reporter& reporter, const std::string& name, const Outcome& outcome);

// Joins an nranks communicator as `rank` (with `config`, which may be
// non-blocking: the init is then waited for); reports "init" and returns
// NULL on failure, reports "ready" on success.
ncclComm_t joinCommunicator(Reporter& reporter, int nranks, int rank, ncclConfig_t* config = nullptr);

// Milliseconds since `start`.
long long millisecondsSince(std::chrono::steady_clock::time_point start);

// What a parent reads back from a rank child.
Outcome reportedOutcome(ChildProcess& child, const std::string& name);

}  // namespace hora_api_test
