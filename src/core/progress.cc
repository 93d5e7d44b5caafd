#include "core/progress.h"

#include <algorithm>
#include <string_view>
#include <typeinfo>

namespace hora::core {

void ProgressEngine::add(transport::SendConnection* connection) {
  if (std::find(sends_.begin(), sends_.end(), connection) == sends_.end()) sends_.push_back(connection);
}

void ProgressEngine::add(transport::RecvConnection* connection) {
  if (std::find(recvs_.begin(), recvs_.end(), connection) == recvs_.end()) recvs_.push_back(connection);
}

void ProgressEngine::blamePeerOf(const transport::Connection& connection) {
  try {
    throw;
  } catch (const Error& error) {
    // A failure of this rank's own side of the connection (a device that
    // refused a posted write, a full queue) says which connection: the
    // layers below know a device and a queue pair, not the peer. (Errors
    // of a type of their own keep it.)
    if (typeid(error) == typeid(Error) &&
        (error.kind() == ErrorKind::System || error.kind() == ErrorKind::Internal)) {
      const std::string& peer = connection.peerName();
      if (std::string_view(error.what()).find(peer) != std::string_view::npos) throw;
      throw Error(error.kind(), strCat("on the connection with ", peer, ": ", error.what()), error.failedRank());
    }
    // Only a peer's failure names the peer as the rank that failed; a
    // mismatch keeps its own type.
    if (error.kind() != ErrorKind::Remote || error.failedRank() >= 0) throw;
    throw Error(error.kind(), error.what(), connection.peerRank());
  }
}

bool ProgressEngine::progressAll() {
  bool moved = false;
  // Receives first: draining the socket lets the peer's sends proceed.
  for (auto* r : recvs_) {
    try {
      moved |= r->progress();
    } catch (const Error&) {
      blamePeerOf(*r);
    }
  }
  for (auto* s : sends_) {
    try {
      moved |= s->progress();
    } catch (const Error&) {
      blamePeerOf(*s);
    }
  }
  return moved;
}

bool ProgressEngine::gatherWakeLines() {
  lines_.clear();
  auto gather = [&](transport::Connection* connection) {
    if (connection->idle()) return true;
    transport::WakeLine* line = connection->wakeLine();
    if (line == nullptr) return false;
    lines_.push_back(line);
    return true;
  };
  for (auto* s : sends_)
    if (!gather(s)) return false;
  for (auto* r : recvs_)
    if (!gather(r)) return false;
  // More than one wait can watch (an all-to-all with many peers): poll().
  return !lines_.empty() && lines_.size() <= kFutexWaitMaxWords;
}

std::uint64_t ProgressEngine::queuedBytes() const {
  std::uint64_t queued = 0;
  for (const auto* s : sends_) {
    const std::uint64_t moved = s->completedBytes(), taken = s->acknowledgedBytes();
    if (moved > taken) queued += moved - taken;
  }
  return queued;
}

void ProgressEngine::drain(const char* what) {
  waitUntil([&] { return allMoved(/*andStamps=*/false); }, what);
}

bool ProgressEngine::allMoved(bool andStamps) const {
  for (const auto* s : sends_)
    if ((andStamps && s->stampPending()) || s->completedBytes() != s->postedBytes()) return false;
  for (const auto* r : recvs_)
    if ((andStamps && r->stampsOutstanding() != 0) || r->completedBytes() != r->postedBytes()) return false;
  return true;
}

void ProgressEngine::failStalled(const char* what) {
  // Name the peers we are still waiting on; if that is one rank, it is the
  // one that failed (stopped, hung, or cut off).
  std::string waiting;
  int blamed = -1;
  bool several = false;
  auto blame = [&](const transport::Connection* connection) {
    if (blamed >= 0 && blamed != connection->peerRank()) several = true;
    blamed = connection->peerRank();
  };
  for (auto* r : recvs_) {
    if (!r->idle()) blame(r);
    if (r->completedBytes() != r->postedBytes())
      waiting += strCat(waiting.empty() ? "" : "; ", "data from ", r->peerName(), " (",
                        r->postedBytes() - r->completedBytes(), " bytes outstanding)");
    else if (!r->idle())
      waiting += strCat(waiting.empty() ? "" : "; ", "the stamp of the operation from ", r->peerName(),
                        " (has that rank made this call?)");
  }
  for (auto* s : sends_) {
    if (s->idle()) continue;
    blame(s);
    if (s->completedBytes() != s->postedBytes())
      waiting += strCat(waiting.empty() ? "" : "; ", s->peerName(), " to accept data (",
                        s->postedBytes() - s->completedBytes(), " bytes outstanding)");
    else if (s->peerMemoryAccess() == transport::PeerMemoryAccess::Unknown)
      waiting += strCat(waiting.empty() ? "" : "; ", s->peerName(), " to answer the connection's handshake");
    else if (s->stampPending())
      waiting += strCat(waiting.empty() ? "" : "; ", s->peerName(), " to make room for this operation's stamp");
    else
      waiting += strCat(waiting.empty() ? "" : "; ", s->peerName(), " to make room in its buffer");
  }
  throw Error(ErrorKind::Remote,
              strCat("rank ", policy_.rank, ": no progress for ", policy_.timeout.count() / 1000.0,
                     " s while ", what, ", waiting for ", waiting.empty() ? "nothing?" : waiting,
                     " (HORA_TIMEOUT, or the timeout the program gave; the peer may be hung or dead)"),
              several ? -1 : blamed);
}

}  // namespace hora::core
