// collective_check: one rank of a job that runs every collective on host
// buffers and checks each result against a reference computed here.
//
// Start it with hora-run (or any launcher that sets RANK, WORLD_SIZE,
// MASTER_ADDR and MASTER_PORT, as torchrun does):
//
//   hora-run -n 4 collective_check [count...]
//
// No communicator id is passed between processes: each one calls
// ncclGetUniqueId itself with HORA_COMM_ID (or NCCL_COMM_ID) naming the
// rendezvous address, and rank 0 hosts the rendezvous there. When neither is
// set, MASTER_ADDR:MASTER_PORT is used.
//
// Exit status: 0 when every result is right; 1 when a result is wrong or a
// call fails (the message says which); 2 for a bad command line or
// environment.
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nccl.h>

#include "collective_cases.h"

namespace {

constexpr int kExitWrong = 1;
constexpr int kExitUsage = 2;

// Element counts tried when none are given: a single element, an odd count
// that does not divide evenly into ring blocks, and one large enough that
// the ring needs several loops of HORA_CHUNK_SIZE per rank.
const std::vector<std::size_t> kDefaultCounts = {1, 1023, (1u << 20) + 3};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

long parseWhole(std::string_view name, std::string_view text, long min, long max) {
  long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    throw UsageError(std::string(name) + " is '" + std::string(text) + "', expected a whole number from " +
                     std::to_string(min) + " to " + std::to_string(max));
  }
  return value;
}

const char* requiredVariable(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || value[0] == '\0') {
    throw UsageError(std::string(name) +
                     " is not set; start this program with hora-run (or set RANK, WORLD_SIZE, MASTER_ADDR and "
                     "MASTER_PORT yourself)");
  }
  return value;
}

bool isSet(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0';
}

// Without HORA_COMM_ID / NCCL_COMM_ID, name the launcher's master address,
// so that ncclGetUniqueId returns the same id on every rank.
void defaultCommIdToMaster() {
  if (isSet("HORA_COMM_ID") || isSet("NCCL_COMM_ID")) return;
  std::string host = requiredVariable("MASTER_ADDR");
  const std::string port = requiredVariable("MASTER_PORT");
  parseWhole("MASTER_PORT", port, 1, 65535);
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";  // IPv6
  setenv("HORA_COMM_ID", (host + ":" + port).c_str(), 1);
}

void requireSuccess(ncclResult_t result, const char* call, int rank) {
  if (result == ncclSuccess) return;
  const char* detail = ncclGetLastError(nullptr);
  throw hora::multihost::CheckFailure(std::string(call) + " on rank " + std::to_string(rank) + " returned " +
                                      ncclGetErrorString(result) +
                                      (detail != nullptr && detail[0] != '\0' ? std::string(": ") + detail : ""));
}

int run(int argc, char** argv) {
  std::vector<std::size_t> counts;
  for (int i = 1; i < argc; ++i) {
    counts.push_back(static_cast<std::size_t>(parseWhole("count", argv[i], 1, 1L << 28)));
  }
  if (counts.empty()) counts = kDefaultCounts;

  const int nranks = static_cast<int>(parseWhole("WORLD_SIZE", requiredVariable("WORLD_SIZE"), 1, 1 << 20));
  const int rank = static_cast<int>(parseWhole("RANK", requiredVariable("RANK"), 0, nranks - 1));
  defaultCommIdToMaster();

  ncclUniqueId id;
  requireSuccess(ncclGetUniqueId(&id), "ncclGetUniqueId", rank);
  ncclComm_t comm = nullptr;
  requireSuccess(ncclCommInitRank(&comm, nranks, id, rank), "ncclCommInitRank", rank);

  hora::multihost::CollectiveCases cases(comm, rank, nranks);
  try {
    for (std::size_t count : counts) cases.runAll(count);
  } catch (...) {
    // Abort rather than destroy: the other ranks may be waiting for a
    // collective this rank will never join.
    ncclCommAbort(comm);
    throw;
  }
  requireSuccess(ncclCommDestroy(comm), "ncclCommDestroy", rank);

  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::printf("collective_check: rank %d of %d on %s: all %d results right\n", rank, nranks, host, cases.passed());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "collective_check: %s\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collective_check: FAILED: %s\n", e.what());
    return kExitWrong;
  }
}
