// hora's C++ API (include/hora/communicator.h) over the core communicator.
#include <unistd.h>

#include <fstream>
#include <random>
#include <thread>

#include "api/arguments.h"
#include "api/cpp_errors.h"
#include "base/env.h"
#include "base/error.h"
#include "base/launcher_env.h"
#include "base/log.h"
#include "bootstrap/root_server.h"
#include "bootstrap/unique_id.h"
#include "core/communicator.h"
#include "core/scalar.h"

namespace hora {

namespace {

// file://PATH: rank 0 starts a root on this host and publishes its address
// in the file (written under a temporary name, then renamed, so that no rank
// reads half of it); the others wait for the file to appear. Rank 0 removes
// the file once every rank has joined (fromInitMethod), as PyTorch's
// FileStore removes its own, so the path can serve the next job. A file
// left by a job that ended early names a root that is gone: a rank that
// finds it refused waits for rank 0 to write the new one. The file must be
// the job's own: two jobs that share it at once can mix their ranks.
bootstrap::UniqueId rendezvousThroughFile(const std::string& path, int rank,
                                          std::chrono::milliseconds timeout) {
  if (rank == 0) {
    bootstrap::UniqueId id = bootstrap::createUniqueIdHere(timeout);
    std::string temporary = strCat(path, ".tmp.", getpid());
    {
      std::ofstream out(temporary);
      out << id.root.toString() << " " << id.magic << "\n";
      if (!out) fail(ErrorKind::System, "cannot write the rendezvous file ", temporary);
    }
    if (std::rename(temporary.c_str(), path.c_str()) != 0)
      fail(ErrorKind::System, "cannot create the rendezvous file ", path, ": ", errnoText(errno));
    return id;
  }
  Deadline deadline = Deadline::after(timeout);
  std::string refused;  // the address of a root that refused us, from a stale file
  for (;;) {
    std::ifstream in(path);
    std::string address;
    std::uint64_t magic = 0;
    if (in >> address >> magic) {
      bootstrap::UniqueId id;
      id.root = SocketAddress::parse(address);
      id.magic = magic;
      // Rank 0's root listens before the file names it: a refusal means the
      // file is an earlier job's.
      try {
        (void)Socket::connect(id.root, Deadline::after(std::chrono::seconds(1)), nullptr, "the rendezvous root",
                              /*listenerWasUp=*/true);
        return id;
      } catch (const Error&) {
        refused = address;
      }
    }
    if (deadline.expired()) {
      if (!refused.empty())
        fail(ErrorKind::Remote, "rank ", rank, ": the rendezvous file ", path, " names a root at ", refused,
             " that refuses connections, and rank 0 wrote no other in time (a file left by an earlier job?)");
      fail(ErrorKind::Remote, "rank ", rank, ": timed out waiting for rank 0 to create the rendezvous file ",
           path);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Arguments are checked by the nccl.h API's rules (api/arguments.h), so that
// both APIs refuse the same calls; messages name this API's parameters.
void checkType(DataType type) { api::checkType(static_cast<int>(type), "data type"); }

// Only the built-in operations: this API has no user-created ones.
void checkOp(RedOp op) {
  int value = static_cast<int>(op);
  HORA_CHECK_ARG(value >= 0 && value < kNumRedOps, "invalid reduction op ", value);
}

}  // namespace

std::unique_ptr<Communicator> Communicator::fromInitMethod(const std::string& initMethod, int rank,
                                                           int worldSize,
                                                           const CommunicatorOptions& options) {
  // A rank or world size of -1 comes from the launcher's variables
  // (torchrun, mpirun, PMI, srun: base/launcher_env.h).
  std::optional<launcher::Placement> placement;
  if (rank < 0 || worldSize < 0) {
    placement = launcher::requirePlacement();
    if (rank < 0) rank = placement->rank;
    if (worldSize < 0) worldSize = placement->worldSize;
  }
  HORA_CHECK_ARG(worldSize >= 1, "world size must be at least 1, got ", worldSize);
  HORA_CHECK_ARG(rank >= 0 && rank < worldSize, "rank ", rank, " is outside [0, ", worldSize, ")");
  return api::onRank(rank, [&] {
    core::CommunicatorConfig config;
    config.timeout = options.timeout.count() > 0 ? options.timeout : env::defaultTimeout();

    bootstrap::UniqueId id;
    std::optional<std::string> rendezvousFile;  // file://
    if (initMethod == "env://") {
      // MASTER_ADDR:MASTER_PORT, or else the address HORA_COMM_ID/NCCL_COMM_ID
      // names (createUniqueId derives the id from it).
      if (auto master = launcher::masterAddress(placement ? &*placement : nullptr))
        id = bootstrap::uniqueIdForAddress(SocketAddress::resolve(master->host, master->port));
      else
        id = bootstrap::createUniqueId();
      config.hostRoot = true;
    } else if (initMethod.rfind("tcp://", 0) == 0) {
      const SocketAddress root = SocketAddress::parse(initMethod.substr(6));
      HORA_CHECK_ARG(root.port() != 0, "'", initMethod, "': port 0 names no port every rank can find (give one)");
      id = bootstrap::uniqueIdForAddress(root);
      config.hostRoot = true;
    } else if (initMethod.rfind("file://", 0) == 0) {
      rendezvousFile = initMethod.substr(7);
      id = rendezvousThroughFile(*rendezvousFile, rank, config.timeout);
    } else {
      fail(ErrorKind::InvalidArgument, "unknown init method '", initMethod,
           "' (use env://, tcp://host:port or file:///path)");
    }
    auto communicator = std::make_unique<Communicator>(std::make_shared<core::Communicator>(id, worldSize, rank, config));
    // Every rank has read the rendezvous file once init is done.
    if (rendezvousFile && rank == 0) std::remove(rendezvousFile->c_str());
    return communicator;
  });
}

Communicator::Communicator(std::shared_ptr<core::Communicator> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() {
  try {
    impl_->finalize();
  } catch (const Error&) {
    // A failed communicator is still released.
  }
}

int Communicator::rank() const { return impl_->rank(); }
int Communicator::size() const { return impl_->nranks(); }

namespace {
core::Op allReduceOp(core::Communicator& c, const void* send, void* recv, std::size_t count,
                     DataType type, RedOp op) {
  checkType(type);
  checkOp(op);
  api::checkedBytes(count, type, 1);
  api::checkBuffer(send, count, "send");
  api::checkBuffer(recv, count, "recv");
  core::Op o = core::makeApiOp(core::OpKind::AllReduce, send, recv, count, type);
  o.reduce = c.reduceSpecFor(static_cast<int>(op), type);
  return o;
}
core::Op broadcastOp(core::Communicator& c, const void* send, void* recv, std::size_t count,
                     DataType type, int root) {
  checkType(type);
  api::checkedBytes(count, type, 1);
  api::checkRoot(root, c.nranks());
  if (c.rank() == root) api::checkBuffer(send, count, "send (at the root)");
  api::checkBuffer(recv, count, "recv");
  core::Op o = core::makeApiOp(core::OpKind::Broadcast, send, recv, count, type);
  o.root = root;
  return o;
}
core::Op reduceOp(core::Communicator& c, const void* send, void* recv, std::size_t count,
                  DataType type, RedOp op, int root) {
  checkType(type);
  checkOp(op);
  api::checkedBytes(count, type, 1);
  api::checkRoot(root, c.nranks());
  api::checkBuffer(send, count, "send");
  if (c.rank() == root) api::checkBuffer(recv, count, "recv (at the root)");
  core::Op o = core::makeApiOp(core::OpKind::Reduce, send, recv, count, type);
  o.reduce = c.reduceSpecFor(static_cast<int>(op), type);
  o.root = root;
  return o;
}
core::Op reduceScatterOp(core::Communicator& c, const void* send, void* recv, std::size_t count,
                         DataType type, RedOp op) {
  checkType(type);
  checkOp(op);
  api::checkedBytes(count, type, c.nranks());
  api::checkBuffer(send, count, "send");
  api::checkBuffer(recv, count, "recv");
  core::Op o = core::makeApiOp(core::OpKind::ReduceScatter, send, recv, count, type);
  o.reduce = c.reduceSpecFor(static_cast<int>(op), type);
  return o;
}
core::Op allGatherOp(core::Communicator& c, const void* send, void* recv, std::size_t count,
                     DataType type) {
  checkType(type);
  api::checkedBytes(count, type, c.nranks());
  api::checkBuffer(send, count, "send");
  api::checkBuffer(recv, count, "recv");
  return core::makeApiOp(core::OpKind::AllGather, send, recv, count, type);
}
core::Op p2pOp(core::Communicator& c, core::OpKind kind, const void* send, void* recv,
               std::size_t count, DataType type, int peer, int tag) {
  checkType(type);
  api::checkedBytes(count, type, 1);
  api::checkPeer(peer, c.nranks());
  api::checkBuffer(kind == core::OpKind::Send ? send : recv, count, "buf");
  core::Op o = core::makeApiOp(kind, send, recv, count, type);
  o.peer = peer;
  o.tag = tag;
  return o;
}
}  // namespace

WorkPtr Communicator::allReduceAsync(const void* send, void* recv, std::size_t count, DataType type,
                                     RedOp op) {
  return api::onRank(impl_->rank(), [&] { return impl_->submit({allReduceOp(*impl_, send, recv, count, type, op)}); });
}
WorkPtr Communicator::broadcastAsync(const void* send, void* recv, std::size_t count, DataType type,
                                     int root) {
  return api::onRank(impl_->rank(), [&] { return impl_->submit({broadcastOp(*impl_, send, recv, count, type, root)}); });
}
WorkPtr Communicator::reduceAsync(const void* send, void* recv, std::size_t count, DataType type,
                                  RedOp op, int root) {
  return api::onRank(impl_->rank(), [&] { return impl_->submit({reduceOp(*impl_, send, recv, count, type, op, root)}); });
}
WorkPtr Communicator::reduceScatterAsync(const void* send, void* recv, std::size_t recvCount,
                                         DataType type, RedOp op) {
  return api::onRank(impl_->rank(), [&] { return impl_->submit({reduceScatterOp(*impl_, send, recv, recvCount, type, op)}); });
}
WorkPtr Communicator::allGatherAsync(const void* send, void* recv, std::size_t sendCount,
                                     DataType type) {
  return api::onRank(impl_->rank(), [&] { return impl_->submit({allGatherOp(*impl_, send, recv, sendCount, type)}); });
}
WorkPtr Communicator::sendAsync(const void* buf, std::size_t count, DataType type, int peer, int tag) {
  return api::onRank(impl_->rank(), [&] { return impl_->submit({p2pOp(*impl_, core::OpKind::Send, buf, nullptr, count, type, peer, tag)}); });
}
WorkPtr Communicator::recvAsync(void* buf, std::size_t count, DataType type, int peer, int tag) {
  return api::onRank(impl_->rank(), [&] { return impl_->submit({p2pOp(*impl_, core::OpKind::Recv, nullptr, buf, count, type, peer, tag)}); });
}

void Communicator::allReduce(const void* send, void* recv, std::size_t count, DataType type, RedOp op) {
  api::onRank(impl_->rank(), [&] { impl_->execute({allReduceOp(*impl_, send, recv, count, type, op)}); });
}
void Communicator::broadcast(const void* send, void* recv, std::size_t count, DataType type, int root) {
  api::onRank(impl_->rank(), [&] { impl_->execute({broadcastOp(*impl_, send, recv, count, type, root)}); });
}
void Communicator::reduce(const void* send, void* recv, std::size_t count, DataType type, RedOp op,
                          int root) {
  api::onRank(impl_->rank(), [&] { impl_->execute({reduceOp(*impl_, send, recv, count, type, op, root)}); });
}
void Communicator::reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type,
                                 RedOp op) {
  api::onRank(impl_->rank(), [&] { impl_->execute({reduceScatterOp(*impl_, send, recv, recvCount, type, op)}); });
}
void Communicator::allGather(const void* send, void* recv, std::size_t sendCount, DataType type) {
  api::onRank(impl_->rank(), [&] { impl_->execute({allGatherOp(*impl_, send, recv, sendCount, type)}); });
}
void Communicator::send(const void* buf, std::size_t count, DataType type, int peer, int tag) {
  api::onRank(impl_->rank(), [&] { impl_->execute({p2pOp(*impl_, core::OpKind::Send, buf, nullptr, count, type, peer, tag)}); });
}
void Communicator::recv(void* buf, std::size_t count, DataType type, int peer, int tag) {
  api::onRank(impl_->rank(), [&] { impl_->execute({p2pOp(*impl_, core::OpKind::Recv, nullptr, buf, count, type, peer, tag)}); });
}
// A communicator that was aborted, revoked or broke says so (InvalidUsage,
// or the failure's kind) before anything waits.
void Communicator::barrier() {
  impl_->checkUsable();
  impl_->finalize();
  impl_->barrier();
}
void Communicator::synchronize() {
  impl_->checkUsable();
  impl_->finalize();
}
void Communicator::abort() { impl_->abort(); }
void Communicator::revoke() { impl_->revoke(); }
std::unique_ptr<Communicator> Communicator::shrink(const std::vector<int>& excludedRanks, ShrinkMode mode) {
  return api::onRank(rank(), [&] {
    return std::make_unique<Communicator>(impl_->shrink(excludedRanks, mode == ShrinkMode::AbortFirst));
  });
}

}  // namespace hora
