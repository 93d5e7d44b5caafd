// Runs the built hora-run binary the way a user would, capturing its stdout
// and stderr, with a deadline on everything so a broken launcher fails the
// test instead of hanging it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace hora::launcher::testing {

// The hora-run binary under test (the HORA_RUN environment variable).
std::string hora_run_path();

struct LauncherResult {
  int wait_status = 0;
  bool timed_out = false;  // the deadline passed; hora-run was killed
  std::string out;
  std::string err;
  std::chrono::duration<double> elapsed{};

  // hora-run's exit code, or -1 if it did not exit normally.
  int exit_code() const;
  std::vector<std::string> out_lines() const;
  std::vector<std::string> err_lines() const;
};

class LauncherProcess {
 public:
  // Starts hora-run with these arguments, stdin from /dev/null. A
  // soft_process_limit lowers hora-run's soft RLIMIT_NPROC (never above its
  // hard limit), as `ulimit -S -u` would.
  explicit LauncherProcess(const std::vector<std::string>& arguments,
                           std::optional<unsigned long> soft_process_limit = std::nullopt);
  ~LauncherProcess();  // kills hora-run if finish() was not reached
  LauncherProcess(const LauncherProcess&) = delete;
  LauncherProcess& operator=(const LauncherProcess&) = delete;

  pid_t pid() const { return pid_; }
  // From now on nobody reads hora-run's stdout: a pipe that fills and stays
  // full, as behind a stalled reader.
  void stop_reading_stdout() { read_stdout_ = false; }
  const std::string& stdout_so_far() const { return result_.out; }

  // Reads output until stdout holds `text` at least `count` times; false if
  // the deadline passes or hora-run exits first.
  bool wait_for_stdout(const std::string& text, int count, std::chrono::milliseconds timeout);

  // Waits for hora-run to exit and its output to end. After `timeout`,
  // kills hora-run and reports timed_out.
  LauncherResult finish(std::chrono::milliseconds timeout);

 private:
  // Reads what arrives within `wait` (or just waits, once both pipes ended).
  void pump(std::chrono::milliseconds wait);
  void try_reap();

  pid_t pid_ = -1;
  bool reaped_ = false;
  int out_fd_ = -1;
  bool read_stdout_ = true;
  int err_fd_ = -1;
  LauncherResult result_;
  std::chrono::steady_clock::time_point started_;
};

// Starts hora-run and waits (at most 30 s) for it to finish.
LauncherResult run_launcher(const std::vector<std::string>& arguments);

// The same, with hora-run's soft RLIMIT_NPROC lowered to `soft_process_limit`.
LauncherResult run_launcher_with_process_limit(const std::vector<std::string>& arguments,
                                               unsigned long soft_process_limit);

}  // namespace hora::launcher::testing
