#include "core/progress.h"

#include <algorithm>

namespace hora::core {

void ProgressEngine::add(transport::SendConnection* connection) {
  if (std::find(sends_.begin(), sends_.end(), connection) == sends_.end()) sends_.push_back(connection);
}

void ProgressEngine::add(transport::RecvConnection* connection) {
  if (std::find(recvs_.begin(), recvs_.end(), connection) == recvs_.end()) recvs_.push_back(connection);
}

bool ProgressEngine::progressAll() {
  bool moved = false;
  // Receives first: draining the socket lets the peer's sends proceed.
  for (auto* r : recvs_) moved |= r->progress();
  for (auto* s : sends_) moved |= s->progress();
  return moved;
}

void ProgressEngine::drain(const char* what) {
  waitUntil(
      [&] {
        for (auto* s : sends_)
          if (s->completedBytes() != s->postedBytes()) return false;
        for (auto* r : recvs_)
          if (r->completedBytes() != r->postedBytes()) return false;
        return true;
      },
      what);
}

void ProgressEngine::failStalled(const char* what) {
  // Name the peers we are still waiting on.
  std::string waiting;
  for (auto* r : recvs_) {
    if (r->completedBytes() != r->postedBytes())
      waiting += strCat(waiting.empty() ? "" : "; ", "data from ", r->peerName(), " (",
                        r->postedBytes() - r->completedBytes(), " bytes outstanding)");
    else if (!r->idle())
      waiting += strCat(waiting.empty() ? "" : "; ", "the stamp of the operation from ", r->peerName(),
                        " (has that rank made this call?)");
  }
  for (auto* s : sends_) {
    if (s->idle()) continue;
    if (s->completedBytes() != s->postedBytes())
      waiting += strCat(waiting.empty() ? "" : "; ", s->peerName(), " to accept data (",
                        s->postedBytes() - s->completedBytes(), " bytes outstanding)");
    else
      waiting += strCat(waiting.empty() ? "" : "; ", s->peerName(), " to make room in its buffer");
  }
  fail(ErrorKind::Remote, "rank ", policy_.rank, ": no progress for ",
       policy_.timeout.count() / 1000.0, " s while ", what, ", waiting for ",
       waiting.empty() ? "nothing?" : waiting, " (HORA_TIMEOUT; the peer may be hung or dead)");
}

}  // namespace hora::core
