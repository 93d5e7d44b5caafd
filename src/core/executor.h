// An executor runs plans. The host executor runs them on the calling CPU
// thread over the transports; the CUDA executor (device/cuda_executor.h)
// enqueues them as kernels on the op's stream. Both run the same schedules (algorithms/) through their
// own primitives.
#pragma once

#include <optional>
#include <span>

#include "core/op.h"
#include "hora/error.h"

namespace hora::core {

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs `ops` (one call, or one group's calls on this communicator): the
  // point-to-point ones together first, so that any pattern of matched sends
  // and receives completes, then the collectives in issue order. Throws on
  // failure.
  virtual void run(std::span<const Op> ops) = 0;

  // Throws for ops this executor cannot run (an argument or usage error that
  // leaves the communicator usable), before any of them runs.
  virtual void check(std::span<const Op> ops) const { (void)ops; }

  // For executors whose work outlives run() (kernels on a stream): stop it
  // now, for the failure of rank `origin` (-1: this rank's own abort), and
  // what stopped it, if anything did (nullopt when nothing failed).
  virtual void abort(int origin = -1) { (void)origin; }
  virtual std::optional<Error> failure() const { return std::nullopt; }
};

}  // namespace hora::core
