// hora's C++ API: a communicator created the way PyTorch's init_process_group
// creates one, and collectives that run asynchronously and hand back a Work.
//
//   auto comm = hora::Communicator::fromInitMethod("env://");
//   auto work = comm->allReduceAsync(grad, grad, n, hora::DataType::Float32, hora::RedOp::Sum);
//   ... overlap other work ...
//   work->wait();   // throws hora::Error naming the failed rank/peer on failure
//
// Buffers are host memory, or, in builds with CUDA, memory on the GPU that
// was current when the communicator was created. A call on device buffers
// runs on the communicator's own CUDA stream and has completed on the GPU
// when it returns or its Work finishes; work that writes its inputs must be
// complete before the call (synchronise its stream). Collectives on one
// communicator run in the order they were issued, on every rank; the caller
// must issue them in the same order on all ranks (as with NCCL, Gloo and MPI).
#pragma once

#include <array>
#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "hora/error.h"
#include "hora/export.h"
#include "hora/types.h"

namespace hora {

namespace core {
class Communicator;  // the implementation (src/core)
}

// The handle of an asynchronous collective.
class HORA_API Work {
 public:
  virtual ~Work() = default;
  // True once the operation finished (successfully or not); never blocks.
  virtual bool test() = 0;
  // Blocks until the operation finished; rethrows its error, if any.
  virtual void wait() = 0;
  // The error the operation ended with, or null (only meaningful after test()).
  virtual std::exception_ptr error() = 0;
};
using WorkPtr = std::shared_ptr<Work>;

struct CommunicatorOptions {
  // Deadline for init and for every wait on a peer; 0 = HORA_TIMEOUT (default 300 s).
  std::chrono::milliseconds timeout{0};
};

class HORA_API Communicator {
 public:
  // Create from an init method like torch.distributed.init_process_group:
  //   "env://"            rank 0 listens at MASTER_ADDR:MASTER_PORT (or HORA_COMM_ID)
  //   "tcp://host:port"   rank 0 listens there (port 0 is refused)
  //   "file:///path"      rank 0 writes its address to the file; the others read
  //                       it; rank 0 removes it once every rank joined, as
  //                       PyTorch's FileStore does, so the path serves the next
  //                       job (a file left by a job that died is waited past).
  //                       Two jobs must not share the path at the same time.
  // rank/worldSize of -1 are taken from the launcher's variables: RANK and
  // WORLD_SIZE (torchrun, hora-run), or those of mpirun, PMI or srun
  // (docs/environment.md lists them and their precedence).
  static std::unique_ptr<Communicator> fromInitMethod(const std::string& initMethod = "env://",
                                                      int rank = -1, int worldSize = -1,
                                                      const CommunicatorOptions& options = {});

  // A rendezvous made by one rank and handed to the others out of band (a
  // key-value store, a file, MPI): newUniqueId returns NCCL's 128 opaque
  // bytes and, unless NCCL_COMM_ID/HORA_COMM_ID names a fixed address,
  // starts the rendezvous server in this process. Every rank then calls
  // fromUniqueId with the same bytes, collectively. (Plain bytes rather
  // than a std::string: callers built with the other C++ string ABI, such
  // as extensions of PyPI's torch, can use them.)
  using UniqueId = std::array<char, 128>;
  static UniqueId newUniqueId();
  static std::unique_ptr<Communicator> fromUniqueId(const UniqueId& uniqueId, int rank,
                                                    int worldSize,
                                                    const CommunicatorOptions& options = {});

  explicit Communicator(std::shared_ptr<core::Communicator> impl);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;

