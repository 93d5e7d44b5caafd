// What a protocol wait ends with. Code that runs in a kernel cannot throw,
// so every wait in protocols/ returns one of these; host callers turn a
// failure into a hora::Error naming what was waited on (host_fifo.h).
#pragma once

#include <cstdint>

#include "base/host_device.h"

namespace hora::protocols {

enum class Status : std::uint32_t {
  Ok = 0,
  Aborted,   // the FIFO's abort flag was raised while waiting
  TimedOut,  // the deadline passed first
  Overflow,  // a message did not fit: the receiver's buffer, or LL's 32-bit size
  // The peer's data stayed on the other protocol's FIFO (Simple or LL) while
  // this side waited on its own: the two sides chose different protocols,
  // so their calls differ in size (device kernels; device/protocol_watch.cuh).
  OtherProtocol,
  // The FIFO's other side stopped and said so on the FIFO's abort line
  // (fifo_handle.h): its kernel failed or its communicator was aborted, so
  // what this side waits for will not come (device kernels; device/
  // device_work.h, DeviceFailure).
  PeerStopped,
};

HORA_HOST_DEVICE constexpr const char* statusName(Status status) {
  switch (status) {
    case Status::Ok: return "ok";
    case Status::Aborted: return "aborted";
    case Status::TimedOut: return "timed out";
    case Status::Overflow: return "message larger than its buffer";
    case Status::OtherProtocol: return "the peer's data came by the other protocol";
    case Status::PeerStopped: return "the peer stopped";
  }
  return "unknown status";
}

// A deadline that never passes, in any ordering policy's clock.
inline constexpr std::uint64_t kNoDeadline = ~std::uint64_t{0};

}  // namespace hora::protocols
