#include "exit_status.h"

#include <sys/wait.h>

#include <csignal>
#include <cstring>

namespace hora::launcher {

bool is_success(int wait_status) { return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0; }

int wait_status_of(const siginfo_t& exited) {
  switch (exited.si_code) {
    case CLD_EXITED: return W_EXITCODE(exited.si_status & 0xff, 0);
    case CLD_KILLED: return W_EXITCODE(0, exited.si_status);
    case CLD_DUMPED: return W_EXITCODE(0, exited.si_status) | WCOREFLAG;
    default: return W_STOPCODE(exited.si_status);  // never asked for: stopped or continued
  }
}

std::string describe_wait_status(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    int signal_number = WTERMSIG(wait_status);
    std::string text = "was killed by signal " + std::to_string(signal_number) + " (" + strsignal(signal_number);
    if (WCOREDUMP(wait_status)) text += ", core dumped";
    return text + ")";
  }
  // waitpid() is never asked for stopped or continued children.
  return "changed state (wait status " + std::to_string(wait_status) + ")";
}

int exit_code_for(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return kExitLauncherFailure;
}

std::string signal_name(int signal_number) {
  switch (signal_number) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGALRM: return "SIGALRM";
    default: return "signal " + std::to_string(signal_number);
  }
}

}  // namespace hora::launcher
