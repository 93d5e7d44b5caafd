// Runs a job: starts every rank of this node, forwards their output and the
// signals hora-run receives, and decides the job's fate. One thread waits in
// poll() on a signalfd (child exits and signals to forward) and on the ranks'
// output pipes; every wait has a deadline, so nothing spins and nothing hangs.
//
// The policy, as torchrun's: the job succeeds when every rank exits 0. The
// first rank that fails (non-zero exit or killed by a signal) is reported,
// the others get a second to end by themselves (naming the rank that failed
// first), then SIGTERM, then SIGKILL after the kill timeout, and hora-run
// exits with the failing rank's code.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "binding.h"
#include "launch_options.h"
#include "output_forwarder.h"
#include "posix_io.h"
#include "queued_writer.h"
#include "signal_routing.h"

namespace hora::launcher {

class Supervisor {
 public:
  Supervisor(LaunchOptions options, int master_port);
  ~Supervisor();  // kills and reaps ranks still running (only after an error)
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Runs the job to its end and returns hora-run's exit code.
  int run();

 private:
  using Clock = std::chrono::steady_clock;

  struct Rank {
    int local_rank = 0;
    int global_rank = 0;
    pid_t pid = -1;  // also the process-group id
    bool running = false;
    bool reaped = false;  // an exited rank stays a zombie until the job is over
    std::string lost;     // why its exit status is unknown, if it is
    int wait_status = 0;
  };

  void start_ranks();
  void start_rank(int local_rank, int stdin_fd, const RankBinding& binding);
  void handle_signals();
  void reap_exited_ranks();
  // Reaps the exited ranks, whose zombies held their pids (and so their
  // process groups' numbers) until the last signal to those groups.
  void release_exited_ranks();
  void on_rank_exit(const Rank& rank);
  void forward_signal(int signal_number);
  // Ctrl-Z (SIGTSTP): stops the ranks, then hora-run (signal_routing.h).
  void pause_job();
  void stop_all();
  // stop_all once `grace` has passed (ranks still running by then).
  void stop_all_after(std::chrono::milliseconds grace);
  void check_deadlines();
  void on_last_rank_gone();
  bool finished() const;
  int poll_timeout_ms() const;
  int live_rank_count() const;
  void signal_rank_groups(int signal_number, bool live_ranks_only);
  void report(const std::string& message);
  // After the job: waits for the reader of hora-run's output (see run()).
  void drain_output();

  LaunchOptions options_;
  int master_port_;
  SignalRouting signals_;
  // After signals_: their threads inherit the mask it sets. One writer for
  // both when they are the same file (a terminal, `2>&1`): two threads
  // writing one pipe could interleave pieces of their lines.
  std::unique_ptr<QueuedWriter> stdout_writer_;
  std::unique_ptr<QueuedWriter> stderr_writer_;  // null: stdout_writer_ serves both
  QueuedWriter& stdout_;
  QueuedWriter& stderr_;
  std::vector<Rank> ranks_;
  struct RankOutput {
    std::unique_ptr<ForwardedStream> stream;
    QueuedWriter* destination;
  };
  std::vector<RankOutput> streams_;

  std::optional<int> exit_code_;  // set by the first failure or the timeout
  bool stopping_ = false;
  bool asked_to_end_ = false;  // a SIGINT, SIGTERM, SIGHUP or SIGQUIT was forwarded already
  std::optional<Clock::time_point> job_deadline_;      // --timeout, until it fires
  std::optional<Clock::time_point> job_limit_;         // --timeout, kept (the output's drain)
  std::optional<Clock::time_point> term_deadline_;     // a rank failed; SIGTERM then
  std::optional<Clock::time_point> kill_deadline_;     // SIGTERM sent; SIGKILL then
  std::optional<Clock::time_point> abandon_deadline_;  // SIGKILL sent; stop waiting then
  std::optional<Clock::time_point> drain_deadline_;    // all ranks gone; stop reading output then
};

}  // namespace hora::launcher
