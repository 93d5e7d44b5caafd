#include "core/step_trace.h"

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>

#include "base/log.h"

namespace hora::core {

std::unique_ptr<StepTrace> StepTrace::open(const std::string& prefix, std::size_t maxRecords, int rank,
                                            int nranks) {
  if (prefix.empty()) return nullptr;
  // Communicators of one process (splits, ranks as threads) each get a file.
  static std::atomic<int> traces{0};
  std::string path = strCat(prefix, ".rank", rank, ".", ::getpid(), ".", traces.fetch_add(1), ".tsv");
  return std::make_unique<StepTrace>(std::move(path), rank, nranks, maxRecords);
}

StepTrace::StepTrace(std::string path, int rank, int nranks, std::size_t maxRecords)
    : path_(std::move(path)), rank_(rank), nranks_(nranks), maxRecords_(maxRecords) {}

StepTrace::~StepTrace() {
  try {
    write();
  } catch (...) {
    // A trace is worth less than the communicator's clean end.
  }
}

std::uint64_t StepTrace::nowNs() {
  timespec now;
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(now.tv_nsec);
}

bool StepTrace::room() {
  if (records_.size() < maxRecords_) return true;
  ++dropped_;
  return false;
}

void StepTrace::beginOp(const char* name, std::uint64_t bytes) {
  ++ops_;
  openOp_ = SIZE_MAX;
  if (!room()) return;
  openOp_ = records_.size();
  records_.push_back({nowNs(), 0, name, ops_, bytes, {}, true});
}

void StepTrace::endOp() {
  if (openOp_ != SIZE_MAX) records_[openOp_].endNs = nowNs();
  openOp_ = SIZE_MAX;
}

void StepTrace::wait(const char* what, std::uint64_t startNs, std::uint64_t endNs, std::uint64_t queuedBytes,
                     const WaitCounts& counts) {
  if (room()) records_.push_back({startNs, endNs, what, ops_, queuedBytes, counts, false});
}

void StepTrace::write() const {
  std::FILE* file = std::fopen(path_.c_str(), "w");
  if (file == nullptr) {
    HORA_LOG(Warn, "HORA_TRACE: cannot write ", path_, ": ", errnoText(errno));
    return;
  }
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::fprintf(file,
               "# hora step trace: rank %d of %d, host %s, pid %d; CLOCK_MONOTONIC ns; %zu records, "
               "%llu dropped\n",
               rank_, nranks_, host, static_cast<int>(::getpid()), records_.size(),
               static_cast<unsigned long long>(dropped_));
  // An operation's `bytes` is its size per rank; a wait's, the bytes this
  // rank's peers had not yet taken from its FIFOs when it began.
  std::fputs("start_ns\tduration_ns\trecord\twhat\top\tbytes\tpolls\tyields\tsleeps\n", file);
  for (const Record& r : records_) {
    // An operation still open (the communicator was destroyed inside it,
    // after an abort) has no duration.
    const long long duration = r.endNs == 0 ? -1 : static_cast<long long>(r.endNs - r.startNs);
    std::fprintf(file, "%llu\t%lld\t%s\t%s\t%llu\t%llu\t%u\t%u\t%u\n", static_cast<unsigned long long>(r.startNs),
                 duration, r.isOp ? "op" : "wait", r.what, static_cast<unsigned long long>(r.op),
                 static_cast<unsigned long long>(r.bytes), r.counts.polls, r.counts.yields, r.counts.sleeps);
  }
  const bool failed = std::ferror(file) != 0;
  if (std::fclose(file) != 0 || failed) HORA_LOG(Warn, "HORA_TRACE: cannot write ", path_, ": ", errnoText(errno));
}

}  // namespace hora::core
