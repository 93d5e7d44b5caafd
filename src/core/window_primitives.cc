#include "core/window_primitives.h"

#include <cstring>

#include "algorithms/windows.h"
#include "base/error.h"
#include "kernels/copy_host.h"
#include "kernels/reduce_many.h"

namespace hora::core {

WindowPrimitives::WindowPrimitives(const WindowTable& windows,
                                   const std::vector<WindowOffer>& offers, int rank,
                                   const kernels::ReduceSpec& spec, bool largeOutput)
    : windows_(windows),
      offers_(offers),
      rank_(rank),
      spec_(spec),
      elemSize_(dataTypeSize(spec.type)),
      large_(largeOutput),
      inputs_(offers.size()) {}

char* WindowPrimitives::locate(int r, bool send, std::size_t offset, std::size_t count) const {
  const WindowOffer& o = offers_[r];
  char* at = windows_.address(send ? o.sendWindow : o.recvWindow, r,
                              (send ? o.sendOffset : o.recvOffset) + offset * elemSize_,
                              count * elemSize_);
  // runWindows checked every rank's ranges before the collective began.
  HORA_ENFORCE(at != nullptr, "rank ", rank_, ": rank ", r, "'s window range was checked, yet is gone");
  return at;
}

void WindowPrimitives::reduce(std::size_t inOffset, int outRank, std::size_t outOffset,
                              std::size_t count) {
  const int n = static_cast<int>(offers_.size());
  for (int r = 0; r < n; ++r) inputs_[r] = locate(r, true, inOffset, count);
  outputs_.clear();
  for (int r = 0; r < n; ++r)
    if (outRank == algorithms::kEveryRank || r == outRank)
      outputs_.push_back(locate(r, false, outOffset, count));
  // Streaming stores skip reading the destination into the cache, which
  // pays where the output is not otherwise touched. In place, each output
  // line was just read as an input and is in cache: an ordinary store hits
  // it, while a streaming store would evict it.
  bool inPlace = false;
  for (void* out : outputs_)
    for (const void* in : inputs_) inPlace = inPlace || out == in;
  const bool streaming = large_ && !inPlace;
  streamed_ = streamed_ || streaming;
  kernels::reduceHostMany(spec_, outputs_.data(), static_cast<int>(outputs_.size()),
                          inputs_.data(), n, count, streaming);
}

void WindowPrimitives::copy(int fromRank, std::size_t inOffset, std::size_t outOffset,
                            std::size_t count) {
  const char* src = locate(fromRank, true, inOffset, count);
  char* dst = locate(rank_, false, outOffset, count);
  const std::size_t bytes = count * elemSize_;
  if (dst == src || bytes == 0) return;
  // An output nobody reads soon bypasses the cache.
  if (large_) {
    kernels::copyStreaming(dst, src, bytes);
    streamed_ = true;
  } else {
    std::memcpy(dst, src, bytes);
  }
}

void WindowPrimitives::finish() {
  if (streamed_) kernels::streamingFence();
}

}  // namespace hora::core
