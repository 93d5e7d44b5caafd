// The primitives of the window schedules (algorithms/windows.h) on the
// host: every rank's buffers are mapped here, each named by (window, offset)
// in the offers the ranks exchanged before the collective.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/windows.h"
#include "kernels/reduce_host.h"

namespace hora::core {

// Where one rank's buffers of a collective are, as (window, offset).
struct WindowOffer {
  std::int32_t offered;  // 0: not both buffers in usable windows
  std::int32_t sendWindow;
  std::int32_t recvWindow;
  std::int32_t reserved;
  std::uint64_t sendOffset;
  std::uint64_t recvOffset;
  // A pre-multiplied sum's scalar on this rank (0 for other reductions).
  // Each rank's input is scaled by its own scalar, but the zero-copy path
  // reduces every rank's input with the scalar of the rank that does the
  // work: it runs only where the scalars are equal on every rank (as for
  // ncclAvg), which every rank sees alike once the offers are exchanged.
  std::uint64_t scalarBits;
};

class WindowPrimitives {
 public:
  // offers[r] is rank r's; largeOutput: outputs this large bypass the cache
  // where nobody reads them soon.
  WindowPrimitives(const WindowTable& windows, const std::vector<WindowOffer>& offers, int rank,
                   const kernels::ReduceSpec& spec, bool largeOutput);

  void reduce(std::size_t inOffset, int outRank, std::size_t outOffset, std::size_t count);
  void copy(int fromRank, std::size_t inOffset, std::size_t outOffset, std::size_t count);

  // Orders streaming stores before the ranks' "done" exchange.
  void finish();

 private:
  // Rank r's send (input) or receive (output) buffer at an element offset,
  // mapped here.
  char* locate(int r, bool send, std::size_t offset, std::size_t count) const;

  const WindowTable& windows_;
  const std::vector<WindowOffer>& offers_;
  int rank_;
  kernels::ReduceSpec spec_;
  std::size_t elemSize_;
  bool large_;
  bool streamed_ = false;
  std::vector<const void*> inputs_;
  std::vector<void*> outputs_;
};

}  // namespace hora::core
