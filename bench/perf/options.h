// hora-perf's command line: nccl-tests' flags (short and long names) plus
// the collective to run. Parsing has no side effects; main() acts on the
// result, and turns a UsageError into exit status 2.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectives.h"
#include "hora/communicator.h"
#include "nccl.h"
#include "size_sequence.h"

namespace hora::perf {

// A command line hora-perf cannot run. what() says which flag and why.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(ErrorKind::InvalidArgument, message) {}
};

// How per-rank times combine into the reported time (-a, nccl-tests' values).
enum class AverageMode { Rank0 = 0, Mean = 1, Min = 2, Max = 3 };

// How the buffers are allocated and registered (-R, nccl-tests' values).
enum class Registration { None = 0, Local = 1, Window = 2 };

// -u's bound: buffers are allocated this many of the largest elements
// (8 bytes) larger.
inline constexpr int kMaxUnalignElements = 1024;

struct Options {
  Collective collective = Collective::AllReduce;
  SizeRange sizes{32u << 20, 32u << 20, 1, 1u << 20};  // nccl-tests: 32M, 32M, +1M
  int iters = 20;
  int warmupIters = 1;  // nccl-tests' default
  int checkIters = 1;  // 0: do not check results
  std::vector<ncclRedOp_t> ops{ncclSum};
  std::vector<ncclDataType_t> types{ncclFloat32};
  std::optional<int> root = 0;  // empty: every rank in turn ("-r all")
  // -z/--blocking (nccl-tests'): 0 none; 1 each iteration's calls are
  // waited for, then every rank meets (timed); 2 waited for, no meeting;
  // 3 waited for, and the ranks meet between iterations outside the time.
  int blocking = 0;
  Registration registration = Registration::None;
  int threads = 1;
  int ranksPerThread = 1;  // -g: ranks one thread drives in a group
  AverageMode average = AverageMode::Mean;
  // -s/--sweeps (hora's own): run the whole sweep this many times and
  // print, per size, the median sweep's columns and the spread.
  int sweeps = 1;
  // -N/--run_cycles (nccl-tests'): each type, op and root runs its sizes
  // this many times over, a row each time; 0: until the process is
  // interrupted. Only 1 together with sweeps > 1.
  int runCycles = 1;
  // -u/--unalign (nccl-tests'): buffers start this many elements past
  // their allocation.
  int unalign = 0;
  // -m/--agg_iters: calls of the collective per rank in one group, per
  // iteration (nccl-tests' aggregation); times are per call.
  int aggIters = 1;
  bool showHelp = false;
  // NCCL_TESTS_MIN_BW, as nccl-tests reads it: the run fails when its
  // average bus bandwidth is below 0.9 of this (GB/s).
  std::optional<double> minBusbw;

  int ranksInProcess() const { return threads * ranksPerThread; }
};

// Parses argv[1..]. `programName` is argv[0]: when its base name is a
// nccl-tests binary name ("all_reduce_perf"), the collective may be left
// out. Throws UsageError.
Options parseOptions(const std::vector<std::string>& arguments, std::string_view programName = "hora-perf");

// NCCL_TESTS_MIN_BW's value (null: unset). Throws UsageError when it is not
// a number of GB/s.
std::optional<double> parseMinBusbw(const char* text);

// The text -h prints.
std::string usageText();

}  // namespace hora::perf
