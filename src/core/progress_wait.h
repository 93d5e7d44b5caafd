// The body of ProgressEngine::waitLoop (a template, so it lives in a header).
#pragma once

#include <poll.h>
#include <sched.h>

#include <algorithm>

#include "base/error.h"

namespace hora::core {

template <typename F>
void ProgressEngine::waitLoop(F done, const char* what) {
  using Clock = std::chrono::steady_clock;
  auto lastProgress = Clock::now();
  std::vector<pollfd> entries;
  for (;;) {
    if (progressAll()) lastProgress = Clock::now();
    if (done()) return;
    if (policy_.abort != nullptr && policy_.abort->load(std::memory_order_relaxed))
      fail(ErrorKind::InvalidUsage, "rank ", policy_.rank, ": communicator aborted while ", what);
    auto idle = Clock::now() - lastProgress;
    if (idle < policy_.spin) {
      // Let another rank sharing this core run; returns at once if none waits.
      sched_yield();
      continue;
    }
    if (idle > policy_.timeout) failStalled(what);
    // Sleep until a socket is ready, or for the shortest slice a connection
    // allows (shared memory wakes no descriptor), and look for dead peers.
    entries.clear();
    int sliceMs = 20;
    // Only connections with work outstanding: a peer that finished its part
    // with us may exit while we still work with others.
    for (auto* s : sends_) {
      if (s->completedBytes() == s->postedBytes()) continue;
      s->checkAlive();
      if (auto e = s->pollEntry(); e.fd >= 0) entries.push_back(e), sliceMs = std::min(sliceMs, s->sleepSliceMs());
    }
    for (auto* r : recvs_) {
      if (r->completedBytes() == r->postedBytes()) continue;
      r->checkAlive();
      if (auto e = r->pollEntry(); e.fd >= 0) entries.push_back(e), sliceMs = std::min(sliceMs, r->sleepSliceMs());
    }
    if (::poll(entries.data(), entries.size(), sliceMs) < 0 && errno != EINTR)
      fail(ErrorKind::System, "rank ", policy_.rank, ": poll failed while ", what, ": ",
           errnoText(errno));
  }
}

}  // namespace hora::core
