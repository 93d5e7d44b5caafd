// A fake reliable-connected RDMA device for tests, in one process: queue
// pairs (rdma/queue_pair.h) that move bytes between threads' memory with
// the semantics the protocol relies on and the failures verbs reports:
//   - requests of one queue pair run in the order posted (reliable
//     connection), each a while after it was posted (`delaySteps` polls of
//     either end), and a write lands in ascending address order;
//   - keys, bounds and rights are checked: a write outside the peer's
//     registered memory, or into memory it registered only for its own
//     reads (Access::LocalRead), fails with RemoteAccessError, one from
//     unregistered local memory with LocalError;
//   - a write with immediate that finds no receive posted fails with
//     ReceiverNotReady;
//   - more requests outstanding than the queue holds is an overflow (the
//     post throws, as ibv_post_send fails with ENOMEM);
//   - after a failure the queue pair is in error: what is queued and what
//     is posted later completes as Flushed;
//   - a peer that died (kill()) makes every later request fail with
//     RetryExceeded;
//   - registered memory belongs to the device until its queue pair is
//     closed (a peer's write may land in it up to then): a queue pair
//     closed after the memory it registered was unmapped is counted.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "transport/rdma/device.h"
#include "transport/rdma/queue_pair.h"

namespace hora::transport::rdma::testing {

struct FakeOptions {
  std::size_t sendQueueDepth = 64;
  std::size_t receiveQueueDepth = 64;
  int delaySteps = 0;  // polls (of either end) before a request runs
  // eventFd() gives a descriptor (one that never becomes readable: enough
  // to see when a stream would sleep on it) instead of -1.
  bool reportsEventFd = false;
  // Registrations larger than this fail (as past the locked-memory limit);
  // 0: no limit.
  std::size_t registrationLimitBytes = 0;
};

class FakeQueuePair;

// The memory and queue pairs of one fake device, shared by its ends.
class FakeFabric : public std::enable_shared_from_this<FakeFabric> {
 public:
  std::unique_ptr<FakeQueuePair> createQueuePair(const FakeOptions& options = {});
  // Bytes that one-sided writes have landed through this device.
  std::uint64_t bytesWritten() const { return bytesWritten_.load(); }
  // Bytes that writes took from memory registered with `base` as its start.
  std::uint64_t bytesWrittenFrom(const void* base) const;
  // Registrations in force, of every queue pair; of those, the ones with
  // `access`.
  std::size_t registrations() const;
  std::size_t registrations(Access access) const;
  // The most times one queue pair registered the same memory (base and
  // length), over its life: 1 where every registration is kept for reuse.
  int mostRegistrationsOfOneRange() const;
  // Regions whose memory was unmapped while still registered (found when
  // their queue pair closed). Unmapping is what can be seen: memory from
  // mmap, as glibc's malloc gives for blocks above M_MMAP_THRESHOLD.
  int regionsReleasedWhileRegistered() const { return releasedWhileRegistered_.load(); }

 private:
  friend class FakeQueuePair;
  struct RegisteredMemory {
    char* base;
    std::size_t bytes;
    int owner;  // queue pair id
    Access access;
  };
  mutable std::mutex mutex_;
  std::map<std::uint64_t, RegisteredMemory> memory_;
  std::map<int, FakeQueuePair*> queuePairs_;
  std::atomic<std::uint64_t> bytesWritten_{0};
  std::atomic<int> releasedWhileRegistered_{0};
  std::map<const void*, std::uint64_t> writtenFrom_;  // by registered base
  std::map<std::tuple<int, const void*, std::size_t>, int> timesRegistered_;  // by queue pair and range
  std::uint64_t nextKey_ = 0x1000;
  int nextId_ = 1;
};

class FakeQueuePair final : public QueuePair {
 public:
  FakeQueuePair(std::shared_ptr<FakeFabric> fabric, int id, const FakeOptions& options);
  ~FakeQueuePair() override;

