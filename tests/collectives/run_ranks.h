// Runs a RankProgram on every rank of a fresh communicator, in one of three
// ways, and bounds the run with a deadline:
//
//   Threads     one thread per rank, each calling ncclCommInitRank with a
//               shared ncclUniqueId;
//   OneThread   ncclCommInitAll, and the calling thread drives every rank,
//               each step's launches inside one ncclGroupStart/End;
//   Processes   one forked process per rank. Each child makes the unique id
//               itself from HORA_COMM_ID (rank 0 hosts the rendezvous), so
//               the parent never calls hora and has no threads to lose in
//               fork(). A child reports its gtest failures over a pipe and
//               exits 0 (passed) or 1 (failed); the parent kills children
//               still running at the deadline.
//
// Failures inside a rank are gtest failures: in the Threads and OneThread
// modes they are reported directly (with a "rank N" trace); in Processes
// mode they come back as text in the outcome, which expectRanksSucceed()
// turns into failures of the calling test. A hang in the Threads or
// OneThread mode cannot be interrupted safely, so at the deadline the test
// program prints which ranks were stuck and aborts.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "rank_program.h"

namespace hora_coll_test {

enum class RankMode { Threads, OneThread, Processes };
const char* rankModeName(RankMode mode);

struct RunOptions {
  RankMode mode = RankMode::Threads;
  int nranks = 2;
  // Extra environment while the communicators are created (for example
  // HORA_CHUNK_SIZE). HORA_SOCKET_IFNAME=lo is always set.
  std::vector<std::pair<std::string, std::string>> environment;
  std::chrono::seconds deadline{90};
};

struct RankOutcome {
  bool completed = false;  // ran to the end (a thread returned, a child exited)
  bool failed = false;     // Processes: reported failures, crashed or was killed
  std::string report;      // what went wrong, for failed ranks
  std::string agreement;   // RankContext::agreement at the end
};

struct RunOutcome {
  std::vector<RankOutcome> ranks;
  // True when no rank failed and every rank completed.
  bool ok() const;
  // True when all ranks that set an agreement text set the same one.
  bool agree() const;
  std::string summary() const;
};

RunOutcome runRanks(const RunOptions& options, const ProgramFactory& factory);

// Runs, then adds a failure for every failed rank and for disagreement.
void expectRanksSucceed(const RunOptions& options, const ProgramFactory& factory);

}  // namespace hora_coll_test
