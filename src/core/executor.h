// An executor runs plans. The host executor runs them on the calling CPU
// thread over the transports; a CUDA executor will enqueue them as kernels on
// the op's stream. Both run the same schedules (algorithms/) through their
// own primitives.
#pragma once

#include <span>

#include "core/op.h"

namespace hora::core {

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs `ops` (one call, or one group's calls on this communicator): the
  // point-to-point ones together first, so that any pattern of matched sends
  // and receives completes, then the collectives in issue order. Throws on
  // failure.
  virtual void run(std::span<const Op> ops) = 0;
};

}  // namespace hora::core
