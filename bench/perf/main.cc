// hora-perf: nccl-tests' bandwidth benchmark for hora, on device buffers
// where a GPU is usable and on host memory otherwise.
//
//   hora-perf all_reduce -b 8 -e 128M -f 2 -t 4         4 ranks as threads
//   hora-run -n 4 hora-perf all_reduce -b 8 -e 128M -f 2  4 ranks as processes
//
// See docs/hora-perf.md for the flags and the meaning of every column.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "device_memory.h"
#include "launch_environment.h"
#include "nccl_failure.h"
#include "options.h"
#include "rank_placement.h"
#include "run_modes.h"

namespace {

constexpr int kUsageExitStatus = 2;

}  // namespace

int main(int argc, char** argv) {
  using namespace hora::perf;
  // Ranks as threads on one GPU (-t), each thread launching on its own
  // stream: CUDA spreads streams over CUDA_DEVICE_MAX_CONNECTIONS hardware
  // queues (8 unless set before CUDA starts), and two ranks' streams on one
  // queue can hold a rank's kernel behind another that waits for it
  // (docs/gpu.md). The most CUDA allows, unless the user chose.
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
  Options options;
  std::optional<ProcessRank> process;
  RankPlacement placement;
  try {
    options = parseOptions(std::vector<std::string>(argv + 1, argv + argc), argc > 0 ? argv[0] : "hora-perf");
    if (options.showHelp) {
      std::fputs(usageText().c_str(), stdout);
      return 0;
    }
    const EnvironmentLookup environment = [](const char* name) { return std::getenv(name); };
    process = processRankFromEnvironment(environment);
    options.minBusbw = parseMinBusbw(environment("NCCL_TESTS_MIN_BW"));
    if (process && options.ranksInProcess() != 1) {
      throw UsageError("under hora-run each process is one rank, so -t and -g must be 1 (got -t " +
                       std::to_string(options.threads) + " -g " + std::to_string(options.ranksPerThread) +
                       ")");
    }
    const int nranks = process ? process->worldSize : options.ranksInProcess();
    if (collectiveInfo(options.collective).rooted && options.root && *options.root >= nranks) {
      throw UsageError("-r/--root " + std::to_string(*options.root) + " is not a rank: there are " +
                       std::to_string(nranks) + " ranks (0 to " + std::to_string(nranks - 1) + ")");
    }
    const int devices = device::count();
    placement = placeRanks(options.ranksInProcess(), process ? process->localRank : 0, devices, environment);
    if (!placement.onDevice() && devices > 0 && options.registration != Registration::None) {
      throw UsageError("-R " + std::to_string(static_cast<int>(options.registration)) +
                       " with host buffers: where a GPU is usable ncclMemAlloc returns device memory (hide the "
                       "GPUs with CUDA_VISIBLE_DEVICES= to register host memory)");
    }
  } catch (const UsageError& error) {
    std::fprintf(stderr, "hora-perf: %s\nRun 'hora-perf -h' for usage.\n", error.what());
    return kUsageExitStatus;
  }
  try {
    return process ? runAsProcessRank(options, *process, placement) : runRanksAsThreads(options, placement);
  } catch (const std::exception& error) {
    // What the run could not get before its threads started (memory for
    // its buffers): the reason, and exit status 1. A thread that cannot be
    // started ends the run where it is asked for (run_modes.cc).
    failAndExit((std::string("cannot run: ") + error.what()).c_str());
  }
}
