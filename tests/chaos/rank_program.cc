#include "rank_program.h"

#include <time.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "element_values.h"

namespace hora::chaos {

long long monotonicNanoseconds() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec;
}

namespace {

// Runs `call` on `comm` with this rank's inputs; returns the result code
// and, when it succeeded, an empty string or a description of what was
// wrong.
ncclResult_t runAndCheck(ncclComm_t comm, const Call& call, std::size_t callIndex, int rank, int nranks,
                         std::string& wrong) {
  const std::size_t esize = elementBytes(call.type);
  const std::size_t n = call.count;
  const bool scatters = call.kind == CallKind::ReduceScatter;
  const bool gathers = call.kind == CallKind::AllGather;
  const std::size_t inCount = scatters ? n * nranks : n;
  const std::size_t outCount = gathers ? n * nranks : n;
  std::vector<char> in(inCount * esize + 8), out(outCount * esize + 8);
  char* send = in.data();
  char* recv = out.data();
  if (call.inPlace) {
    // NCCL's in-place layouts: one buffer, the block of this rank inside it.
    std::vector<char>& whole = scatters ? in : out;
    send = whole.data() + (gathers ? rank * n * esize : 0);
    recv = whole.data() + (scatters ? rank * n * esize : 0);
  }
  for (std::size_t j = 0; j < inCount; ++j)
    storeElement(send, call.type, j, inputValue(rank, j, callIndex));
  ncclResult_t result = ncclSuccess;
  switch (call.kind) {
    case CallKind::AllReduce:
      result = ncclAllReduce(send, recv, n, call.type, call.op, comm, nullptr);
      break;
    case CallKind::Reduce:
      result = ncclReduce(send, recv, n, call.type, call.op, call.root, comm, nullptr);
      break;
    case CallKind::ReduceScatter:
      result = ncclReduceScatter(send, recv, n, call.type, call.op, comm, nullptr);
      break;
    case CallKind::AllGather:
      result = ncclAllGather(send, recv, n, call.type, comm, nullptr);
      break;
    case CallKind::Broadcast:
      result = ncclBroadcast(send, recv, n, call.type, call.root, comm, nullptr);
      break;
  }
  if (result != ncclSuccess) return result;
  const std::vector<double> expected = expectedOutput(call, callIndex, rank, nranks);
  for (std::size_t j = 0; j < expected.size(); ++j) {
    const double got = loadElement(recv, call.type, j);
    if (got != expected[j]) {
      wrong = std::string(callKindName(call.kind)) + " call " + std::to_string(callIndex) + " element " +
              std::to_string(j) + ": " + std::to_string(got) + " instead of " + std::to_string(expected[j]);
      break;
    }
  }
  return ncclSuccess;
}

// A failed call (or init, with no communicator yet): its result, the text
// ncclGetLastError gives and when it came back (`when`, taken as it
// returned, before any lock).
void reportFailure(test_support::Reporter& reporter, ncclResult_t result, ncclComm_t comm, long long when) {
  reporter.report("error_result", std::to_string(result));
  reporter.report("error_text", ncclGetLastError(comm));
  reporter.report("error_ns", std::to_string(when));
}

// ncclCommSplit where the others make a call. A split that succeeds is a
// mismatch nobody reported: the trial's judge sees this rank finish.
ncclResult_t splitInstead(ncclComm_t comm, int rank) {
  ncclComm_t child = nullptr;
  const ncclResult_t result = ncclCommSplit(comm, 0, rank, &child, nullptr);
  if (child != nullptr) ncclCommDestroy(child);
  return result;
}

// The trial's calls on one thread, until the first error. Returns false if
// one failed (reported).
bool runCalls(test_support::Reporter& reporter, std::mutex& reporting, ncclComm_t comm, const TrialPlan& plan,
              int rank, bool second) {
  const char* thread = second ? "second" : "main";
  for (std::size_t c = 0; c < plan.calls.size(); ++c) {
    if (c == 2) {
      std::lock_guard<std::mutex> lock(reporting);
      reporter.report("running", thread);
    }
    std::string wrong;
    ncclResult_t result = ncclSuccess;
    if (rankSplitsInstead(plan, c, rank)) {
      result = splitInstead(comm, rank);
    } else {
      if (!rankMakesCall(plan, c, rank)) continue;
      Call call = callOnRank(plan, c, rank);
      // The second thread's calls differ in size from every call of the plan:
      // none has a counterpart on the other ranks, so one that is not
      // refused outright must be reported as a mismatch, never succeed.
      if (second) call.count += 3;
      result = runAndCheck(comm, call, c, rank, plan.nranks, wrong);
    }
    if (result != ncclSuccess) {
      const long long when = monotonicNanoseconds();
      std::lock_guard<std::mutex> lock(reporting);
      reportFailure(reporter, result, comm, when);
      return false;
    }
    if (!wrong.empty()) {
      std::lock_guard<std::mutex> lock(reporting);
      reporter.report("wrong", wrong);
    }
  }
  return true;
}

}  // namespace

int runRank(test_support::Reporter& reporter, const TrialPlan& plan, int rank, int port) {
  test_support::setEnvironment("HORA_COMM_ID", "127.0.0.1:" + std::to_string(port));
  test_support::setEnvironment("HORA_SOCKET_IFNAME", "lo");
  test_support::setEnvironment("HORA_TIMEOUT", std::to_string(plan.timeoutSeconds));
  test_support::setEnvironment("HORA_TRANSPORT", plan.transport);
  test_support::setEnvironment("HORA_OFI_PROVIDER", "tcp");  // for ofi
  // Host buffers and host transports, also where a GPU is present (a
  // communicator with a CUDA executor opens no split with a stamped call).
  test_support::setEnvironment("CUDA_VISIBLE_DEVICES", "");
  std::mutex reporting;
  reporter.report("joining", "");
  ncclUniqueId id;
  ncclComm_t comm = nullptr;
  ncclResult_t result = ncclGetUniqueId(&id);
  if (result == ncclSuccess) result = ncclCommInitRank(&comm, plan.nranks, id, rank);
  if (result != ncclSuccess) {
    reportFailure(reporter, result, nullptr, monotonicNanoseconds());
    return 0;
  }
  reporter.report("ready", "");
  // Strangers come while the ranks wait here (the parent sends them).
  if (plan.category == Category::Junk) std::this_thread::sleep_for(std::chrono::milliseconds(300));

  const bool victim = rank == plan.victim;
  std::thread second;
  if (victim && plan.category == Category::Abort) {
    second = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(5 + plan.faultDelayMs));
      const long long when = monotonicNanoseconds();
      ncclCommAbort(comm);
      std::lock_guard<std::mutex> lock(reporting);
      reporter.report("abort_ns", std::to_string(when));
    });
  }
  if (victim && plan.category == Category::Concurrent)
    second = std::thread([&] { runCalls(reporter, reporting, comm, plan, rank, /*second=*/true); });
  const bool completed = runCalls(reporter, reporting, comm, plan, rank, /*second=*/false);
  if (second.joinable()) second.join();
  if (plan.category == Category::Abort && victim) return 0;  // the handle is gone
  if (completed && plan.category != Category::Concurrent) {
    reporter.report("destroying", "");
    result = ncclCommDestroy(comm);
    reporter.report("done", std::to_string(result));
  } else {
    ncclCommAbort(comm);
  }
  return 0;
}

}  // namespace hora::chaos