  WorkPtr allReduceAsync(const void* send, void* recv, std::size_t count, DataType type, RedOp op);
  WorkPtr broadcastAsync(const void* send, void* recv, std::size_t count, DataType type, int root);
  WorkPtr reduceAsync(const void* send, void* recv, std::size_t count, DataType type, RedOp op,
                      int root);
  // recvCount elements land on each rank; send holds size()*recvCount.
  WorkPtr reduceScatterAsync(const void* send, void* recv, std::size_t recvCount, DataType type,
                             RedOp op);
  // recv holds size()*sendCount elements, rank r's contribution at r*sendCount.
  WorkPtr allGatherAsync(const void* send, void* recv, std::size_t sendCount, DataType type);
  // A send and a receive run in issue order too, each on its own: a send
  // larger than the transport's buffer (shared memory: 4 MiB, 512 KiB when
  // ranks share cores) waits for the peer's matching receive. So where
  // every rank sends first and receives second (a ring shift, a halo
  // exchange), large messages wait until HORA_TIMEOUT, and the error then
  // says so; use exchangeAsync (below), whose transfers progress together,
  // or order the calls so that one side receives first.
  // `tag` is not matched: between two ranks messages are taken in the order
  // sent. It travels with the message, and a receive whose tag differs
  // from the message's fails (ErrorKind::InvalidUsage) on both ranks,
  // instead of taking another message's bytes.
  WorkPtr sendAsync(const void* buf, std::size_t count, DataType type, int peer, int tag = 0);
  WorkPtr recvAsync(void* buf, std::size_t count, DataType type, int peer, int tag = 0);
  // send and recv hold size()*count elements: block r of send goes to rank r,
  // and rank r's block for this rank lands at r*count of recv. Not in place.
  WorkPtr allToAllAsync(const void* send, void* recv, std::size_t count, DataType type);
  // The root's recv holds size()*count elements, rank r's send at r*count;
  // recv is ignored (may be null) on the other ranks.
  WorkPtr gatherAsync(const void* send, void* recv, std::size_t count, DataType type, int root);
  // The root's send holds size()*count elements, block r going to rank r;
  // send is ignored (may be null) on the other ranks.
  WorkPtr scatterAsync(const void* send, void* recv, std::size_t count, DataType type, int root);

  // Point-to-point transfers that progress together as one group, as
  // ncclSend/ncclRecv between ncclGroupStart and ncclGroupEnd do: a rank may
  // send to and receive from many peers (itself included) in any order
  // without deadlock. Each peer's receives must match its sends, in order
  // and in size. This is all-to-all with uneven blocks.
  struct Transfer {
    enum class Direction { Send, Recv };
    Direction direction = Direction::Send;
    void* buffer = nullptr;  // read for Send, written for Recv
    std::size_t count = 0;
    int peer = 0;
    int tag = 0;  // as sendAsync's
  };
  WorkPtr exchangeAsync(const std::vector<Transfer>& transfers, DataType type);

  // Blocking forms: return when the result is in the output buffer. They run
  // on the calling thread (after any asynchronous work still queued).
  void allReduce(const void* send, void* recv, std::size_t count, DataType type, RedOp op);
  void broadcast(const void* send, void* recv, std::size_t count, DataType type, int root);
  void reduce(const void* send, void* recv, std::size_t count, DataType type, RedOp op, int root);
  void reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, RedOp op);
  void allGather(const void* send, void* recv, std::size_t sendCount, DataType type);
  void send(const void* buf, std::size_t count, DataType type, int peer, int tag = 0);
  void recv(void* buf, std::size_t count, DataType type, int peer, int tag = 0);
  // Returns when every rank has called it (after this rank's queued work).
  // A rank that calls another collective meanwhile makes both fail with
  // ErrorKind::InvalidUsage, unless HORA_CHECK_AGREEMENT=0 or every rank
  // has a CUDA device (the barrier then runs over the rendezvous ring).
  void barrier();
  // Waits for all asynchronous work issued so far. On a communicator that
  // was aborted or revoked (InvalidUsage) or broke, throws that, as barrier()
  // does.
  void synchronize();

  // Stops all communication; pending and later operations fail. Peers see
  // this rank's connections close and fail too, naming this rank as the
  // one that failed first.
  void abort();

  // Going on after ranks failed (ncclCommRevoke, ncclCommShrink). When a
  // call throws because a peer failed, hora::Error::failedRank() names the
  // rank that failed first. The ranks that remain call shrink() with the
  // same list of ranks to leave out and get a new communicator of their own,
  // ranked in their order here; this one can then only be destroyed.
  // shrink() works on a communicator broken by the failure: it needs
  // neither the excluded ranks nor this communicator's connections.
  enum class ShrinkMode {
    Default,     // operations already issued finish (or fail) first
    AbortFirst,  // they are stopped first (NCCL_SHRINK_ABORT)
  };
  std::unique_ptr<Communicator> shrink(const std::vector<int>& excludedRanks,
                                       ShrinkMode mode = ShrinkMode::Default);
  // Stops every operation in flight and refuses new ones; the others are
  // told. Only shrink() remains possible.
  void revoke();

  core::Communicator& impl() { return *impl_; }

 private:
  std::shared_ptr<core::Communicator> impl_;
};

}  // namespace hora
