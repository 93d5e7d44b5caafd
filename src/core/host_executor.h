// The host executor: runs plans for host buffers on the calling thread, the
// schedules of algorithms/ over HostPrimitives, waiting through one
// progress engine under the communicator's deadline and abort flag.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "algorithms/primitives.h"
#include "bootstrap/bootstrap.h"
#include "core/agreement.h"
#include "core/executor.h"
#include "core/host_primitives.h"
#include "core/plan.h"
#include "core/step_trace.h"
#include "core/planner.h"
#include "core/windows.h"
#include "transport/connector.h"

namespace hora::core {

// What the executor needs of its communicator; the references outlive it.
struct HostExecutorContext {
  int rank;
  int nranks;
  const bootstrap::Bootstrap& bootstrap;  // peers' names for errors
  transport::Connector& connector;
  const WindowTable& windows;
  std::vector<int> ringRanks;  // user ranks in ring order
  bool singleCopyRing;
  WaitPolicy wait;
  bool checkAgreement;  // stamp collectives (core/agreement.h)
};

class HostExecutor final : public Executor {
 public:
  HostExecutor(HostExecutorContext context, const Tuning& tuning, std::size_t moveChunkBytes,
               std::size_t sliceBytes);

  void run(std::span<const Op> ops) override;

  // How many collectives ran on windows without FIFOs (for tests and logs).
  std::uint64_t windowCollectives() const { return windowCollectives_.load(); }

 private:
  ProgressEngine& freshEngine();
  void runCollective(const Op& op);
  void runPointToPoint(const std::vector<const Op*>& ops);
  void runSchedule(const Op& op, const Plan& plan, Algorithm algorithm);
  // Collectives on windows (core/zero_copy.cc). Returns false, having done
  // nothing else, when some rank's buffers are not in usable windows.
  bool runWindows(const Op& op, const Plan& plan);
  // Sends `bytes` from `mine` to every other rank and receives theirs:
  // all[r * bytes] holds rank r's, this rank's included. Stamped with the
  // current collective's stamp, if it has one.
  void exchangeWithAll(const void* mine, void* all, std::size_t bytes, const char* what);
  // Runs the operations; run() words agreement failures.
  void runAll(std::span<const Op> ops);

  HostExecutorContext ctx_;
  algorithms::Ring ring_;
  // The ring's neighbours of this rank, which every checked collective
  // stamps (fixed for the communicator's life, so found once).
  int ringNext_ = -1, ringPrev_ = -1;
  std::vector<int> rankOrder_;  // 0, 1, ..., n-1 (direct schedules)
  Planner planner_;  // holds the tuning record
  std::unique_ptr<StepTrace> trace_;  // HORA_TRACE (core/step_trace.h); null: off
  ProgressEngine engine_;
  StagingPool staging_;
  HostLinks links_;
  std::atomic<std::uint64_t> windowCollectives_{0};
  // Agreement (core/agreement.h): collectives run so far, messages sent to
  // and received from each peer, the operation under way (its descriptor
  // is made only for an error) and the collective's stamp, if checked.
  std::uint64_t collectives_ = 0;
  std::vector<std::uint64_t> messagesTo_, messagesFrom_;
  struct Current {
    const Op* op = nullptr;
    std::uint64_t sequence = 0;
    bool windows = false;  // planned on windows (the stamp says so)
  };
  Current current_;
  transport::OpStamp collectiveStamp_;
  const transport::OpStamp* currentStamp() const {
    return ctx_.checkAgreement ? &collectiveStamp_ : nullptr;
  }
  // The operation under way, described (none before the first).
  std::optional<OpDescriptor> currentDescriptor() const;
};

}  // namespace hora::core
