#include "rank_memory.h"

#include <algorithm>
#include <string>

#include "device_memory.h"
#include "nccl_failure.h"

namespace hora::perf {
namespace {
// Host buffers are needed for plain host memory and as device mirrors; not
// for registered host memory, which ncclMemAlloc provides.
std::size_t hostBytes(std::size_t bytes, Registration mode, bool onDevice) {
  return mode == Registration::None || onDevice ? bytes : 0;
}
}  // namespace

RankMemory::RankMemory(std::size_t bytes, Registration mode, int rank, std::optional<int> device)
    : mode_(mode),
      rank_(rank),
      device_(device),
      bytes_(bytes > 0 ? bytes : 1),
      hostSend_(hostBytes(bytes_, mode, device.has_value())),
      hostRecv_(hostBytes(bytes_, mode, device.has_value())) {
  if (device_) {
    device::use(*device_, rank_);
    stream_ = device::createStream(rank_);
  }
  if (mode_ != Registration::None) {
    // With a current device, ncclMemAlloc returns memory on it.
    checkNccl(ncclMemAlloc(&send_, bytes_), "ncclMemAlloc", rank_, nullptr);
    checkNccl(ncclMemAlloc(&recv_, bytes_), "ncclMemAlloc", rank_, nullptr);
  } else if (device_) {
    send_ = device::allocate(bytes_, rank_);
    recv_ = device::allocate(bytes_, rank_);
  } else {
    send_ = hostSend_.data();
    recv_ = hostRecv_.data();
  }
  const RankBuffers view = hostView();
  if (send_ == nullptr || recv_ == nullptr || view.send == nullptr || view.recv == nullptr) {
    const std::string message = "rank " + std::to_string(rank_) + ": cannot allocate 2 x " +
                                std::to_string(bytes_) + " bytes of buffers (-e is too large)";
    failAndExit(message.c_str());
  }
}

RankMemory::~RankMemory() {
  if (mode_ != Registration::None) {
    ncclMemFree(send_);
    ncclMemFree(recv_);
  } else if (device_) {
    device::release(send_);
    device::release(recv_);
  }
  device::destroyStream(stream_);
}

RankBuffers RankMemory::hostView() const {
  if (device_) return {hostSend_.data(), hostRecv_.data()};
  return buffers();
}

void RankMemory::upload(std::size_t bytes) const {
  if (!device_) return;
  bytes = std::min(bytes, bytes_);
  device::copyToDevice(send_, hostSend_.data(), bytes, rank_);
  device::copyToDevice(recv_, hostRecv_.data(), bytes, rank_);
}

void RankMemory::download(std::size_t bytes) const {
  if (!device_) return;
  bytes = std::min(bytes, bytes_);
  device::copyToHost(hostSend_.data(), send_, bytes, rank_);
  device::copyToHost(hostRecv_.data(), recv_, bytes, rank_);
}

void RankMemory::complete() const {
  if (device_) device::synchronize(stream_, rank_);
}

void RankMemory::registerWith(ncclComm_t comm) {
  comm_ = comm;
  void* buffers[2] = {send_, recv_};
  for (int i = 0; i < 2; ++i) {
    if (mode_ == Registration::Local) {
      checkNccl(ncclCommRegister(comm, buffers[i], bytes_, &handles_[i]), "ncclCommRegister", rank_,
                comm);
    } else if (mode_ == Registration::Window) {
      checkNccl(
          ncclCommWindowRegister(comm, buffers[i], bytes_, &windows_[i], NCCL_WIN_COLL_SYMMETRIC),
          "ncclCommWindowRegister", rank_, comm);
    }
  }
}

void RankMemory::deregister() {
  for (int i = 0; i < 2; ++i) {
    if (handles_[i] != nullptr)
      checkNccl(ncclCommDeregister(comm_, handles_[i]), "ncclCommDeregister", rank_, comm_);
    if (windows_[i] != nullptr)
      checkNccl(ncclCommWindowDeregister(comm_, windows_[i]), "ncclCommWindowDeregister", rank_,
                comm_);
    handles_[i] = nullptr;
    windows_[i] = nullptr;
  }
}

}  // namespace hora::perf
