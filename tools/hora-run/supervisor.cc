#include "supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "exit_status.h"
#include "rank_environment.h"
#include "rank_process.h"

extern char** environ;

namespace hora::launcher {
namespace {

// How long ranks that ignore SIGKILL's effect (stuck in the kernel) are
// waited for before hora-run gives up on them.
constexpr std::chrono::seconds kAbandonAfterKill{5};
// How long output is still read after the last rank exited: pipes normally
// report end-of-file at once, but a process a rank left behind may hold
// them open for ever.
constexpr std::chrono::seconds kOutputDrainGrace{1};
// After a rank fails, how long the others get to find the failure and end
// by themselves before SIGTERM: they tell each other (across hosts too)
// which rank failed first, and a rank stopped by the launcher first cannot.
// hora finds a dead peer within about half a second.
constexpr std::chrono::milliseconds kFailureGrace{1000};
// How long the output of a job that failed or timed out is still offered to
// a reader that does not take it.
constexpr std::chrono::seconds kFailedJobOutputGrace{5};
// How often the loop looks again while a rank's output is held back for a
// slow reader (nothing else would wake it when the reader catches up).
constexpr std::chrono::milliseconds kHeldBackRecheck{50};

std::string seconds_text(double seconds) {
  std::ostringstream text;
  text << seconds << " s";
  return text.str();
}

std::chrono::steady_clock::duration to_duration(double seconds) {
  // Beyond about thirty years a deadline means "never"; capping keeps the
  // conversion to nanoseconds from overflowing.
  seconds = std::min(seconds, 1e9);
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

std::string rank_name(int global_rank, pid_t pid) {
  return "rank " + std::to_string(global_rank) + " (pid " + std::to_string(pid) + ")";
}

// Whether descriptors 1 and 2 are the same open file.
bool stdout_is_stderr() {
  struct stat out {}, err {};
  return ::fstat(STDOUT_FILENO, &out) == 0 && ::fstat(STDERR_FILENO, &err) == 0 && out.st_dev == err.st_dev &&
         out.st_ino == err.st_ino;
}

}  // namespace

Supervisor::Supervisor(LaunchOptions options, int master_port)
    : options_(std::move(options)),
      master_port_(master_port),
      stdout_writer_(std::make_unique<QueuedWriter>(STDOUT_FILENO)),
      stderr_writer_(stdout_is_stderr() ? nullptr : std::make_unique<QueuedWriter>(STDERR_FILENO)),
      stdout_(*stdout_writer_),
      stderr_(stderr_writer_ ? *stderr_writer_ : *stdout_writer_) {}

Supervisor::~Supervisor() {
  // Reached with ranks still running only when run() threw: never leave
  // them behind.
  for (Rank& rank : ranks_) {
    if (!rank.running) continue;
    ::kill(-rank.pid, SIGKILL);
    while (::waitpid(rank.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    rank.reaped = true;
  }
  release_exited_ranks();
}

void Supervisor::report(const std::string& message) { stderr_.write("hora-run: " + message + "\n"); }

void Supervisor::drain_output() {
  // A job that succeeded waits for its reader as long as the ranks, writing
  // to it directly, would have; within --timeout when one was given. A
  // job that failed or timed out gives a reader that takes nothing a few
  // seconds, then ends with its own exit code. A terminating signal ends
  // the wait in any case.
  std::optional<Clock::time_point> deadline;
  if (exit_code_.value_or(0) != 0) {
    deadline = Clock::now() + kFailedJobOutputGrace;
  } else if (job_limit_) {
    deadline = std::max(*job_limit_, Clock::now());
  }
  auto give_up = [&] {
    stdout_.give_up();
    stderr_.give_up();
  };
  while (true) {
    auto slice_end = Clock::now() + kHeldBackRecheck;
    if (deadline) slice_end = std::min(slice_end, *deadline);
    if (stdout_.drain(slice_end) && stderr_.drain(slice_end)) return;
    if (deadline && Clock::now() >= *deadline) return give_up();
    for (int signal_number : signals_.take_pending()) {
      if (!ends_job(signal_number)) continue;
      if (exit_code_.value_or(0) == 0) exit_code_ = 128 + signal_number;
      return give_up();
    }
  }
}

int Supervisor::run() {
  try {
    start_ranks();
  } catch (const SpawnError& error) {
    exit_code_ = error.not_found() ? kExitNotFound : kExitCannotExecute;
    report(error.what() + std::string(live_rank_count() > 0 ? "; stopping the other ranks" : ""));
    stop_all();
  } catch (const std::runtime_error& error) {
    exit_code_ = kExitLauncherFailure;
    report(error.what() + std::string(live_rank_count() > 0 ? "; stopping the other ranks" : ""));
    stop_all();
  }
  if (options_.timeout_seconds) job_limit_ = job_deadline_ = Clock::now() + to_duration(*options_.timeout_seconds);
  if (live_rank_count() == 0) on_last_rank_gone();

  std::vector<pollfd> watched;
  std::vector<ForwardedStream*> watched_streams;  // watched[i] belongs to watched_streams[i]
  while (!finished()) {
    watched.clear();
    watched_streams.clear();
    bool held_back = false;
    for (const RankOutput& output : streams_) {
      if (!output.stream->open()) continue;
      // A rank whose reader is behind waits in its own write() meanwhile.
      if (output.destination->over_backlog_limit()) {
        held_back = true;
        continue;
      }
      watched.push_back({output.stream->fd(), POLLIN, 0});
      watched_streams.push_back(output.stream.get());
    }
    watched.push_back({signals_.fd(), POLLIN, 0});
    int timeout_ms = poll_timeout_ms();
    if (held_back && (timeout_ms < 0 || timeout_ms > kHeldBackRecheck.count()))
      timeout_ms = static_cast<int>(kHeldBackRecheck.count());
    int ready = ::poll(watched.data(), watched.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) throw_errno("poll failed");
    if (ready > 0) {
      // Output first, so a rank's last words come before the report of its exit.
      for (std::size_t i = 0; i < watched_streams.size(); ++i) {
        if (watched[i].revents != 0) watched_streams[i]->read_available();
      }
      if (watched.back().revents != 0) handle_signals();
    }
    check_deadlines();
  }

  for (const RankOutput& output : streams_) output.stream->close_now();
  // Processes the ranks of a failed job left behind are stopped too.
  if (stopping_) signal_rank_groups(SIGKILL, /*live_ranks_only=*/false);
  release_exited_ranks();
  drain_output();
  return exit_code_.value_or(0);
}

void Supervisor::start_ranks() {
  // Ranks run in process groups of their own, so a rank reading a terminal
  // would be stopped by SIGTTIN; they read /dev/null instead.
  UniqueFd null_input;
  if (::isatty(STDIN_FILENO)) {
    null_input.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!null_input.valid()) throw_errno("cannot open /dev/null for the ranks' standard input");
  }
  ranks_.reserve(static_cast<std::size_t>(options_.nproc_per_node));
  std::vector<RankBinding> bindings =
      options_.bind_to == BindTo::None
          ? plan_bindings({}, {}, options_.nproc_per_node, BindTo::None)
          : plan_bindings(discover_machine_layout(), CpuList::of_this_process(), options_.nproc_per_node,
                          options_.bind_to);
  for (int local_rank = 0; local_rank < options_.nproc_per_node; ++local_rank) {
    start_rank(local_rank, null_input.get(), bindings[static_cast<std::size_t>(local_rank)]);
  }
}

void Supervisor::start_rank(int local_rank, int stdin_fd, const RankBinding& binding) {
  Rank rank;
  rank.local_rank = local_rank;
  rank.global_rank = options_.global_rank(local_rank);

  SpawnRequest request;
  request.command = options_.command;
  std::vector<EnvironmentVariable> variables = rank_variables(options_, local_rank, master_port_);
  for (auto& variable : thread_defaults(options_, std::getenv("OMP_NUM_THREADS")))
    variables.push_back(std::move(variable));
  for (auto& variable : torch_defaults(std::getenv("TORCH_NCCL_ASYNC_ERROR_HANDLING")))
    variables.push_back(std::move(variable));
  request.environment = merged_environment(environ, variables);
  request.stdin_fd = stdin_fd;
  request.signal_mask = signals_.original_mask();
  request.signal_actions = signals_.original_actions();
  if (!binding.cpus.empty()) request.affinity_mask = binding.cpus.to_affinity_mask();
  if (options_.report_bindings) {
    report("rank " + std::to_string(rank.global_rank) + " (local rank " + std::to_string(local_rank) + ") " +
           (binding.cpus.empty() ? std::string("not bound") : "bound to CPUs " + binding.cpus.to_string() + " (" + binding.unit + ")"));
  }

  std::optional<Pipe> out, err;
  if (options_.tag_output) {
    out = make_pipe("the standard output of rank " + std::to_string(rank.global_rank));
    err = make_pipe("the standard error of rank " + std::to_string(rank.global_rank));
    request.stdout_fd = out->write_end.get();
    request.stderr_fd = err->write_end.get();
  }
  try {
    rank.pid = spawn_rank(request);
  } catch (const SpawnError& error) {
    throw SpawnError("rank " + std::to_string(rank.global_rank) + ": " + error.what(), error.not_found());
  }
  rank.running = true;
  ranks_.push_back(rank);

  if (options_.tag_output) {
    // Only the child may hold the write ends, or end-of-file would never come.
    out->write_end.reset();
    err->write_end.reset();
    std::string prefix = "[rank " + std::to_string(rank.global_rank) + "] ";
    auto to = [](QueuedWriter& writer) { return [&writer](std::string_view text) { writer.write(std::string(text)); }; };
    streams_.push_back({std::make_unique<ForwardedStream>(std::move(out->read_end), prefix, to(stdout_)), &stdout_});
    streams_.push_back({std::make_unique<ForwardedStream>(std::move(err->read_end), prefix, to(stderr_)), &stderr_});
  }
}

void Supervisor::handle_signals() {
  for (int signal_number : signals_.take_pending()) {
    if (signal_number == SIGCHLD) {
      reap_exited_ranks();
    } else if (is_forwarded_signal(signal_number)) {
      forward_signal(signal_number);
    } else if (signal_number == SIGTSTP) {
      pause_job();
    } else if (signal_number == SIGCONT) {
      // Continued (after Ctrl-Z, or a SIGSTOP sent to hora-run by hand):
      // the ranks go on too.
      signal_rank_groups(SIGCONT, /*live_ranks_only=*/true);
    }
  }
}

void Supervisor::reap_exited_ranks() {
  // An exited rank is only looked at (WNOWAIT), not reaped: as a zombie it
  // keeps its pid, which is also its process group's number, until the job
  // is over. So the SIGTERM and SIGKILL that later go to the groups of
  // exited ranks (for processes they left behind) can never reach a
  // stranger that was given the number again.
  std::vector<Rank*> exited;
  for (Rank& rank : ranks_) {
    if (!rank.running) continue;
    siginfo_t info{};
    int rc;
    do {
      rc = ::waitid(P_PID, static_cast<id_t>(rank.pid), &info, WEXITED | WNOHANG | WNOWAIT);
    } while (rc < 0 && errno == EINTR);
    if (rc == 0 && info.si_pid == 0) continue;  // still running
    rank.running = false;
    if (rc < 0) {
      // Not our child any more (something else reaped it): its status is
      // lost, and waiting for it would wait for ever. Counted as failed.
      rank.lost = std::string("cannot be waited for (") + std::strerror(errno) + "); its exit status is unknown";
      rank.reaped = true;
      rank.wait_status = W_EXITCODE(kExitLauncherFailure, 0);
    } else {
      rank.wait_status = wait_status_of(info);
    }
    exited.push_back(&rank);
  }
  // When one rank is killed, the others fail because of it within
  // milliseconds, and a busy launcher may find all of them gone at once,
  // listed here in rank order, not the order they died in. A rank that
  // died by a signal is the likelier first cause than one that exited with
  // an error code, so it is reported first.
  std::stable_partition(exited.begin(), exited.end(),
                        [](const Rank* rank) { return WIFSIGNALED(rank->wait_status); });
  for (const Rank* rank : exited) on_rank_exit(*rank);
}

void Supervisor::release_exited_ranks() {
  // After the last signal to the ranks' groups. A rank given up on after
  // SIGKILL (stuck in the kernel) cannot be reaped yet; it is left to init.
  for (Rank& rank : ranks_) {
    if (rank.running || rank.reaped) continue;
    pid_t rc;
    do {
      rc = ::waitpid(rank.pid, nullptr, WNOHANG);
    } while (rc < 0 && errno == EINTR);
    rank.reaped = rc == rank.pid;
  }
}

void Supervisor::on_rank_exit(const Rank& rank) {
  // Once the job is being stopped, what the ranks do is a consequence of
  // the first failure, not news.
  if (!is_success(rank.wait_status) && !stopping_) {
    const std::string what = rank_name(rank.global_rank, rank.pid) + " " +
                             (rank.lost.empty() ? describe_wait_status(rank.wait_status) : rank.lost);
    if (!exit_code_) {
      // The first failure decides the job's exit code.
      exit_code_ = exit_code_for(rank.wait_status);
      const char* others = live_rank_count() == 0   ? ""
                           : options_.keep_going ? "; the other ranks go on (--keep-going)"
                                                 : "; stopping the other ranks";
      report(what + others);
      if (!options_.keep_going) stop_all_after(kFailureGrace);
    } else {
      report(what);  // only under --keep-going is the job still going
    }
  }
  if (live_rank_count() == 0) on_last_rank_gone();
}

void Supervisor::on_last_rank_gone() {
  if (!drain_deadline_) drain_deadline_ = Clock::now() + kOutputDrainGrace;
}

void Supervisor::forward_signal(int signal_number) {
  if (live_rank_count() == 0) return;
  if (ends_job(signal_number) && asked_to_end_) {
    // A second Ctrl-C, or a second SIGTERM from a batch system or a user:
    // ranks that did not end on the first (one that ignores or handles the
    // signal, one blocked in a call) are stopped as after a failure.
    report("received " + signal_name(signal_number) +
           " again; stopping the ranks (SIGTERM, then SIGKILL after --kill-timeout)");
    if (!exit_code_) exit_code_ = 128 + signal_number;
    stop_all();
    return;
  }
  asked_to_end_ = asked_to_end_ || ends_job(signal_number);
  report("received " + signal_name(signal_number) + "; forwarding it to the ranks");
  signal_rank_groups(signal_number, /*live_ranks_only=*/true);
}

void Supervisor::pause_job() {
  // The ranks first, with the signal a terminal sends (a rank may handle
  // it); then hora-run itself, as Ctrl-Z would have stopped it. SIGTSTP is
  // blocked here, so it stops itself with SIGSTOP; the shell's SIGCONT then
  // comes back through the signalfd and continues the ranks.
  report("received SIGTSTP; stopping the ranks and the launcher (continue them with fg or SIGCONT)");
  stderr_.drain(Clock::now() + std::chrono::milliseconds(200));  // shown before the shell's prompt
  signal_rank_groups(SIGTSTP, /*live_ranks_only=*/true);
  ::kill(::getpid(), SIGSTOP);
}

void Supervisor::stop_all() {
  if (stopping_ && !term_deadline_) return;
  stopping_ = true;
  term_deadline_.reset();
  // Groups of ranks that already exited are signalled too: processes they
  // started may still be running.
  if (options_.kill_timeout_seconds <= 0) {  // --kill-timeout 0: SIGKILL at once
    signal_rank_groups(SIGKILL, /*live_ranks_only=*/false);
    abandon_deadline_ = Clock::now() + kAbandonAfterKill;
    return;
  }
  signal_rank_groups(SIGTERM, /*live_ranks_only=*/false);
  kill_deadline_ = Clock::now() + to_duration(options_.kill_timeout_seconds);
}

void Supervisor::stop_all_after(std::chrono::milliseconds grace) {
  if (stopping_) return;
  stopping_ = true;
  term_deadline_ = Clock::now() + grace;
}

void Supervisor::signal_rank_groups(int signal_number, bool live_ranks_only) {
  // A stopped process acts on a signal only once continued (a rank that
  // wrote to the terminal from the background, one stopped by hand): after
  // a signal meant to end the ranks, SIGCONT follows, as shells do.
  const bool ends = ends_job(signal_number);
  for (const Rank& rank : ranks_) {
    if (live_ranks_only && !rank.running) continue;
    // ESRCH (the group is already empty) is the expected, harmless case.
    ::kill(-rank.pid, signal_number);
    if (ends) ::kill(-rank.pid, SIGCONT);
  }
}

void Supervisor::check_deadlines() {
  auto now = Clock::now();
  if (job_deadline_ && now >= *job_deadline_) {
    job_deadline_.reset();
    if (!stopping_ && live_rank_count() > 0) {
      exit_code_ = kExitTimeout;
      report("the job ran longer than --timeout " + seconds_text(*options_.timeout_seconds) +
             "; stopping all ranks");
      stop_all();
    }
  }
  if (term_deadline_ && now >= *term_deadline_) stop_all();
  if (kill_deadline_ && now >= *kill_deadline_) {
    kill_deadline_.reset();
    for (const Rank& rank : ranks_) {
      if (!rank.running) continue;
      report(rank_name(rank.global_rank, rank.pid) + " did not stop within " +
             seconds_text(options_.kill_timeout_seconds) + " of SIGTERM; sending SIGKILL");
    }
    signal_rank_groups(SIGKILL, /*live_ranks_only=*/false);
    abandon_deadline_ = now + kAbandonAfterKill;
  }
  if (abandon_deadline_ && now >= *abandon_deadline_) {
    abandon_deadline_.reset();
    for (Rank& rank : ranks_) {
      if (!rank.running) continue;
      report(rank_name(rank.global_rank, rank.pid) + " did not exit after SIGKILL; giving up on it");
      rank.running = false;
      if (!exit_code_) exit_code_ = kExitLauncherFailure;
    }
    on_last_rank_gone();
  }
}

int Supervisor::live_rank_count() const {
  int live = 0;
  for (const Rank& rank : ranks_) live += rank.running ? 1 : 0;
  return live;
}

bool Supervisor::finished() const {
  if (live_rank_count() > 0) return false;
  bool output_open = false;
  for (const RankOutput& output : streams_) output_open = output_open || output.stream->open();
  return !output_open || (drain_deadline_ && Clock::now() >= *drain_deadline_);
}

int Supervisor::poll_timeout_ms() const {
  std::optional<Clock::time_point> earliest;
  for (const auto& deadline : {job_deadline_, term_deadline_, kill_deadline_, abandon_deadline_, drain_deadline_}) {
    if (deadline && (!earliest || *deadline < *earliest)) earliest = deadline;
  }
  if (!earliest) return -1;  // only a child exit, a signal or output can change anything
  auto remaining = *earliest - Clock::now();
  if (remaining <= Clock::duration::zero()) return 0;
  // Rounded up (waking early would only mean another round) and capped at an
  // hour, which poll()'s int of milliseconds can hold.
  auto milliseconds = std::chrono::ceil<std::chrono::milliseconds>(remaining).count();
  return static_cast<int>(std::min<decltype(milliseconds)>(milliseconds, 3600 * 1000));
}

}  // namespace hora::launcher
