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

// How long a waiter sleeps between looks at a connection that has work
// outstanding but no file descriptor to wake it.
constexpr std::chrono::microseconds kNothingToPollSlice{50};
// A rank asleep on wake lines looks at its peers' lifelines and at the
// abort flag this often: a peer that died rings nothing.
constexpr std::chrono::milliseconds kWakeLineSlice{5};

template <typename F>
bool ProgressEngine::sleepOnWakeLines(F done) {
  expected_.clear();
  for (transport::WakeLine* line : lines_) expected_.push_back({&line->bell, transport::announceSleep(*line)});
  struct Awake {
    std::vector<transport::WakeLine*>& lines;
    ~Awake() {
      for (transport::WakeLine* line : lines) transport::endSleep(*line);
    }
  } awake{lines_};
  // The second look: what a peer published before it could see us asleep.
  if (progressAll()) return true;
  if (done()) return false;
  ++counts_.sleeps;
  if (futexWaitAny(expected_, kWakeLineSlice) == FutexSleep::Unsupported) wakeLinesWork_ = false;
  return false;
}

template <typename F>
void ProgressEngine::waitLoop(F done, const char* what) {
  using Clock = std::chrono::steady_clock;
  // Two phases while nothing moves: polling for the spin budget, then
  // sleeping in poll(). How it polls depends on the mode (wait_mode.h):
  // with a core of its own a rank pauses between polls (a pause lasts ten
  // to a hundred and forty cycles, depending on the CPU, so the budget is
  // timed, not counted); when ranks share cores it yields the core after
  // every poll, so the rank it waits for can run. A yield costs a system
  // call (about a microsecond on a virtual machine) and returns at once
  // when no other thread wants the core.
  //
  // Ranks that share cores, once the budget is spent, sleep on their
  // connections' wake lines instead (transport/wake_line.h), where every
  // connection with work outstanding has one: they then use no CPU until a
  // peer moves, where poll() with shared memory's 50 us slices woke them
  // twenty thousand times a second. Sleeping at once, without yielding
  // first, made a ring of 8 ranks on 2 cores slower: each hand-over then
  // costs the waker a system call and the woken rank a trip through the
  // scheduler, where a yielding rank is already in line for the core.
  constexpr int kPausesPerClockRead = 16;
  const bool yield = policy_.mode == WaitMode::Yield;
  auto lastProgress = Clock::now();
  auto lastWatch = lastProgress;
  int idlePolls = 0;
  std::vector<pollfd> entries;
  std::chrono::microseconds slice{0};
  // Looks for dead peers among the connections with work outstanding (a
  // peer that finished its part with us may exit while we still work with
  // others), and gathers what to sleep on in poll(): true if, meanwhile,
  // the wait ended.
  auto watchPeers = [&] {
    entries.clear();
    slice = std::chrono::milliseconds(20);
    auto watch = [&](transport::Connection* connection) {
      if (connection->idle()) return;
      try {
        connection->checkAlive();
      } catch (const Error&) {
        blamePeerOf(*connection);
      }
      if (auto e = connection->pollEntry(); e.fd >= 0) {
        entries.push_back(e);
        slice = std::min(slice, connection->sleepSlice());
      } else {
        // Work outstanding and nothing to sleep on (a device without an
        // fd, or one that may hold a completion already): look again soon.
        slice = std::min(slice, kNothingToPollSlice);
      }
    };
    try {
      for (auto* s : sends_) watch(s);
      for (auto* r : recvs_) watch(r);
    } catch (const Error&) {
      // A peer that has done its part may exit right after its last bytes
      // arrived, between our last look at them and the check of its
      // lifeline: take what is there before reporting it gone.
      progressAll();
      if (done()) return true;
      throw;
    }
    return false;
  };
  counts_ = {};
  for (;;) {
    ++counts_.polls;
    if (progressAll()) {
      idlePolls = 0;
      lastProgress = Clock::now();
    }
    if (done()) return;
    if (policy_.abort != nullptr && policy_.abort->load(std::memory_order_relaxed))
      fail(ErrorKind::InvalidUsage, "rank ", policy_.rank, ": communicator aborted while ", what);
    if (yield) {
      ++counts_.yields;
      sched_yield();
    } else {
      cpuRelax();
      if (++idlePolls % kPausesPerClockRead != 0) continue;
    }
    const auto now = Clock::now();
    if (now - lastProgress < policy_.spin) continue;
    if (now - lastProgress > policy_.timeout) failStalled(what);
    if (yield && wakeLinesWork_ && gatherWakeLines()) {
      if (now - lastWatch >= kWakeLineSlice) {
        if (watchPeers()) return;
        lastWatch = now;
      }
      if (sleepOnWakeLines(done)) lastProgress = Clock::now();
      continue;
    }
    // Sleep until a socket is ready, or for the shortest slice a connection
    // allows (shared memory wakes no descriptor), and look for dead peers.
    if (watchPeers()) return;
    ++counts_.sleeps;
    const timespec timeout{static_cast<time_t>(slice.count() / 1000000),
                           static_cast<long>(slice.count() % 1000000 * 1000)};
    if (::ppoll(entries.data(), entries.size(), &timeout, nullptr) < 0 && errno != EINTR)
      fail(ErrorKind::System, "rank ", policy_.rank, ": poll failed while ", what, ": ",
           errnoText(errno));
  }
}

template <typename F>
void ProgressEngine::tracedWait(F done, const char* what) {
  const std::uint64_t start = StepTrace::nowNs();
  const std::uint64_t queued = queuedBytes();
  try {
    waitLoop(done, what);
  } catch (...) {
    try {
      trace_->wait(what, start, StepTrace::nowNs(), queued, counts_);
    } catch (...) {
      // Out of memory for the record: the wait's own error matters.
    }
    throw;
  }
  trace_->wait(what, start, StepTrace::nowNs(), queued, counts_);
}

}  // namespace hora::core