  std::size_t sendQueueDepth() const override { return options_.sendQueueDepth; }
  std::size_t receiveQueueDepth() const override { return options_.receiveQueueDepth; }
  // Each queue pair registers on its own (`owner` is not used): the
  // protocol's view, one registration per queue pair that asks.
  Region registerMemory(void* base, std::size_t bytes, std::uint64_t owner, Access access) override;
  void deregisterMemory(const Region& region) override;
  void postWrite(const Region& from, std::size_t offset, std::size_t bytes, RemoteMemory to, std::uint64_t id,
                 bool signaled) override;
  void postWriteWithImmediate(std::uint32_t immediate, std::uint64_t id) override;
  void postReceive(std::uint64_t id) override;
  std::size_t poll(Completion* out, std::size_t max) override;
  int eventFd() const override { return eventFd_; }
  std::vector<char> address() const override;
  void connect(const std::vector<char>& peerAddress) override;

  // The process behind this end dies: its peer's requests fail from now on.
  void kill();
  bool inError() const;

 private:
  struct Request {
    Operation operation;
    std::uint64_t id;
    bool signaled;
    const char* source;  // a write's, checked at post time
    std::size_t bytes;
    RemoteMemory to;
    std::uint32_t immediate;
    int stepsLeft;
    std::size_t covers;  // unsignaled requests before it that its completion covers
  };
  // Runs requests whose delay has passed, of both ends (fabric lock held).
  void step();
  void run(const Request& request);
  void complete(const Request& request, Status status);
  void enterError();

  std::shared_ptr<FakeFabric> fabric_;
  int id_;
  FakeOptions options_;
  int peer_ = 0;
  bool error_ = false;
  bool dead_ = false;
  std::deque<Request> queued_;
  std::deque<std::uint64_t> receives_;
  std::deque<Completion> completions_;
  std::size_t outstanding_ = 0;  // send requests not yet completed (or covered by a completion)
  std::size_t unsignaledRun_ = 0;
  std::vector<std::uint64_t> keys_;
  int eventFd_ = -1;
};

// The fake as the process's RDMA device (rdma::useDevice): every queue pair
// from one fabric.
class FakeDevice final : public Device {
 public:
  explicit FakeDevice(FakeOptions options = {}, CreditGeometry geometry = {}, std::size_t queuePairsPerConnection = 1)
      : fabric_(std::make_shared<FakeFabric>()),
        options_(options),
        geometry_(geometry),
        queuePairsPerConnection_(queuePairsPerConnection) {}
  std::string name() const override { return "fake reliable-connected device (tests only)"; }
  std::unique_ptr<QueuePair> createQueuePair() override {
    // With several queue pairs per connection, each a little slower than
    // the one before: their completions come out of grant order.
    FakeOptions options = options_;
    options.delaySteps += static_cast<int>(created_++ % static_cast<int>(queuePairsPerConnection_)) * 2;
    return fabric_->createQueuePair(options);
  }
  CreditGeometry geometry() const override { return geometry_; }
  std::size_t queuePairsPerConnection() const override { return queuePairsPerConnection_; }
  // How many queue pairs connections have asked for: proof that bytes went
  // this way and not over TCP.
  int queuePairsCreated() const { return created_.load(); }
  std::uint64_t bytesWritten() const { return fabric_->bytesWritten(); }
  std::uint64_t bytesWrittenFrom(const void* base) const { return fabric_->bytesWrittenFrom(base); }
  std::size_t registrations() const { return fabric_->registrations(); }
  int mostRegistrationsOfOneRange() const { return fabric_->mostRegistrationsOfOneRange(); }

 private:
  std::atomic<int> created_{0};
  std::shared_ptr<FakeFabric> fabric_;
  FakeOptions options_;
  CreditGeometry geometry_;
  std::size_t queuePairsPerConnection_;
};

}  // namespace hora::transport::rdma::testing
