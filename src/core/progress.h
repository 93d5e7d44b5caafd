// The one wait loop of the host executor. It drives every connection the
// current operation uses until a condition holds, spinning first (a peer's
// data usually arrives within microseconds, and waking a sleeping thread
// costs far more on virtual machines) and then sleeping in poll(), always
// under the deadline and the abort flag.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "base/futex.h"
#include "core/step_trace.h"
#include "core/wait_mode.h"
#include "transport/connection.h"
#include "transport/connector.h"

namespace hora::core {

struct WaitPolicy {
  std::chrono::milliseconds timeout;  // no progress for this long: the peer is declared lost
  std::chrono::microseconds spin;     // poll this long before sleeping in poll()
  const std::atomic<bool>* abort;
  int rank;
  WaitMode mode = WaitMode::Spin;     // how to poll: pause between polls, or yield the core
};

class ProgressEngine {
 public:
  explicit ProgressEngine(const WaitPolicy& policy) : policy_(policy) {}

  // Forgets the connections (keeps the capacity) for the next operation.
  void reset() {
    sends_.clear();
    recvs_.clear();
  }
  void add(transport::SendConnection* connection);
  void add(transport::RecvConnection* connection);

  // Progresses all connections once; true if any byte moved.
  bool progressAll();
  // progressAll(), for the connector to run while it waits for a peer to
  // open a connection this operation is about to use.
  transport::WhileWaiting progressWhileWaiting() {
    return {[](void* engine) { static_cast<ProgressEngine*>(engine)->progressAll(); }, this};
  }

  // Progresses until done() is true. `what` describes the wait for errors.
  template <typename Done>
  void waitUntil(Done done, const char* what) {
    if (progressAll(), done()) return;
    if (trace_ != nullptr) [[unlikely]] {
      tracedWait([&] { return done(); }, what);
      return;
    }
    waitLoop([&] { return done(); }, what);
  }

  // Records every wait that is not met at once on `trace` (null: none).
  void setTrace(StepTrace* trace) { trace_ = trace; }

  // Waits until every posted send has left and every posted receive arrived.
  void drain(const char* what);
  // That is so already, and no connection holds a stamp still to send or
  // to check: what an operation's end waits for, looked at without
  // progressing anything (the usual case after its last receive).
  bool settled() const { return allMoved(/*andStamps=*/true); }

  // Rethrows the error being handled, naming `connection`'s peer as the
  // rank that failed where it is a peer's failure that names nobody yet,
  // and naming the peer in the text of a failure of this rank's own end
  // (System, Internal) that does not name it yet.
  [[noreturn]] static void blamePeerOf(const transport::Connection& connection);
  // f(), a call on `connection` made outside progressAll() (a wait's test
  // of what has arrived, or of room): its errors name the peer as
  // progressAll()'s do, so that the rank that failed first is found.
  template <typename F>
  static auto onConnection(const transport::Connection& connection, F f) {
    try {
      return f();
    } catch (const Error&) {
      blamePeerOf(connection);
    }
  }

  // The connections added since the last reset.
  const std::vector<transport::SendConnection*>& sends() const { return sends_; }
  const std::vector<transport::RecvConnection*>& recvs() const { return recvs_; }

 private:
  template <typename F>
  void waitLoop(F done, const char* what);
  // waitLoop, recorded on trace_.
  template <typename F>
  void tracedWait(F done, const char* what);
  // Bytes this rank's send connections hold that their receivers have not
  // taken yet (for the trace).
  std::uint64_t queuedBytes() const;
  [[noreturn]] void failStalled(const char* what);
  // The wake lines of every connection with work outstanding, into
  // lines_; false if one has none (or none has work), so the waiter must
  // sleep in poll() instead.
  bool gatherWakeLines();
  // Sleeps on lines_ (transport/wake_line.h) until a peer moves, unless
  // the second look (progressAll, then done) finds it has already.
  // True if the second look moved bytes.
  template <typename F>
  bool sleepOnWakeLines(F done);
  // Every posted byte has moved (and, `andStamps`, every stamp has left or
  // been checked): drain()'s goal and settled().
  bool allMoved(bool andStamps) const;

  WaitPolicy policy_;
  std::vector<transport::WakeLine*> lines_;
  std::vector<FutexExpectation> expected_;
  bool wakeLinesWork_ = true;  // cleared if the kernel cannot sleep on them
  std::vector<transport::SendConnection*> sends_;
  std::vector<transport::RecvConnection*> recvs_;
  StepTrace* trace_ = nullptr;
  WaitCounts counts_;  // of the current (or last) waitLoop
};

}  // namespace hora::core

#include "core/progress_wait.h"
