#include "run_modes.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "benchmark.h"
#include "collective_call.h"
#include "device_memory.h"
#include "nccl_failure.h"
#include "nccl_rank_sync.h"
#include "rank_memory.h"
#include "report.h"

#ifndef HORA_PERF_VERSION
#define HORA_PERF_VERSION "unknown"
#endif

namespace hora::perf {
namespace {

// A thread for one rank (or one helper of a collective call). Where none
// can be had, the threads already started wait for it: the run ends here,
// saying why, before their std::thread objects could end it with
// std::terminate.
template <typename Body>
std::thread startThread(Body&& body) {
  try {
    return std::thread(std::forward<Body>(body));
  } catch (const std::system_error& error) {
    failAndExit((std::string("cannot start a thread: ") + error.what()).c_str());
  }
}

std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

// The lines before the rank list.
std::string runHeader(const Options& options) {
  int libraryVersion = 0;
  checkNccl(ncclGetVersion(&libraryVersion), "ncclGetVersion", -1, nullptr);
  return "# hora-perf version " HORA_PERF_VERSION " nccl-headers=" + std::to_string(NCCL_VERSION_CODE) +
         " nccl-library=" + std::to_string(libraryVersion) +
         "\n# Collective test starting: " + programName(options) + "\n" +
         optionsLine(options) + "#\n# Using devices\n";
}

std::optional<int> deviceOf(const RankPlacement& placement, int index) {
  if (!placement.onDevice()) return std::nullopt;
  return placement.devices[static_cast<std::size_t>(index)];
}

std::string rankLineOf(int rank, std::optional<int> device) {
  if (!device) return rankLine(rank, static_cast<long>(getpid()), hostName());
  return rankLine(rank, static_cast<long>(getpid()), hostName(), *device, device::describe(*device));
}

// Both buffers of every rank hold the largest measurement (no effective
// size exceeds the largest requested one) after -u's offset.
NcclRank allocateRank(std::vector<std::unique_ptr<RankMemory>>& owner, const Options& options, int rank,
                      ncclComm_t comm, std::optional<int> device) {
  const std::size_t unalignRoom = static_cast<std::size_t>(options.unalign) * 8;  // the largest element
  owner.push_back(
      std::make_unique<RankMemory>(options.sizes.maxBytes + unalignRoom, options.registration, rank, device));
  return {rank, comm, owner.back()->buffers(), owner.back()->stream()};
}

// The benchmark's view of a rank: where it writes inputs and reads results,
// and, for device memory, the copies between there and the buffers.
LocalRank localRankOf(int rank, const RankMemory* memory) {
  LocalRank local{rank, memory->hostView(), {}, {}};
  if (memory->onDevice()) {
    local.upload = [memory](std::size_t bytes) { memory->upload(bytes); };
    local.download = [memory](std::size_t bytes) { memory->download(bytes); };
  }
  return local;
}

// Waits for the device calls of `memory`'s ranks; empty for host memory,
// whose calls return complete.
std::function<void()> completionOf(std::vector<const RankMemory*> memory) {
  if (memory.empty() || !memory.front()->onDevice()) return {};
  return [memory] {
    for (const RankMemory* rank : memory) rank->complete();
  };
}

int finish(const BenchmarkTotals& totals, const Options& options, bool printer) {
  if (printer) {
    std::fputs((summaryLines(totals.failedChecks, totals.averageBusbw(), options.minBusbw) +
                "# Collective test concluded: " + programName(options) + "\n")
                   .c_str(),
               stdout);
    std::fflush(stdout);
  }
  const bool fast = meetsMinBusbw(totals.averageBusbw(), options.minBusbw);
  return totals.failedChecks == 0 && fast ? 0 : kFailureExitStatus;
}

}  // namespace

int runRanksAsThreads(const Options& options, const RankPlacement& placement) {
  const int nranks = options.ranksInProcess();
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(nranks));
  // With device buffers rank r's communicator is bound to its device.
  std::vector<int> devices = placement.devices;
  checkNccl(ncclCommInitAll(comms.data(), nranks, devices.empty() ? nullptr : devices.data()),
            "ncclCommInitAll", -1, nullptr);

  std::string header = runHeader(options);
  for (int rank = 0; rank < nranks; ++rank) header += rankLineOf(rank, deviceOf(placement, rank));
  std::fputs((header + "#\n" + tableHeader(options.sweeps)).c_str(), stdout);
  std::fflush(stdout);

  std::vector<std::unique_ptr<RankMemory>> memory;
  std::vector<NcclRank> ranks;
  for (int rank = 0; rank < nranks; ++rank) {
    ranks.push_back(
        allocateRank(memory, options, rank, comms[static_cast<std::size_t>(rank)], deviceOf(placement, rank)));
  }

  // Window registration is collective: every rank registers at once.
  {
    std::vector<std::thread> registering;
    for (int rank = 0; rank < nranks; ++rank)
      registering.push_back(startThread([&, rank] { memory[rank]->registerWith(comms[rank]); }));
    for (std::thread& thread : registering) thread.join();
  }

