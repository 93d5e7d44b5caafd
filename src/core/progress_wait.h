// The body of ProgressEngine::waitLoop (a template, so it lives in a header).
#pragma once

#include <poll.h>
#include <sched.h>

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
    entries.clear();
    for (auto* s : sends_)
      if (auto e = s->pollEntry(); e.fd >= 0) entries.push_back(e);
    for (auto* r : recvs_)
      if (auto e = r->pollEntry(); e.fd >= 0) entries.push_back(e);
    if (::poll(entries.data(), entries.size(), 20) < 0 && errno != EINTR)
      fail(ErrorKind::System, "rank ", policy_.rank, ": poll failed while ", what, ": ",
           errnoText(errno));
  }
}

}  // namespace hora::core
