// How hora-run receives signals: the ones it acts on are blocked and read
// from a signalfd inside the poll() loop, instead of interrupting the
// launcher at random points in handlers. What it changes is remembered so
// every rank can be started with the signal state hora-run itself inherited.
#pragma once

#include <signal.h>

#include <utility>
#include <vector>

#include "posix_io.h"

namespace hora::launcher {

// Signals hora-run passes on to every rank: the terminating ones, and those
// batch systems send to warn a job (Slurm's --signal=USR1@120).
inline constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM};

bool is_forwarded_signal(int signal_number);
// Job control: Ctrl-Z (SIGTSTP) reaches only the terminal's foreground
// process group, where hora-run is and its ranks (in groups of their own)
// are not; hora-run stops them, then itself, and continues them when it is
// continued (SIGCONT), so that the whole job pauses as one.
inline constexpr int kJobControlSignals[] = {SIGTSTP, SIGCONT};
// The forwarded signals whose default action ends a process (SIGINT,
// SIGTERM, SIGHUP, SIGQUIT): meant to end the job.
bool ends_job(int signal_number);

class SignalRouting {
 public:
  // Blocks SIGCHLD, the forwarded and the job-control signals, opens the signalfd, ignores
  // SIGPIPE (a closed stdout must not kill the launcher while ranks run).
  SignalRouting();
  // Nothing is restored on destruction: a forwarded signal still pending
  // would then hit the launcher itself just before it exits with its own code.
  ~SignalRouting() = default;
  SignalRouting(const SignalRouting&) = delete;
  SignalRouting& operator=(const SignalRouting&) = delete;

  int fd() const { return signal_fd_.get(); }
  // Signals delivered since the last call (SIGCHLD coalesces: one entry may
  // stand for several children that exited).
  std::vector<int> take_pending();

  const sigset_t& original_mask() const { return original_mask_; }
  const std::vector<std::pair<int, struct sigaction>>& original_actions() const { return original_actions_; }

 private:
  sigset_t original_mask_{};
  std::vector<std::pair<int, struct sigaction>> original_actions_;
  UniqueFd signal_fd_;
};

}  // namespace hora::launcher
