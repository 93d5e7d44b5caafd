#include "signal_routing.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>

namespace hora::launcher {

bool is_forwarded_signal(int signal_number) {
  return std::find(std::begin(kForwardedSignals), std::end(kForwardedSignals), signal_number) !=
         std::end(kForwardedSignals);
}

bool ends_job(int signal_number) {
  return signal_number == SIGINT || signal_number == SIGTERM || signal_number == SIGHUP || signal_number == SIGQUIT;
}

SignalRouting::SignalRouting() {
  // SIGCHLD back to its default: a parent that left it ignored would make the
  // kernel reap our ranks silently, and their exit statuses would be lost.
  auto set_action = [this](int signal_number, void (*handler)(int)) {
    struct sigaction action {};
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    struct sigaction original {};
    if (::sigaction(signal_number, &action, &original) != 0) throw_errno("cannot set up signal handling");
    original_actions_.emplace_back(signal_number, original);
  };
  set_action(SIGCHLD, SIG_DFL);
  set_action(SIGPIPE, SIG_IGN);

  sigset_t routed;
  sigemptyset(&routed);
  sigaddset(&routed, SIGCHLD);
  for (int signal_number : kForwardedSignals) sigaddset(&routed, signal_number);
  for (int signal_number : kJobControlSignals) sigaddset(&routed, signal_number);
  if (::sigprocmask(SIG_BLOCK, &routed, &original_mask_) != 0) throw_errno("cannot block signals");
  signal_fd_.reset(::signalfd(-1, &routed, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!signal_fd_.valid()) throw_errno("cannot create a signalfd");
}

std::vector<int> SignalRouting::take_pending() {
  std::vector<int> signals;
  signalfd_siginfo info;
  while (true) {
    ssize_t count = ::read(signal_fd_.get(), &info, sizeof(info));
    if (count == static_cast<ssize_t>(sizeof(info))) {
      signals.push_back(static_cast<int>(info.ssi_signo));
      continue;
    }
    if (count < 0 && errno == EINTR) continue;
    if (count < 0 && errno != EAGAIN) throw_errno("cannot read the signalfd");
    return signals;
  }
}

}  // namespace hora::launcher
