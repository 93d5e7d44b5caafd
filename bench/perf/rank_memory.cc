#include "rank_memory.h"

#include <string>

#include "nccl_failure.h"

namespace hora::perf {
namespace {
std::size_t plainBytes(std::size_t bytes, Registration mode) {
  return mode == Registration::None ? bytes : 0;
}
}  // namespace

RankMemory::RankMemory(std::size_t bytes, Registration mode, int rank)
    : mode_(mode),
      rank_(rank),
      bytes_(bytes > 0 ? bytes : 1),
      plainSend_(plainBytes(bytes_, mode)),
      plainRecv_(plainBytes(bytes_, mode)) {
  if (mode_ == Registration::None) {
    send_ = plainSend_.data();
    recv_ = plainRecv_.data();
  } else {
    checkNccl(ncclMemAlloc(&send_, bytes_), "ncclMemAlloc", rank_, nullptr);
    checkNccl(ncclMemAlloc(&recv_, bytes_), "ncclMemAlloc", rank_, nullptr);
  }
  if (send_ == nullptr || recv_ == nullptr) {
    const std::string message = "rank " + std::to_string(rank_) + ": cannot allocate 2 x " +
                                std::to_string(bytes_) + " bytes of host buffers (-e is too large)";
    failAndExit(message.c_str());
  }
}

RankMemory::~RankMemory() {
  if (mode_ == Registration::None) return;
  ncclMemFree(send_);
  ncclMemFree(recv_);
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
