#include "fake_queue_pair.h"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/error.h"

namespace hora::transport::rdma::testing {

std::unique_ptr<FakeQueuePair> FakeFabric::createQueuePair(const FakeOptions& options) {
  int id;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    id = nextId_++;
  }
  return std::make_unique<FakeQueuePair>(shared_from_this(), id, options);
}

FakeQueuePair::FakeQueuePair(std::shared_ptr<FakeFabric> fabric, int id, const FakeOptions& options)
    : fabric_(std::move(fabric)), id_(id), options_(options) {
  if (options_.reportsEventFd) eventFd_ = ::eventfd(0, EFD_CLOEXEC);
  std::lock_guard<std::mutex> lock(fabric_->mutex_);
  fabric_->queuePairs_[id_] = this;
}

namespace {
// Whether every page of [base, base + bytes) is mapped (mincore fails with
// ENOMEM on a range with unmapped pages).
bool mapped(const char* base, std::size_t bytes) {
  if (bytes == 0) return true;
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t first = reinterpret_cast<std::uintptr_t>(base) & ~(page - 1);
  const std::uintptr_t end = reinterpret_cast<std::uintptr_t>(base) + bytes;
  std::vector<unsigned char> resident((end - first + page - 1) / page);
  return ::mincore(reinterpret_cast<void*>(first), end - first, resident.data()) == 0 || errno != ENOMEM;
}
}  // namespace

FakeQueuePair::~FakeQueuePair() {
  if (eventFd_ >= 0) ::close(eventFd_);
  std::lock_guard<std::mutex> lock(fabric_->mutex_);
  for (std::uint64_t key : keys_) {
    const auto found = fabric_->memory_.find(key);
    if (found != fabric_->memory_.end() && !mapped(found->second.base, found->second.bytes))
      fabric_->releasedWhileRegistered_.fetch_add(1);
    fabric_->memory_.erase(key);
  }
  fabric_->queuePairs_.erase(id_);
}

void FakeQueuePair::kill() {
  std::lock_guard<std::mutex> lock(fabric_->mutex_);
  dead_ = true;
  for (std::uint64_t key : keys_) fabric_->memory_.erase(key);
  keys_.clear();
}

bool FakeQueuePair::inError() const {
  std::lock_guard<std::mutex> lock(fabric_->mutex_);
  return error_;
}

Region FakeQueuePair::registerMemory(void* base, std::size_t bytes, std::uint64_t, Access access) {
  if (options_.registrationLimitBytes != 0 && bytes > options_.registrationLimitBytes)
    fail(ErrorKind::System, "fake device: cannot register ", bytes, " bytes (limit ", options_.registrationLimitBytes,
         ")");
  std::lock_guard<std::mutex> lock(fabric_->mutex_);
  const std::uint64_t key = fabric_->nextKey_++;
  fabric_->memory_[key] = {static_cast<char*>(base), bytes, id_, access};
  ++fabric_->timesRegistered_[{id_, base, bytes}];
  keys_.push_back(key);
  // Verbs' way: peers name registered memory by its virtual address.
  return {static_cast<char*>(base), bytes, key, key, reinterpret_cast<std::uint64_t>(base), access};
}

void FakeQueuePair::deregisterMemory(const Region& region) {
  std::lock_guard<std::mutex> lock(fabric_->mutex_);
  const auto found = std::find(keys_.begin(), keys_.end(), region.localKey);
  HORA_ENFORCE(found != keys_.end(), "fake device: deregistering memory that was not registered");
  fabric_->memory_.erase(region.localKey);
  keys_.erase(found);
}

std::uint64_t FakeFabric::bytesWrittenFrom(const void* base) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = writtenFrom_.find(base);
  return found == writtenFrom_.end() ? 0 : found->second;
}

std::size_t FakeFabric::registrations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return memory_.size();
}

std::size_t FakeFabric::registrations(Access access) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<std::size_t>(std::count_if(memory_.begin(), memory_.end(),
                                                [&](const auto& entry) { return entry.second.access == access; }));
}

int FakeFabric::mostRegistrationsOfOneRange() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int most = 0;
  for (const auto& [range, times] : timesRegistered_) most = std::max(most, times);
  return most;
}

std::vector<char> FakeQueuePair::address() const {
  std::vector<char> bytes(sizeof(id_));
  std::memcpy(bytes.data(), &id_, sizeof(id_));
  return bytes;
}

void FakeQueuePair::connect(const std::vector<char>& peerAddress) {
  HORA_ENFORCE(peerAddress.size() == sizeof(peer_), "fake RDMA: bad queue pair address");
  std::memcpy(&peer_, peerAddress.data(), sizeof(peer_));
}

void FakeQueuePair::postWrite(const Region& from, std::size_t offset, std::size_t bytes, RemoteMemory to,
                              std::uint64_t id, bool signaled) {
  std::lock_guard<std::mutex> lock(fabric_->mutex_);
  if (outstanding_ + 1 > options_.sendQueueDepth)
    fail(ErrorKind::Internal, "fake RDMA: send queue overflow (", options_.sendQueueDepth,
         " requests outstanding; signal one now and then and poll its completion)");
  Request request{Operation::Write, id, signaled, nullptr, bytes, to, 0, options_.delaySteps, 0};
  auto local = fabric_->memory_.find(from.localKey);
  const bool localOk = local != fabric_->memory_.end() && local->second.owner == id_ &&
                       local->second.base == from.base && offset + bytes <= local->second.bytes;
  ++outstanding_;
  if (signaled) {
    request.covers = unsignaledRun_;
    unsignaledRun_ = 0;
  } else {
    ++unsignaledRun_;
  }
  if (!localOk) {
    complete(request, Status::LocalError);
    enterError();
    return;
  }
  request.source = from.base + offset;
  fabric_->writtenFrom_[from.base] += bytes;
  if (error_) {
    complete(request, Status::Flushed);
    return;
  }
  queued_.push_back(request);
}

