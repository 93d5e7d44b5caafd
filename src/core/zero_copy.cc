// Windows and the all-reduce that runs on them without FIFOs.
//
// Through the shared-memory FIFOs every byte of an all-reduce is copied
// into a FIFO, reduced out of it into the next one and copied out again:
// per rank four passes over the data, which on a machine whose cores are
// bound by memory traffic caps the bus bandwidth well below what memory
// could carry. When every rank's buffers are mapped into every other rank
// (windows), rank r instead reduces its 1/n of the elements straight from
// all ranks' inputs and writes the result straight into all ranks' outputs:
// each input byte is read once and each output byte written once, the
// least any all-reduce can move. Each element is computed by one rank, so
// all ranks end with the same bits.
//
// Agreement: whether a collective runs here must be the same decision on
// every rank, yet only each rank knows where its own buffers are. So at the
// start of every all-reduce that may qualify (the conditions of
// mayUseZeroCopy are the same on every rank), each rank tells all others
// where its buffers are, or that they are not in windows; the collective
// runs here only if all ranks offered. The same message is the proof that a
// peer has entered the collective, so its buffers may be touched; a second
// exchange at the end tells each rank that nobody touches its buffers any
// more, so it may return.
#include <algorithm>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "core/communicator.h"
#include "kernels/copy_host.h"
#include "kernels/reduce_many.h"

