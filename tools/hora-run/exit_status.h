// Turning a status from waitpid() into words and into hora-run's own exit
// code, following the shell's convention (128 + signal number for a process
// killed by a signal) so scripts can tell the two cases apart.
#pragma once

#include <signal.h>

#include <string>

namespace hora::launcher {

// Exit codes of hora-run itself (a failing rank's code is passed through).
inline constexpr int kExitUsage = 2;
inline constexpr int kExitLauncherFailure = 1;
inline constexpr int kExitTimeout = 124;       // as timeout(1)
inline constexpr int kExitNotFound = 127;       // as the shell: "command not found"
inline constexpr int kExitCannotExecute = 126;  // as the shell: found, but cannot be run

bool is_success(int wait_status);

// The waitpid()-style status of a child that waitid() found exited (the
// launcher reads exits with waitid(WNOWAIT), which leaves the child to be
// reaped later, and describes them with the functions below).
int wait_status_of(const siginfo_t& exited);

// "exited with status 3", "was killed by signal 9 (Killed)".
std::string describe_wait_status(int wait_status);

// The exit status itself, or 128 + the signal that killed the process.
int exit_code_for(int wait_status);

// "SIGTERM"-style name of a signal for messages, or "signal N" if unknown.
std::string signal_name(int signal_number);

}  // namespace hora::launcher
