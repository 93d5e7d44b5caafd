#include "guarded_arena.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "nccl.h"

namespace hora_coll_test {

namespace {
constexpr unsigned char kGuardByte = 0xA5;
constexpr unsigned char kUnwrittenByte = 0x5A;  // payload the test did not fill
}  // namespace

namespace {
void freeShared(void* memory) { ncclMemFree(memory); }
}  // namespace

GuardedArena::GuardedArena(const ElementType& type, std::size_t elements, bool unaligned,
                           bool shared)
    : type_(type),
      elements_(elements),
      payloadOffset_(kGuardBytes + (unaligned ? type.size : 0)),
      totalBytes_(payloadOffset_ + elements * type.size + kGuardBytes),
      memory_(nullptr, shared ? freeShared : std::free) {
  void* memory = nullptr;
  if (shared ? ncclMemAlloc(&memory, totalBytes_) != ncclSuccess
             : ::posix_memalign(&memory, 64, totalBytes_) != 0)
    throw std::bad_alloc();
  memory_.reset(static_cast<unsigned char*>(memory));
  payload_ = memory_.get() + payloadOffset_;
  std::memset(memory_.get(), kGuardByte, totalBytes_);
  std::memset(payload_, kUnwrittenByte, elements * type.size);
  image_.assign(memory_.get(), memory_.get() + totalBytes_);
}

void GuardedArena::setInitial(std::size_t index, std::uint64_t bits) {
  storeBits(type_, payload_, index, bits);
  storeBits(type_, image_.data() + payloadOffset_, index, bits);
}

void GuardedArena::expect(std::size_t index, std::uint64_t bits) {
  storeBits(type_, image_.data() + payloadOffset_, index, bits);
}

std::optional<std::string> GuardedArena::firstMismatch(const std::string& name) const {
  const unsigned char* actual = memory_.get();
  if (std::memcmp(actual, image_.data(), totalBytes_) == 0) return std::nullopt;
  std::size_t first = 0;
  while (actual[first] == image_[first]) ++first;
  const std::size_t payloadEnd = payloadOffset_ + elements_ * type_.size;
  if (first < payloadOffset_)
    return name + ": the guard zone before the buffer was written, " +
           std::to_string(payloadOffset_ - first) + " byte(s) before its start";
  if (first >= payloadEnd)
    return name + ": the guard zone after the buffer was written, at byte " +
           std::to_string(first - payloadEnd) + " past its end";
  std::size_t differing = 0;
  for (std::size_t i = 0; i < elements_; ++i)
    if (std::memcmp(actual + payloadOffset_ + i * type_.size,
                    image_.data() + payloadOffset_ + i * type_.size, type_.size) != 0)
      ++differing;
  const std::size_t index = (first - payloadOffset_) / type_.size;
  return name + "[" + std::to_string(index) + "] is " +
         describeBits(type_, loadBits(type_, actual + payloadOffset_, index)) + ", expected " +
         describeBits(type_, loadBits(type_, image_.data() + payloadOffset_, index)) + " (" +
         std::to_string(differing) + " of " + std::to_string(elements_) + " elements differ)";
}

}  // namespace hora_coll_test
