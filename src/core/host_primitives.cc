#include "core/host_primitives.h"

#include <cstring>

#include "base/error.h"

namespace hora::core {

StagingPool::StagingPool(std::size_t slotBytes, int slots)
    : slotBytes_(slotBytes), memory_(slotBytes * slots), marks_(slots, 0) {}

HostPrimitives::HostPrimitives(ProgressEngine& engine, transport::SendConnection* next,
                               transport::RecvConnection* prev, const void* in, void* out,
                               const kernels::ReduceSpec& spec, StagingPool& staging)
    : engine_(engine),
      next_(next),
      prev_(prev),
      in_(static_cast<const char*>(in)),
      out_(static_cast<char*>(out)),
      spec_(spec),
      elemSize_(dataTypeSize(spec.type)),
      hasPre_(spec.kind == kernels::ReduceKind::PreMulSum),
      staging_(staging) {
  HORA_ENFORCE(staging.slotBytes() >= elemSize_, "staging slot smaller than an element");
}

char* HostPrimitives::acquireSlot(int* index) {
  *index = nextSlot_;
  nextSlot_ = (nextSlot_ + 1) % staging_.slots();
  std::uint64_t mark = staging_.sendMark(*index);
  if (mark != 0 && next_ != nullptr)
    engine_.waitUntil([&] { return next_->completedBytes() >= mark; }, "sending to the next rank");
  staging_.sendMark(*index) = 0;
  return staging_.slot(*index);
}

void HostPrimitives::receiveInto(char* dst, std::size_t bytes) {
  prev_->post(dst, bytes);
  const std::uint64_t target = prev_->postedBytes();
  engine_.waitUntil([&] { return prev_->completedBytes() >= target; },
                    "receiving from the previous rank");
}

void HostPrimitives::sendFromSlot(int index, std::size_t bytes) {
  next_->post(staging_.slot(index), bytes);
  staging_.sendMark(index) = next_->postedBytes();
}

void HostPrimitives::send(std::size_t inOffset, std::size_t count) {
  if (!hasPre_) {
    next_->post(inAt(inOffset), count * elemSize_);
    engine_.progressAll();
    return;
  }
  // PreMulSum: what leaves is the scaled input, built slice by slice.
  for (std::size_t done = 0; done < count;) {
    std::size_t n = std::min(sliceElems(), count - done);
    int index;
    char* slot = acquireSlot(&index);
    kernels::reduceHost(spec_, slot, inAt(inOffset + done), nullptr, n, false);
    sendFromSlot(index, n * elemSize_);
    engine_.progressAll();
    done += n;
  }
}

void HostPrimitives::recv(std::size_t outOffset, std::size_t count) {
  if (count > 0) receiveInto(outAt(outOffset), count * elemSize_);
}

void HostPrimitives::recvReduce(std::size_t inOffset, char* dst, std::size_t count, bool finalize,
                                bool forward, bool dstIsSlot) {
  for (std::size_t done = 0; done < count;) {
    std::size_t n = std::min(sliceElems(), count - done);
    int index;
    char* slot = acquireSlot(&index);
    receiveInto(slot, n * elemSize_);
    char* target = dstIsSlot ? slot : dst + done * elemSize_;
    kernels::reduceHost(spec_, target, inAt(inOffset + done), slot, n, finalize);
    if (forward) {
      if (dstIsSlot) sendFromSlot(index, n * elemSize_);
      else next_->post(target, n * elemSize_);
    }
    done += n;
  }
}

void HostPrimitives::recvReduceSend(std::size_t inOffset, std::size_t count) {
  recvReduce(inOffset, nullptr, count, false, true, true);
}

void HostPrimitives::recvReduceCopy(std::size_t inOffset, std::size_t outOffset, std::size_t count) {
  recvReduce(inOffset, outAt(outOffset), count, true, false, false);
}

void HostPrimitives::recvReduceCopySend(std::size_t inOffset, std::size_t outOffset,
                                        std::size_t count) {
  recvReduce(inOffset, outAt(outOffset), count, true, true, false);
}

void HostPrimitives::recvCopySend(std::size_t outOffset, std::size_t count) {
  // Forward each slice as soon as it has arrived (cut-through).
  for (std::size_t done = 0; done < count;) {
    std::size_t n = std::min(sliceElems(), count - done);
    char* dst = outAt(outOffset + done);
    receiveInto(dst, n * elemSize_);
    next_->post(dst, n * elemSize_);
    done += n;
  }
}

void HostPrimitives::copySend(std::size_t inOffset, std::size_t outOffset, std::size_t count) {
  // Send straight from the input, then copy locally while it leaves.
  next_->post(inAt(inOffset), count * elemSize_);
  engine_.progressAll();
  localCopy(inOffset, outOffset, count);
}

void HostPrimitives::localReduceCopy(std::size_t inOffset, std::size_t outOffset, std::size_t count) {
  if (count > 0) kernels::reduceHost(spec_, outAt(outOffset), inAt(inOffset), nullptr, count, true);
}

void HostPrimitives::localCopy(std::size_t inOffset, std::size_t outOffset, std::size_t count) {
  const char* src = inAt(inOffset);
  char* dst = outAt(outOffset);
  if (count > 0 && src != dst) std::memmove(dst, src, count * elemSize_);
}

void HostPrimitives::finish() {
  if (next_ != nullptr) engine_.drain("finishing sends to the next rank");
}

}  // namespace hora::core