  ThreadRankSync sync(options.threads);
  std::vector<BenchmarkTotals> totals(static_cast<std::size_t>(options.threads));
  std::vector<std::thread> threads;
  for (int t = 0; t < options.threads; ++t) {
    // Thread t drives ranks [t*g, (t+1)*g), like nccl-tests' GPUs per thread.
    const std::span<const NcclRank> driven(
        ranks.data() + static_cast<std::ptrdiff_t>(t) * options.ranksPerThread,
        static_cast<std::size_t>(options.ranksPerThread));
    BenchmarkThread thread;
    thread.options = &options;
    thread.nranks = nranks;
    thread.participant = t;
    std::vector<const RankMemory*> drivenMemory;
    for (const NcclRank& rank : driven) {
      drivenMemory.push_back(memory[static_cast<std::size_t>(rank.rank)].get());
      thread.ranks.push_back(localRankOf(rank.rank, drivenMemory.back()));
    }
    thread.sync = &sync;
    thread.launch = [driven](const StepPlan& plan, bool inPlace, int calls) {
      launchCollective(plan, inPlace, driven, calls);
    };
    thread.complete = completionOf(drivenMemory);
    thread.out = t == 0 ? stdout : nullptr;
    threads.push_back(
        startThread([thread, &totals, t] { totals[static_cast<std::size_t>(t)] = runBenchmark(thread); }));
  }
  for (std::thread& thread : threads) thread.join();

  {
    std::vector<std::thread> deregistering;
    for (int rank = 0; rank < nranks; ++rank)
      deregistering.push_back(startThread([&, rank] { memory[rank]->deregister(); }));
    for (std::thread& thread : deregistering) thread.join();
  }
  for (const NcclRank& rank : ranks)
    checkNccl(ncclCommDestroy(rank.comm), "ncclCommDestroy", rank.rank, nullptr);
  // Wrong counts were summed across threads; thread 0 holds the totals.
  return finish(totals.front(), options, true);
}

int runAsProcessRank(const Options& options, const ProcessRank& process, const RankPlacement& placement) {
  // Every rank derives the same unique id from rank 0's address, so no
  // out-of-band exchange is needed; rank 0 listens there. Without a master
  // port the user's HORA_COMM_ID or NCCL_COMM_ID names the address already.
  if (process.masterPort != 0) {
    const std::string address = commIdAddress(process);
    if (setenv("NCCL_COMM_ID", address.c_str(), 1) != 0) failAndExit("cannot set NCCL_COMM_ID");
  }
  ncclUniqueId id;
  checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId", process.rank, nullptr);
  // The communicator binds to the device current at init, as NCCL's does.
  const std::optional<int> device = deviceOf(placement, 0);
  if (device) device::use(*device, process.rank);
  ncclComm_t comm = nullptr;
  checkNccl(ncclCommInitRank(&comm, process.worldSize, id, process.rank), "ncclCommInitRank", process.rank,
            nullptr);

  // Rank 0 prints every rank's line: gather fixed-size records.
  constexpr std::size_t kRecordBytes = 160;
  std::vector<char> records(kRecordBytes * static_cast<std::size_t>(process.worldSize));
  std::vector<char> mine(kRecordBytes);
  const std::string line = rankLineOf(process.rank, device);
  std::strncpy(mine.data(), line.c_str(), kRecordBytes - 1);
  checkNccl(ncclAllGather(mine.data(), records.data(), kRecordBytes, ncclChar, comm, nullptr),
            "ncclAllGather (rank list)", process.rank, comm);
  const bool printer = process.rank == 0;
  if (printer) {
    std::string header = runHeader(options);
    for (int rank = 0; rank < process.worldSize; ++rank) {
      const char* record = records.data() + static_cast<std::size_t>(rank) * kRecordBytes;
      header.append(record, strnlen(record, kRecordBytes));
    }
    std::fputs((header + "#\n" + tableHeader(options.sweeps)).c_str(), stdout);
    std::fflush(stdout);
  }

  std::vector<std::unique_ptr<RankMemory>> memory;
  const NcclRank self = allocateRank(memory, options, process.rank, comm, device);
  memory.back()->registerWith(comm);
  NcclRankSync sync(comm, process.rank, process.worldSize);
  BenchmarkThread thread;
  thread.options = &options;
  thread.nranks = process.worldSize;
  thread.ranks.push_back(localRankOf(self.rank, memory.back().get()));
  thread.sync = &sync;
  thread.launch = [&self](const StepPlan& plan, bool inPlace, int calls) {
    launchCollective(plan, inPlace, std::span<const NcclRank>(&self, 1), calls);
  };
  thread.complete = completionOf({memory.back().get()});
  thread.out = printer ? stdout : nullptr;
  const BenchmarkTotals totals = runBenchmark(thread);

  memory.back()->deregister();
  checkNccl(ncclCommDestroy(comm), "ncclCommDestroy", process.rank, nullptr);
  return finish(totals, options, printer);
}

}  // namespace hora::perf