namespace hora::core {
namespace {

// One rank's buffer as its peers need to map it (registration).
struct WindowRecord {
  std::uint8_t shareable;
  std::uint8_t padding[3];
  std::int32_t pid;
  std::int32_t fd;
  std::int32_t reserved;
  std::uint64_t device;
  std::uint64_t inode;
  std::uint64_t fileOffset;
  std::uint64_t bytes;
};

// Where one rank's buffers of this all-reduce are, as (window, offset).
struct ZeroCopyOffer {
  std::int32_t offered;  // 0: not both buffers in usable windows
  std::int32_t sendWindow;
  std::int32_t recvWindow;
  std::int32_t reserved;
  std::uint64_t sendOffset;
  std::uint64_t recvOffset;
};

}  // namespace

int Communicator::registerWindow(void* buffer, std::size_t bytes) {
  HORA_CHECK_ARG(buffer != nullptr, "rank ", rank_, ": the window's buffer is NULL");
  HORA_CHECK_ARG(bytes > 0, "rank ", rank_, ": the window's size is 0");
  checkUsable();
  finalize();  // after everything submitted before
  std::lock_guard<std::mutex> lock(execMutex_);
  log::ScopedThreadRank logRank(rank_);
  try {
    const Deadline deadline = Deadline::after(timeout_);
    std::vector<WindowRecord> records(nranks_);
    WindowRecord& own = records[rank_];
    own = {};
    const auto range = transport::findShared(buffer, bytes);
    if (range && peersShareMemory_) {
      own.shareable = 1;
      own.pid = range->pid;
      own.fd = range->fd;
      own.device = range->device;
      own.inode = range->inode;
      own.fileOffset = range->fileOffset;
      own.bytes = range->bytes;
    }
    bootstrap_->allGather(records.data(), sizeof(WindowRecord), deadline);

    WindowTable::Window window;
    window.local = static_cast<char*>(buffer);
    window.bytes = bytes;
    bool everyoneShares = nranks_ > 1;
    for (const WindowRecord& record : records) everyoneShares = everyoneShares && record.shareable;
    std::vector<std::uint8_t> mapped(nranks_, 0);
    if (everyoneShares) {
      mapped[rank_] = 1;
      window.rankBases.assign(nranks_, nullptr);
      window.rankBases[rank_] = window.local;
      try {
        for (int peer = 0; peer < nranks_; ++peer) {
          if (peer == rank_) continue;
          const WindowRecord& record = records[peer];
          window.mappings.push_back(transport::PeerMapping::open(
              {record.pid, record.fd, record.device, record.inode, record.fileOffset,
               record.bytes}));
          window.rankBases[peer] = static_cast<char*>(window.mappings.back().data());
        }
      } catch (const Error& error) {
        HORA_LOG(Warn, "rank ", rank_, ": a window stays without zero copy: ", error.what());
        mapped[rank_] = 0;
      }
    }
    // Usable only if every rank mapped every other: the same answer everywhere.
    bootstrap_->allGather(mapped.data(), 1, deadline);
    window.usable = everyoneShares && std::all_of(mapped.begin(), mapped.end(),
                                                  [](std::uint8_t ok) { return ok != 0; });
    if (!window.usable) {
      window.mappings.clear();
      window.rankBases.clear();
    }
    const bool usable = window.usable;
    const int id = windows_.add(std::move(window));
    HORA_LOG(Info, "window ", id, ": ", bytes, " bytes at ", buffer, usable ? ", zero copy" : "",
             !usable && !range        ? " (not memory from ncclMemAlloc: no zero copy)"
             : !usable && !everyoneShares ? " (not every rank's memory is shareable on one host)"
             : !usable                ? " (a rank could not map a peer's memory)"
                                      : "");
    return id;
  } catch (const Error& error) {
    markBroken(error);
    throw;
  }
}

void Communicator::deregisterWindow(int window) {
  checkUsable();
  finalize();
  std::lock_guard<std::mutex> lock(execMutex_);
  windows_.remove(window);
}

bool Communicator::mayUseZeroCopy(const Op& op) const {
  // Usable windows exist only where all ranks share a host: elsewhere no
  // all-reduce pays for the offers.
  return op.kind == OpKind::AllReduce && nranks_ > 1 && windows_.anyUsable() &&
         op.count * dataTypeSize(op.type) >= zeroCopyMinBytes_;
}

bool Communicator::runZeroCopyAllReduce(const Op& op) {
  const std::size_t elemSize = dataTypeSize(op.type);
  const std::size_t bytes = op.count * elemSize;
  ZeroCopyOffer offer{};
  const auto send = windows_.find(op.send, bytes);
  const auto recv = windows_.find(op.recv, bytes);
  if (send && recv) {
    offer = {1, send->window, recv->window, 0, send->offset, recv->offset};
  }
  std::vector<ZeroCopyOffer> offers(nranks_);
  exchangeWithAll(&offer, offers.data(), sizeof(offer), "exchanging window offers");
  for (const ZeroCopyOffer& o : offers)
    if (o.offered == 0) return false;

  // Rank r reduces elements [bound(r), bound(r + 1)): parts start on
  // 64-byte multiples, so streaming stores see the same alignment in each.
  const std::size_t align = std::max<std::size_t>(1, 64 / elemSize);
  auto bound = [&](int r) {
    const std::size_t even = op.count / nranks_ * r + op.count % nranks_ * r / nranks_;
    return std::min(op.count, (even + align - 1) / align * align);
  };
  const std::size_t begin = bound(rank_);
  const std::size_t end = bound(rank_ + 1);
  if (end > begin) {
    std::vector<const void*> inputs(nranks_);
    std::vector<void*> outputs(nranks_);
    const std::size_t partBytes = (end - begin) * elemSize;
    for (int r = 0; r < nranks_; ++r) {
      const ZeroCopyOffer& o = offers[r];
      char* in = windows_.address(o.sendWindow, r, o.sendOffset + begin * elemSize, partBytes);
      char* out = windows_.address(o.recvWindow, r, o.recvOffset + begin * elemSize, partBytes);
      if (in == nullptr || out == nullptr)
        fail(ErrorKind::InvalidUsage, "rank ", rank_, ": ", bootstrap_->describe(r),
             " named a window range this rank does not have (windows registered in a "
             "different order on different ranks?)");
      inputs[r] = in;
      outputs[r] = out;
    }
    // Streaming stores skip reading the destination into the cache, which
    // pays where the output is not otherwise touched. In place, each output
    // line was just read as an input and is in cache: an ordinary store hits
    // it, while a streaming store would evict it (measured, 2 ranks, 64-128
    // MiB: in place 5.4-7.6 GB/s busbw with streaming stores, 7.9-11.5
    // without; out of place 6.8-8.2 with, 3.3-4.3 without).
    bool inPlace = false;
    for (int r = 0; r < nranks_; ++r) inPlace = inPlace || outputs[r] == inputs[r];
    const bool streaming = bytes >= streamingMinBytes_ && !inPlace;
    kernels::reduceHostMany(op.reduce, outputs.data(), nranks_, inputs.data(), nranks_,
                            end - begin, streaming);
    if (streaming) kernels::streamingFence();
  }
  // Nobody returns while another rank may still read or write its buffers.
  std::vector<std::uint64_t> done(nranks_);
  const std::uint64_t mine = 1;
  exchangeWithAll(&mine, done.data(), sizeof(mine),
                  "waiting for the ranks to finish a zero-copy all-reduce");
  zeroCopyAllReduces_.fetch_add(1);
  return true;
}

}  // namespace hora::core
