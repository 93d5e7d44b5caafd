// What every block of a kernel that waits on FIFOs shares, whatever its
// protocol: the element arithmetic of a collective, what thread 0 tells the
// block between barriers, the primitives' contract over a protocol's move,
// how a failed wait is recorded, and how a block starts and ends. Included
// by the primitives (simple_primitives.cuh, ll_primitives.cuh); compiled
// only by nvcc.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "device/device_work.h"
#include "kernels/dtypes.h"
#include "kernels/reduce_host.h"
#include "kernels/reduce_ops.h"
#include "protocols/device_ordering.h"
#include "protocols/status.h"

namespace hora::device {

// The element arithmetic of one collective: pre, combine and post of
// kernels/reduce_ops.h, chained in Compute<T> and rounded once, as the host
// loops do. Steps that are the identity move the bits unchanged.
template <typename T, typename Combine, typename Pre, typename Post>
struct ElementMath {
  Pre pre;
  Post post;
  static constexpr bool kPlainPre = std::is_same_v<Pre, kernels::FuncIdentity<T>>;
  static constexpr bool kPlainPost = std::is_same_v<Post, kernels::FuncIdentity<T>>;

  // kLocal: this rank's input takes part (with pre); kRemote: the received
  // element does; kPost: the result is final (post applies).
  template <bool kLocal, bool kRemote, bool kPost>
  __device__ T operator()(T local, T remote) const {
    using A = kernels::Arithmetic<T>;
    if constexpr (!kLocal) {
      return remote;
    } else if constexpr (!kRemote) {
      if constexpr (kPlainPre && (!kPost || kPlainPost)) return local;
      auto value = pre.apply(A::load(local));
      if constexpr (kPost) value = post.apply(value);
      return A::store(value);
    } else {
      auto value = Combine::apply(pre.apply(A::load(local)), A::load(remote));
      if constexpr (kPost) value = post.apply(value);
      return A::store(value);
    }
  }
};

// What thread 0 tells the block between the barriers of one piece.
struct BlockShared {
  protocols::Status status;
  std::int32_t origin;  // once stopped: the user rank whose stop came first (DeviceFailure)
  protocols::Status cause;  // and why it stopped (Ok: not known)
  const char* received;
  char* sendSlot;
};

// The contract of algorithms/primitives.h, written once over a protocol's
// move (Simple, simple_primitives.cuh; LL, ll_primitives.cuh):
// Derived::move<kLocal, kRemote, kOut, kSend, kPost>(from, to, i, o, n)
// moves n elements; its flags say whether this rank's input takes part,
// data is received, the output is written, the result is sent on, and the
// post step (an average's division) applies.
template <class Derived>
class RingMoves {
 public:
  __device__ void send(int to, std::size_t i, std::size_t n) {
    self().template move<true, false, false, true, false>(-1, to, i, 0, n);
  }
  __device__ void recv(int from, std::size_t o, std::size_t n) {
    self().template move<false, true, true, false, false>(from, -1, 0, o, n);
  }
  __device__ void recvReduceSend(int from, int to, std::size_t i, std::size_t n) {
    self().template move<true, true, false, true, false>(from, to, i, 0, n);
  }
  __device__ void recvReduceCopy(int from, std::size_t i, std::size_t o, std::size_t n) {
    self().template move<true, true, true, false, true>(from, -1, i, o, n);
  }
  __device__ void recvReduceCopySend(int from, int to, std::size_t i, std::size_t o, std::size_t n) {
    self().template move<true, true, true, true, true>(from, to, i, o, n);
  }
  __device__ void recvCopySend(int from, int to, std::size_t o, std::size_t n) {
    self().template move<false, true, true, true, false>(from, to, 0, o, n);
  }
  __device__ void localReduceCopy(std::size_t i, std::size_t o, std::size_t n) {
    self().template move<true, false, true, false, true>(-1, -1, i, o, n);
  }
  // Only the copying collectives use these two, whose math is the identity.
  __device__ void copySend(int to, std::size_t i, std::size_t o, std::size_t n) {
    self().template move<true, false, true, true, false>(-1, to, i, o, n);
  }
  __device__ void localCopy(std::size_t i, std::size_t o, std::size_t n) {
    self().template move<true, false, true, false, false>(-1, -1, i, o, n);
  }
  // The direct schedules' fan-in is not run by this executor.
  __device__ void recvReduceCopyAll(const int*, int, int, std::size_t, std::size_t, std::size_t) { __trap(); }

