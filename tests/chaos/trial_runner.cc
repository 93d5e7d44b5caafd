#include "trial_runner.h"

#include <signal.h>

#include <chrono>
#include <memory>
#include <regex>
#include <thread>

#include "rank_program.h"
#include "support/child_process.h"
#include "support/free_port.h"
#include "support/listening_ports.h"
#include "support/stranger.h"

namespace hora::chaos {

using test_support::ChildExit;
using test_support::ChildProcess;
using std::chrono::milliseconds;
using std::chrono::seconds;

int rankNamedFirst(const std::string& text) {
  static const std::regex failedFirst("rank ([0-9]+)(?: \\([^)]*\\))? failed first");
  static const std::regex neverArrived("rank\\(s\\) never arrived: ([0-9]+)");
  std::smatch match;
  if (std::regex_search(text, match, failedFirst)) return std::stoi(match[1]);
  if (std::regex_search(text, match, neverArrived)) return std::stoi(match[1]);
  return -1;
}

namespace {

// Every kind of stranger at `port` (each keeps its connection open, if it
// keeps one, until the vector is dropped).
void strangersAt(int port, std::vector<test_support::Stranger>& strangers) {
  using test_support::Listener;
  using test_support::StrangerKind;
  for (int kind = 0; kind < 6; ++kind) {
    try {
      strangers.emplace_back(static_cast<StrangerKind>(kind), port, Listener::Transport, 0);
    } catch (const std::exception&) {
      // The port closed meanwhile: nothing to disturb.
    }
  }
}

long long faultDelayNs(const TrialPlan& plan) { return static_cast<long long>(plan.faultDelayMs) * 1000000LL; }

}  // namespace

TrialResult runTrial(const TrialPlan& plan) {
  TrialResult result;
  result.plan = plan;
  const int port = test_support::freeLoopbackPort();
  // A trial's whole life: a silent peer is waited for (twice the deadline
  // covers init and a call), and the rest must end well within it.
  const auto limit = seconds(2 * plan.timeoutSeconds + 8);
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  std::vector<test_support::Stranger> strangers;
  for (int r = 0; r < plan.nranks; ++r) {
    ranks.push_back(std::make_unique<ChildProcess>(
        [&plan, r, port](test_support::Reporter& reporter) { return runRank(reporter, plan, r, port); },
        seconds(60)));
    if (r == 0 && plan.category == Category::Junk) {
      std::this_thread::sleep_for(milliseconds(20));
      strangersAt(port, strangers);  // the rendezvous root's port
    }
  }
  const auto start = std::chrono::steady_clock::now();
  ChildProcess& victim = *ranks[plan.victim];
  long long faultNs = -1;
  bool signalled = false;
  auto strike = [&](int signal, const char* phase, milliseconds wait) {
    if (!victim.waitFor(phase, wait)) return;  // it never got there (it failed first): no fault
    std::this_thread::sleep_for(milliseconds(result.plan.faultDelayMs));
    victim.signal(signal);
    faultNs = monotonicNanoseconds();
    signalled = true;
  };
  switch (plan.category) {
    case Category::Kill: {
      static const char* kPhase[] = {"joining", "joining", "running", "destroying"};
      // Before init: at once; during init: a little later, while it meets
      // the others (the delay adds up to 40 ms more).
      if (plan.killPhase == KillPhase::BeforeInit) result.plan.faultDelayMs = 0;
      if (plan.killPhase == KillPhase::DuringInit) std::this_thread::sleep_for(milliseconds(5));
      strike(SIGKILL, kPhase[static_cast<int>(plan.killPhase)], limit);
      break;
    }
    case Category::Stop:
      strike(SIGSTOP, "running", limit);
      break;
    case Category::Junk:
      for (auto& rank : ranks)
        if (rank->waitFor("ready", limit))
          for (int listening : test_support::listeningPorts(rank->pid()))
            if (listening != port) strangersAt(listening, strangers);
      break;
    default:
      break;
  }

  // Collect: every rank must end by the limit (a stopped victim is killed
  // once the others have ended).
  std::vector<ChildExit> exits(plan.nranks);
  auto collect = [&](int r) {
    const auto left = limit - (std::chrono::steady_clock::now() - start);
    exits[r] = ranks[r]->waitExit(std::max(milliseconds(1), std::chrono::duration_cast<milliseconds>(left)));
  };
  for (int r = 0; r < plan.nranks; ++r)
    if (!(r == plan.victim && plan.category == Category::Stop && signalled)) collect(r);
  if (plan.category == Category::Stop && signalled) {
    victim.signal(SIGKILL);
    collect(plan.victim);
  }
  if (plan.category == Category::Abort) {
    const std::string when = victim.value("abort_ns");
    if (!when.empty()) faultNs = std::stoll(when);
  }

  const bool victimFaulted = signalled || (plan.category == Category::Abort && faultNs >= 0);
  for (int r = 0; r < plan.nranks; ++r) {
    ChildProcess& rank = *ranks[r];
    const ChildExit& exit = exits[r];
    const bool killedByUs = r == plan.victim && signalled;
    const std::string who = "rank " + std::to_string(r);
    if (exit.timedOut && !(killedByUs && plan.category == Category::Stop)) {
      result.hang = true;
      result.problems.push_back(who + " still ran at the trial's limit");
      continue;
    }
    if (!killedByUs && !(exit.exited && exit.code == 0)) {
      ++result.crashes;
      result.problems.push_back(who + " ended badly: " + exit.describe());
    }
    if (const std::string wrong = rank.value("wrong"); !wrong.empty()) {
      ++result.wrong;
      result.problems.push_back(who + " got a wrong result: " + wrong);
    }
    if (killedByUs) continue;
    const std::string errorText = rank.value("error_text");
    const bool failed = !rank.value("error_result").empty();
    const int code = failed ? std::stoi(rank.value("error_result")) : 0;
    if (failed && faultNs >= 0 && !rank.value("error_ns").empty())
      result.faultToErrorMs.push_back(static_cast<double>(std::stoll(rank.value("error_ns")) - faultNs) / 1e6);
    if (failed)
      result.errors.push_back((result.faultToErrorMs.empty() ? std::string("-")
                                                            : std::to_string(result.faultToErrorMs.back())) +
                              " ms: " + errorText);
    switch (plan.category) {
      case Category::Kill:
      case Category::Stop:
      case Category::Abort:
        if (!victimFaulted || r == plan.victim) break;
        if (failed && rankNamedFirst(errorText) != plan.victim) {
          ++result.misnamed;
          result.problems.push_back(who + " named another cause: " + errorText);
        }
        break;
      case Category::Junk:
        if (failed || rank.value("done") != "0") {
          ++result.unreported;
          result.problems.push_back(who + " failed although only strangers came: " + errorText);
        }
        break;
      case Category::Mismatch:
        if (!failed) {
          ++result.unreported;
          result.problems.push_back(who + " finished every call although rank " + std::to_string(plan.victim) +
                                    " made another one");
        } else if (code != ncclInvalidUsage) {
          ++result.misnamed;
          result.problems.push_back(who + " failed without naming the mismatch: " + errorText);
        }
        break;
      case Category::Concurrent:
        // The second thread's calls are refused, or mismatch the others'
        // calls, or find them gone: the rank with two threads cannot finish
        // as if nothing happened. (Another rank may have finished all its
        // calls, correctly, before the second thread began.)
        if (r == plan.victim && !failed) {
          ++result.unreported;
          result.problems.push_back(who + " finished every call although rank " + std::to_string(plan.victim) +
                                    " used the communicator from two threads");
        }
        break;
    }
  }
  return result;
}

}  // namespace hora::chaos
