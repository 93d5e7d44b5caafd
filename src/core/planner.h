// The planner: turns an operation into a Plan. Every decision here must come
// out the same on every rank (they run matching schedules), so it depends
// only on what all ranks share: the op's kind, sizes and root, the
// communicator's shape and tuning, and state agreed collectively (windows).
#pragma once

#include <cstddef>

#include "core/op.h"
#include "core/plan.h"
#include "core/tuning.h"

namespace hora::core {

// What the planner knows of the communicator.
struct CommShape {
  int rank = 0;
  int nranks = 1;
  // Every rank may read its previous rank's memory on the ring.
  bool singleCopyRing = false;
  // Some window is usable (registered by all ranks, mapped by all).
  bool windowsUsable = false;
};

class Planner {
 public:
  // `tuning.chunkBytes` must already be capped for the transports (see
  // Communicator); `moveChunkBytes` is the step of data-moving collectives.
  Planner(const Tuning& tuning, std::size_t moveChunkBytes);

  Plan plan(const Op& op, const CommShape& shape) const;
  // The protocol of a message of `bytes` (the same on every rank).
  Protocol protocolFor(std::size_t bytes) const;
  const Tuning& tuning() const { return tuning_; }

 private:
  bool useDirect(const Op& op, const CommShape& shape) const;
  bool mayUseWindows(const Op& op, const CommShape& shape) const;

  Tuning tuning_;
  std::size_t moveChunkBytes_;
};

}  // namespace hora::core