 private:
  __device__ Derived& self() { return static_cast<Derived&>(*this); }
};

// The stop note (device_work.h) for a wait on `peer` that ended with
// `status`: the note on the FIFO's abort line (PeerStopped: `line`), the
// note the peer's abort flag holds (Aborted), the peer itself when the wait
// for it passed its deadline (it stopped, or never made its call: the
// ranks behind this one should blame it, not this rank), else this rank,
// each with why.
__device__ inline std::uint32_t stopNoteOf(const DeviceFailure* failure, protocols::Status status, int peer,
                                           const std::uint32_t* line) {
  using protocols::DeviceOrdering;
  std::uint32_t note = 0;
  if (status == protocols::Status::PeerStopped && line != nullptr) note = DeviceOrdering::loadFlag(line);
  if (status == protocols::Status::Aborted && peer >= 0 && peer < failure->ranks)
    note = DeviceOrdering::loadFlag(failure->abortFlags + peer);
  // A note that names nobody (memory a peer freed and reused) is not passed on.
  if (note != 0 && stopNoteOrigin(note) >= 0) return note;
  if (status == protocols::Status::TimedOut && peer >= 0 && peer < failure->ranks) return stopNote(peer, status);
  return stopNote(failure->self, status);
}

// Records a failed wait: the block's status, which stops its later
// primitives, and, if no block failed before, the kernel's failure record
// that the host reads (naming the peer the wait was for); then raises the
// rank's abort flags (device_work.h says why). `line`: the abort line the
// wait watched, read for a PeerStopped's origin.
// (The claim is an atomic at device scope on host-mapped memory: only this
// GPU's blocks contend for it, so that scope is enough.)
__device__ inline void recordFailure(BlockShared* shared, DeviceFailure* failure, protocols::Status status, int peer,
                                     bool sending, const std::uint32_t* line = nullptr) {
  using protocols::DeviceOrdering;
  const std::uint32_t note = stopNoteOf(failure, status, peer, line);
  shared->origin = stopNoteOrigin(note);
  shared->cause = stopNoteCause(note);
  shared->status = status;
  if (atomicCAS(&failure->claimed, 0u, 1u) == 0) {
    failure->peer = peer;
    failure->origin = shared->origin;
    failure->cause = static_cast<std::uint32_t>(shared->cause);
    failure->channel = static_cast<std::int32_t>(blockIdx.x);
    failure->sending = sending ? 1 : 0;
    // Release: the host that sees status reads the fields above whole.
    DeviceOrdering::storeFlagRelease(&failure->status, static_cast<std::uint32_t>(status));
    DeviceOrdering::storeFlag(failure->stopped, 1);
    // Each flag holds the note, so that the blocks it stops pass the same
    // rank and cause on; a flag the host raised first keeps what it says.
    for (std::int32_t r = 0; r < failure->ranks; ++r) atomicCAS(failure->abortFlags + r, 0u, note);
  }
}

// The start of every block of a kernel that waits on FIFOs: thread 0 clears
// the block's status and sets its deadline, and every thread returns once
// both are visible. `shared` and `deadline` are the kernel's __shared__
// variables.
// A kernel queued behind one of its rank's that failed (`stopped` set)
// starts stopped: every primitive returns at once, and nothing is recorded
// (the failure record keeps the first cause).
__device__ inline void beginWaitingBlock(BlockShared* shared, std::uint64_t* deadline, std::uint64_t timeoutNs,
                                         const std::uint32_t* stopped, const DeviceFailure* failure) {
  if (threadIdx.x == 0) {
    const bool stop = stopped != nullptr && protocols::DeviceOrdering::loadFlag(stopped) != 0;
    shared->status = stop ? protocols::Status::Aborted : protocols::Status::Ok;
    // The kernel that set the stop word recorded whose stop it was (before
    // it set the word; should that record not show yet, this rank's own).
    // The record is in host memory, a read across PCIe: only a block that
    // starts stopped reads it (a block that stops later records its own).
    shared->origin = -1;
    shared->cause = protocols::Status::Ok;
    if (stop) {
      const std::int32_t recorded = *static_cast<const volatile std::int32_t*>(&failure->origin);
      shared->origin = recorded >= 0 ? recorded : failure->self;
      if (recorded >= 0)
        shared->cause = static_cast<protocols::Status>(*static_cast<const volatile std::uint32_t*>(&failure->cause));
    }
    *deadline = protocols::DeviceOrdering::now() + timeoutNs;
  }
  __syncthreads();
}

// The end of every block of a kernel that waits on FIFOs: a block that
// stopped says so on the abort line of each of its FIFOs (device_work.h
// says why), with the stop note (the rank whose stop came first, and why
// it stopped), unless the line
// already names one. Every thread of the block calls it.
template <class... Fifos>
__device__ void endBlock(const BlockShared* shared, const Fifos&... fifos) {
  __syncthreads();  // every thread's failure is recorded
  if (threadIdx.x != 0 || shared->status == protocols::Status::Ok || shared->origin < 0) return;
  const std::uint32_t named = stopNote(shared->origin, shared->cause);
  // Release: a neighbour that sees the line also sees every piece this
  // block sent before it (StopLineWatch), and takes it.
  const auto announce = [&](const protocols::FifoHandle& fifo) {
    std::uint32_t* line = protocols::abortLineOf(fifo);
    if (line != nullptr && protocols::DeviceOrdering::loadFlag(line) == 0)
      protocols::DeviceOrdering::storeFlagRelease(line, named);
  };
  (announce(fifos), ...);
}

// Whether the block has stopped, decided at a barrier, as every decision
// to stop is: all threads get the same answer, and none reads the status
// while thread 0 may be recording a failure.
__device__ inline bool blockStoppedAtBarrier(const BlockShared* shared) {
  return __syncthreads_or(shared->status != protocols::Status::Ok) != 0;
}

// The start of a ring kernel: its block 0 records the collective as
// started, before anything else (launch_order.h: the kernel has left the
// hardware queue, and the rank's peers may launch behind it). At system
// scope, since threads on the host poll it while the kernel runs; a
// reduction without a result (red): the block does not wait for it.
__device__ inline void recordKernelStarted(const QueuedKernels& queue) {
  if (queue.collective != 0 && blockIdx.x == 0 && threadIdx.x == 0)
    atomicMax_system(reinterpret_cast<unsigned long long*>(queue.started),
                     static_cast<unsigned long long>(queue.collective));
}

// The end of a kernel: once every block of the launch has got here, the
// launch is recorded as done (device_work.h, QueuedKernels). Not at the end
// of one block: blocks of a point-to-point kernel end far apart (a send
// that found room ends at once, a receive waits for its peer), and the
// host launches the rank's next kernel once it reads the word
// (launch_order.h), which must then no longer stand in front of a peer's
// kernel that the receive still waits for. Every block counts itself in
// device memory; the last one resets the count for the rank's next launch
// (the rank's kernels run one at a time, launch_order.h's rules count
// only launches the host makes, not replays of a graph) and stores the
// launch's number at system scope, since a host thread polls it while
// kernels run. A block that stopped gets here too: a kernel ended by an
// abort or a deadline is counted as done. The largest number stays:
// kernels of one rank on two streams may end out of order. Every thread of
// the block calls it after endBlock (whose barrier puts thread 0 behind
// the block's work).
__device__ inline void recordKernelDone(const QueuedKernels& queue) {
  if (queue.sequence == 0 || threadIdx.x != 0) return;
  // The block's writes (its failure record, its abort lines) come before
  // its count, so the block that counts last sees them ahead of its store.
  __threadfence();
  if (atomicAdd(queue.blocksEnded, 1u) != gridDim.x - 1) return;
  *queue.blocksEnded = 0;  // nobody else counts this launch any more: every block has
  __threadfence_system();
  atomicMax_system(reinterpret_cast<unsigned long long*>(queue.done), static_cast<unsigned long long>(queue.sequence));
}

}  // namespace hora::device
