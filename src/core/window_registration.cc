// ncclCommWindowRegister / Deregister: every rank learns where every other
// rank's window is and maps it, where all ranks share a host (core/windows.h
// says what windows are for). And ncclCommDeregister's release of what RDMA
// connections registered of a buffer.
#include <algorithm>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "core/communicator.h"
#include "transport/peer_memory.h"

namespace hora::core {
namespace {

// One rank's buffer as its peers need to map it (registration).
struct WindowRecord {
  std::uint8_t shareable;
  std::uint8_t padding[7];
  std::uint64_t bytes;  // each rank's size: they may differ, as in NCCL
  transport::PeerMemoryHandle handle;
};

}  // namespace

int Communicator::registerWindow(void* buffer, std::size_t bytes) {
  HORA_CHECK_ARG(buffer != nullptr, "rank ", rank_, ": the window's buffer is NULL");
  HORA_CHECK_ARG(bytes > 0, "rank ", rank_, ": the window's size is 0");
  checkUsable();
  finalize();  // after everything submitted before
  meetForCall(OpPurpose::WindowRegister);
  auto lock = claimExecution("a window registration came");
  log::ScopedThreadRank logRank(rank_);
  try {
    const Deadline deadline = Deadline::after(timeout_);
    std::vector<WindowRecord> records(nranks_);
    WindowRecord& own = records[rank_];
    own = {};
    own.bytes = bytes;
    transport::PeerMemory& memory = transport::hostPeerMemory();
    const auto exported = memory.exportRange(buffer, bytes);
    if (exported && peersShareMemory_) {
      own.shareable = 1;
      own.handle = *exported;
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
      for (const WindowRecord& record : records) window.rankBytes.push_back(record.bytes);
      try {
        for (int peer = 0; peer < nranks_; ++peer) {
          if (peer == rank_) continue;
          window.mappings.push_back(memory.import(records[peer].handle));
          window.rankBases[peer] = static_cast<char*>(window.mappings.back()->data());
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
      window.rankBytes.clear();
    }
    const bool usable = window.usable;
    const int id = windows_.add(std::move(window));
    // A window is a registered buffer for the RDMA connections too.
    windowRegistrations_[id] = userRegistrations_->add(buffer, bytes);
    HORA_LOG(Info, "window ", id, ": ", bytes, " bytes at ", buffer, usable ? ", zero copy" : "",
             !usable && !exported            ? " (not memory from ncclMemAlloc: no zero copy)"
             : !usable && !everyoneShares ? " (not every rank's memory is shareable on one host)"
             : !usable                    ? " (a rank could not map a peer's memory)"
                                          : "");
    return id;
  } catch (const Error& error) {
    failBroken(error);
  }
}

void Communicator::deregisterWindow(int window) {
  // Local, as in NCCL: it succeeds on a communicator that failed, was
  // aborted, revoked or finalized too, once nothing runs on it any more
  // (a call still running there is being stopped, or ends). Its
  // connections are left as they are.
  const bool stopped = broken_.load(std::memory_order_acquire) || abort_.load() ||
                       revocation() != Revocation::None || closedToWork_.load(std::memory_order_acquire);
  if (!stopped) finalize();
  auto lock = stopped ? awaitExecution() : claimExecution("a window deregistration came");
  windows_.remove(window);
  if (forgetWindowRegistration(window) && !stopped) connector_->releaseDeregistered();
}

bool Communicator::forgetWindowRegistration(int window) {
  const auto found = windowRegistrations_.find(window);
  if (found == windowRegistrations_.end()) return false;
  userRegistrations_->remove(found->second);
  windowRegistrations_.erase(found);
  return true;
}

void Communicator::deregisterBuffer(std::uint64_t id) {
  userRegistrations_->remove(id);
  // An RDMA connection that sent from the buffer registered it with its
  // NIC, which pins its pages: they are released now rather than at that
  // connection's next send, which may never come. Connections belong to
  // the worker, so this waits until the calls queued before have run, as a
  // window's deregistration does. A communicator that failed keeps them
  // until it is destroyed (its next call reports the failure); so does
  // one another thread is running a call on (its connections release them
  // at their next send), since deregistering is local and may not break
  // the communicator for the other ranks.
  if (broken_.load(std::memory_order_acquire) || abort_.load() || revocation() != Revocation::None) return;
  try {
    finalize();
  } catch (const Error&) {
    return;
  }
  if (!tryHoldExecution(Executing::Housekeeping)) return;
  ExecutionClaim claim(&executing_);
  connector_->releaseDeregistered();
}

}  // namespace hora::core