void FakeQueuePair::postWriteWithImmediate(std::uint32_t immediate, std::uint64_t id) {
  std::lock_guard<std::mutex> lock(fabric_->mutex_);
  if (outstanding_ + 1 > options_.sendQueueDepth)
    fail(ErrorKind::Internal, "fake RDMA: send queue overflow (", options_.sendQueueDepth, " requests outstanding)");
  Request request{Operation::WriteWithImmediate, id, true, nullptr, 0, {}, immediate, options_.delaySteps,
                  unsignaledRun_};
  unsignaledRun_ = 0;
  ++outstanding_;
  if (error_) {
    complete(request, Status::Flushed);
    return;
  }
  queued_.push_back(request);
}

void FakeQueuePair::postReceive(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(fabric_->mutex_);
  if (receives_.size() + 1 > options_.receiveQueueDepth)
    fail(ErrorKind::Internal, "fake RDMA: receive queue overflow (", options_.receiveQueueDepth, " posted)");
  if (error_) {
    completions_.push_back({id, Operation::Receive, Status::Flushed, 0});
    return;
  }
  receives_.push_back(id);
}

std::size_t FakeQueuePair::poll(Completion* out, std::size_t max) {
  std::lock_guard<std::mutex> lock(fabric_->mutex_);
  step();
  std::size_t n = 0;
  while (n < max && !completions_.empty()) {
    out[n++] = completions_.front();
    completions_.pop_front();
  }
  return n;
}

void FakeQueuePair::step() {
  // Both ends' NICs work whenever either end polls.
  for (auto& [id, queuePair] : fabric_->queuePairs_) {
    auto& queue = queuePair->queued_;
    while (!queue.empty()) {
      if (queue.front().stepsLeft-- > 0) break;
      const Request request = queue.front();
      queue.pop_front();
      queuePair->run(request);
    }
  }
}

void FakeQueuePair::run(const Request& request) {
  if (error_) {
    complete(request, Status::Flushed);
    return;
  }
  auto peer = fabric_->queuePairs_.find(peer_);
  if (peer == fabric_->queuePairs_.end() || peer->second->dead_) {
    complete(request, Status::RetryExceeded);
    enterError();
    return;
  }
  FakeQueuePair& target = *peer->second;
  if (request.operation == Operation::Write) {
    auto region = fabric_->memory_.find(request.to.key);
    const bool ok = region != fabric_->memory_.end() && region->second.owner == peer_ &&
                    region->second.access == Access::RemoteWrite &&
                    request.to.address >= reinterpret_cast<std::uint64_t>(region->second.base) &&
                    request.to.address + request.bytes <=
                        reinterpret_cast<std::uint64_t>(region->second.base) + region->second.bytes;
    if (!ok) {
      // A reliable-connected responder that finds an access violation
      // moves to the error state too (its receives are flushed), as the
      // requester does.
      complete(request, Status::RemoteAccessError);
      enterError();
      target.enterError();
      return;
    }
    char* into = reinterpret_cast<char*>(request.to.address);
    // Ascending addresses, the last eight bytes last, as a release: what the
    // credit records rely on (their sequence is last).
    if (request.bytes >= 8 && request.to.address % 8 == 0 && request.bytes % 8 == 0) {
      std::memcpy(into, request.source, request.bytes - 8);
      std::uint64_t last;
      std::memcpy(&last, request.source + request.bytes - 8, 8);
      std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(into + request.bytes - 8))
          .store(last, std::memory_order_release);
    } else {
      std::memcpy(into, request.source, request.bytes);
    }
    fabric_->bytesWritten_ += request.bytes;
    complete(request, Status::Success);
    return;
  }
  // A write with immediate: consumes the peer's oldest posted receive.
  if (target.receives_.empty()) {
    complete(request, Status::ReceiverNotReady);
    enterError();
    return;
  }
  target.completions_.push_back({target.receives_.front(), Operation::Receive, Status::Success, request.immediate});
  target.receives_.pop_front();
  complete(request, Status::Success);
}

void FakeQueuePair::complete(const Request& request, Status status) {
  // Successful unsignaled requests complete silently, with the next
  // signaled one; failures always report.
  if (status == Status::Success && !request.signaled) return;
  completions_.push_back({request.id, request.operation, status, 0});
  const std::size_t freed = 1 + request.covers;
  outstanding_ -= std::min(outstanding_, freed);
}

void FakeQueuePair::enterError() {
  error_ = true;
  for (const Request& queued : queued_) completions_.push_back({queued.id, queued.operation, Status::Flushed, 0});
  queued_.clear();
  for (std::uint64_t receive : receives_) completions_.push_back({receive, Operation::Receive, Status::Flushed, 0});
  receives_.clear();
  outstanding_ = 0;
}

}  // namespace hora::transport::rdma::testing
