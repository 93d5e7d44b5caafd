// The body of ProgressEngine::waitLoop (a template, so it lives in a header).
#pragma once

#include <poll.h>
#include <sched.h>

#include <algorithm>

#include "base/error.h"

namespace hora::core {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

template <typename F>
void ProgressEngine::waitLoop(F done, const char* what) {
  using Clock = std::chrono::steady_clock;
  // Three phases while nothing moves: a tight spin (a peer on another core
  // usually answers within a microsecond or two), then spinning with
  // sched_yield so a rank sharing this core can run, then sleeping in poll().
  constexpr int kTightSpins = 64;
  auto lastProgress = Clock::now();
  int idleSpins = 0;
  std::vector<pollfd> entries;
  for (;;) {
    if (progressAll()) {
      idleSpins = 0;
      lastProgress = Clock::now();
    }
    if (done()) return;
    if (policy_.abort != nullptr && policy_.abort->load(std::memory_order_relaxed))
      fail(ErrorKind::InvalidUsage, "rank ", policy_.rank, ": communicator aborted while ", what);
    if (++idleSpins < kTightSpins) {
      cpuRelax();
      continue;
    }
    auto idle = Clock::now() - lastProgress;
    if (idle < policy_.spin) {
      sched_yield();  // returns at once if no other thread waits for this core
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
