// Watching processes of this host from a thread of its own, to learn at
// once that one has exited.
//
// Kernels that wait for a peer's data in GPU memory cannot see the peer's
// process die: they would wait until their deadline. The CUDA executor
// watches its peers' processes here and raises its kernels' abort flag the
// moment one exits (device/cuda_executor.h).
//
// Each process is watched through a pidfd (pidfd_open, Linux 5.3), which
// becomes readable when the process exits; where one cannot be opened (an
// older kernel, a sandbox), processGone() is asked every kFallbackPoll.
// A pidfd names the process itself, not its number, so a pid reused after
// the exit cannot hide it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <thread>
#include <vector>

namespace hora {

class ProcessWatch {
 public:
  struct Watched {
    pid_t pid;
    int rank;  // the caller's name for it, passed back
  };
  // Called on the watch's thread, once for each watched process, when it
  // is found gone.
  using OnGone = std::function<void(const Watched&)>;

  static constexpr std::chrono::milliseconds kFallbackPoll{100};

  // `pidfds`: false tests the fallback.
  ProcessWatch(std::vector<Watched> processes, OnGone onGone, bool pidfds = true);
  // Stops the thread; onGone is not called after this returns.
  ~ProcessWatch();
  ProcessWatch(const ProcessWatch&) = delete;
  ProcessWatch& operator=(const ProcessWatch&) = delete;

  // How many processes are watched through a pidfd (the others: polled).
  int watchedByPidfd() const { return static_cast<int>(pidfds_.size()); }

 private:
  void run();

  std::vector<Watched> byPidfd_;  // byPidfd_[i] is watched through pidfds_[i]
  std::vector<int> pidfds_;
  std::vector<Watched> polled_;  // the watch's thread drops each once reported
  OnGone onGone_;
  int stopFd_ = -1;  // an eventfd: written to stop the thread
  std::thread thread_;
};

}  // namespace hora
