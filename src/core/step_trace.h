// A rank's timeline, for finding out where an operation's time goes on the
// host: when each operation began and ended, and every time the rank's
// thread had to wait inside one (for a peer's data, for room in a peer's
// FIFO, for its sends to leave), how long, how it waited (polls, yields
// to other threads, sleeps) and how many bytes this rank had put into its
// peers' FIFOs that they had not taken yet when the wait began. Time
// between waits is the rank's own work: copies and reductions.
//
// HORA_TRACE=prefix turns it on. Each communicator's host executor then
// keeps its records in memory (HORA_TRACE_RECORDS of them at most; later
// ones are counted as dropped) and writes them, when the communicator is
// destroyed, to prefix.rank<r>.<pid>.<n>.tsv (r: the rank in that
// communicator; n counts the communicators of the process, so that the
// files of splits and of ranks as threads differ). Times are
// CLOCK_MONOTONIC nanoseconds, one clock for every process of a host, so
// the ranks' files line up. Off, it costs a branch per operation and per
// wait that is not met at once (the loop that polls counts its polls,
// yields and sleeps either way: a few increments where it waits anyway).
//
// tools/trace/trace_summary.py reads the files: what share of each rank's
// time went to which wait, and a figure of a few operations.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

namespace hora::core {

// How a wait spent its time: looks at the connections, yields of the core
// (ranks that share cores) and sleeps (in poll() or on wake lines).
struct WaitCounts {
  std::uint32_t polls = 0;
  std::uint32_t yields = 0;
  std::uint32_t sleeps = 0;
};

class StepTrace {
 public:
  // The trace of a communicator's rank `rank` of `nranks` into files named
  // after `prefix` (HORA_TRACE), keeping at most `maxRecords`; null where
  // the prefix is empty.
  static std::unique_ptr<StepTrace> open(const std::string& prefix, std::size_t maxRecords, int rank,
                                         int nranks);

  StepTrace(std::string path, int rank, int nranks, std::size_t maxRecords);
  // Writes the file. A file that cannot be written is a warning in the
  // log, never an error of the communicator; nothing escapes.
  ~StepTrace();
  StepTrace(const StepTrace&) = delete;
  StepTrace& operator=(const StepTrace&) = delete;

  static std::uint64_t nowNs();

  // An operation: `name` (a static string) moving `bytes` per rank (for a
  // group of messages, all they send and receive). The trace numbers
  // operations from 1 in the order they run. Operations do not nest.
  void beginOp(const char* name, std::uint64_t bytes);
  void endOp();
  // A wait inside the current operation, from startNs to endNs; `what`
  // (a static string) says what for, `queuedBytes` what this rank's peers
  // had not yet taken from it when it began.
  void wait(const char* what, std::uint64_t startNs, std::uint64_t endNs, std::uint64_t queuedBytes,
            const WaitCounts& counts);

  const std::string& path() const { return path_; }

 private:
  struct Record {
    std::uint64_t startNs;
    std::uint64_t endNs;  // 0: an operation that has not ended
    const char* what;
    std::uint64_t op;  // the operation's number
    std::uint64_t bytes;
    WaitCounts counts;
    bool isOp;
  };
  bool room();
  void write() const;

  std::string path_;
  int rank_, nranks_;
  std::size_t maxRecords_;
  // In blocks that never move: a growing trace copies nothing in the
  // middle of the operation it times.
  std::deque<Record> records_;
  std::uint64_t dropped_ = 0;
  std::size_t openOp_ = SIZE_MAX;  // index of the operation under way
  std::uint64_t ops_ = 0;          // operations begun, the current one's number
};

// Marks one operation on a trace (none: nothing), also when it fails.
class TracedOp {
 public:
  TracedOp(StepTrace* trace, const char* name, std::uint64_t bytes) : trace_(trace) {
    if (trace_ != nullptr) [[unlikely]]
      trace_->beginOp(name, bytes);
  }
  ~TracedOp() {
    if (trace_ != nullptr) [[unlikely]]
      trace_->endOp();
  }
  TracedOp(const TracedOp&) = delete;
  TracedOp& operator=(const TracedOp&) = delete;

 private:
  StepTrace* trace_;
};

}  // namespace hora::core
