// Starting one rank: fork, put the child in a process group of its own,
// connect its standard streams, and exec the program with the rank's
// environment. The call returns only once exec() has succeeded or failed,
// so a program that cannot be started is reported as such, not as a rank
// that "exited with status 127".
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace hora::launcher {

// The program could not be started (not found, not executable, ...).
class SpawnError : public std::runtime_error {
 public:
  // `not_found`: no such program (the shell's 127), rather than one that
  // exists but cannot be run (126).
  SpawnError(const std::string& what, bool not_found) : std::runtime_error(what), not_found_(not_found) {}
  bool not_found() const { return not_found_; }

 private:
  bool not_found_;
};

struct SpawnRequest {
  std::vector<std::string> command;      // program (searched in PATH) and arguments
  std::vector<std::string> environment;  // complete, "NAME=value"
  int stdin_fd = -1;                     // -1: inherit the launcher's
  int stdout_fd = -1;
  int stderr_fd = -1;
  // What the child restores before exec: the launcher blocks and redirects
  // signals for its own supervision, and a program must not inherit that.
  sigset_t signal_mask{};
  std::vector<std::pair<int, struct sigaction>> signal_actions;
  // A cpu_set_t (CpuList::to_affinity_mask) the child binds itself to
  // before exec; empty: the child keeps the launcher's affinity.
  std::vector<unsigned char> affinity_mask;
};

// Returns the child's pid, which is also its process-group id: signalling
// the group (kill(-pid, ...)) reaches the rank and any processes it started.
// Throws SpawnError when exec fails, std::runtime_error when fork fails.
pid_t spawn_rank(const SpawnRequest& request);

}  // namespace hora::launcher
