// How one operation runs: what the planner decides and an executor carries
// out. A plan names the schedule (algorithms/) and every size it is run
// with, so that the host executor and a CUDA executor run the same plan.
#pragma once

#include <cstddef>

#include "core/op.h"
#include "protocols/protocol.h"

namespace hora::core {

enum class Algorithm {
  Ring,          // algorithms/ring.h
  Direct,        // algorithms/direct.h: every rank to every rank at once
  Windows,       // core/zero_copy.cc: peers' buffers read and written directly
  PointToPoint,  // matched sends and receives
};

using protocols::Protocol;

const char* algorithmName(Algorithm algorithm);

struct Plan {
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::Simple;
  int channels = 1;
  std::size_t chunkElems = 1;  // elements per ring step and channel
  std::size_t alignElems = 1;  // chunk starts fall on multiples of this
  bool streamingStores = false;
  // What the collective writes into shared-memory FIFOs bypasses the cache
  // (Tuning::fifoStreamingMinBytes says why).
  bool streamingFifo = false;
  bool singleCopy = false;
  // Windows plans may find, once the ranks have compared their buffers,
  // that some rank's buffers lie outside windows: they then run as this
  // (ring or direct) instead.
  Algorithm fallback = Algorithm::Ring;
};

}  // namespace hora::core
