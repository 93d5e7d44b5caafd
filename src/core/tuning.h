// Every tuning knob of the executors, read once from the environment when a
// communicator is created. Each field names its variable; docs/environment.md
// is the user's page for the same list.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "core/wait_mode.h"

namespace hora::core {

struct Tuning {
  // HORA_CHUNK_SIZE: bytes per ring step of the reducing collectives. Large
  // enough to amortise per-step costs, small enough that the ring's
  // pipeline fills quickly. The communicator caps it at half a shm FIFO.
  std::size_t chunkBytes = 512 << 10;
  // HORA_SLICE_SIZE: bytes received, reduced and forwarded at a time. Over
  // shared memory a slice should stay in cache; over TCP fewer, larger
  // socket calls win. Unset (0): the default of the next rank's transport.
  std::size_t sliceBytes = 0;
  static constexpr std::size_t kShmSliceBytes = 128 << 10;
  static constexpr std::size_t kTcpSliceBytes = 512 << 10;
  // HORA_SHM_FIFO_SIZE: bytes of each shared-memory FIFO. Unset (0): the
  // communicator picks kShmFifoBytes, or kSharedCoresShmFifoBytes when
  // ranks share CPUs (wait_mode.h, ranksShareCpus): ranks that take turns
  // on a core pass data through the cache, and a ring's FIFOs are walked
  // slot after slot, so what one rank wrote must still be cached when the
  // next rank runs. Eight connections of 4 MiB touch more memory than a
  // cache holds; of 512 KiB, they fit.
  std::size_t shmFifoBytes = 0;
  static constexpr std::size_t kShmFifoBytes = 4 << 20;
  static constexpr std::size_t kSharedCoresShmFifoBytes = 512 << 10;
  // HORA_DIRECT_MAX_BYTES: all-reduces up to this size (with at most
  // kDirectMaxRanks ranks) take the direct algorithm: one message latency
  // instead of the ring's 2(n-1).
  std::size_t directMaxBytes = 16 << 10;
  static constexpr int kDirectMaxRanks = 16;
  // HORA_STREAMING_MIN: outputs this large are written with non-temporal
  // stores; reductionStreamingMinBytes is the same threshold for the
  // reducing collectives. Unset (streamingMinSet false), the communicator
  // lowers the reductions' to kSharedCoresStreamingMinBytes when ranks share
  // CPUs: a rank's reduced output is then evicted by the ranks that run
  // after it before anything reads it, so writing it around the cache costs
  // nothing and leaves the cache to the FIFO hand-overs. (Not for
  // collectives that forward what they just wrote, as a broadcast does:
  // that would read it back from memory.)
  std::size_t streamingMinBytes = 8 << 20;
  std::size_t reductionStreamingMinBytes = 8 << 20;
  bool streamingMinSet = false;
  static constexpr std::size_t kSharedCoresStreamingMinBytes = 256 << 10;
  // HORA_FIFO_STREAMING_MIN: collectives whose larger buffer has at least
  // this many bytes write what they put into shared-memory FIFOs with
  // non-temporal stores, so that the receiver reads it from memory instead
  // of from the sender's cache. Moving cache lines from one CPU to another
  // is what a virtual machine whose CPUs the host places far apart does
  // slowly, and at these sizes the bytes would leave the cache before long
  // anyway (docs/performance.md, "The slow mode"). Unset
  // (fifoStreamingMinSet false), ranks that share CPUs keep ordinary stores:
  // there the next rank on the same core reads the FIFO from the cache.
  std::size_t fifoStreamingMinBytes = 8 << 20;
  bool fifoStreamingMinSet = false;
  // HORA_SHM_SINGLE_COPY_MIN / MAX: all-gathers with outputs in [min, max)
  // copy once where they may (the planner says why only there).
  std::size_t singleCopyMinBytes = 1 << 20;
  std::size_t singleCopyMaxBytes = 64 << 20;
  // HORA_ZERO_COPY_MIN: collectives on windows whose larger buffer has at
  // least this many bytes skip the FIFOs.
  std::size_t zeroCopyMinBytes = 64 << 10;
  // HORA_LL_MAX_BYTES: operations of at most this many bytes take the LL
  // protocol where the transport has it (shared memory); larger ones take
  // Simple. LL saves the counter's round trip but costs a flag check and a
  // 4-byte copy per 8-byte line on both sides; on CPUs, where a release
  // store costs no fence and a Simple message also moves in one or two
  // cache-line transfers, it measured no faster than Simple at 8 bytes and
  // slower above, so the host default is 0: never LL.
  std::size_t llMaxBytes = 0;
  // HORA_SPIN_US: how long a waiting rank polls (spinning or yielding, see
  // wait_mode.h) before it sleeps in poll(). Within a collective a peer
  // answers in microseconds unless it is not running; sleeping costs a
  // wake-up of tens of microseconds on a virtual machine, and a rank that
  // sleeps makes its neighbours wait long enough to sleep too. So the
  // budget is long against a ring step, short against a training step.
  std::chrono::microseconds spin{2000};
  // HORA_WAIT: auto (spin when this rank's CPUs are its own, yield when
  // ranks share them), spin, or yield.
  WaitModeSetting waitMode = WaitModeSetting::Auto;
  // HORA_CHECK_AGREEMENT: 1 (default) stamps every collective so that ranks
  // that disagree on it stop with an error (core/agreement.h); 0 leaves
  // collectives unchecked. It must be set alike on every rank.
  bool checkAgreement = true;
  // HORA_TRACE (empty: off) and HORA_TRACE_RECORDS: the step trace
  // (step_trace.h). Read here, with the rest, so that a bad bound fails
  // init before the rank joins the others.
  std::string tracePrefix;
  std::size_t traceRecords = std::size_t{1} << 20;

  // The defaults above, overridden by the environment; malformed or
  // out-of-range values are InvalidArgument errors naming the variable.
  static Tuning fromEnvironment();
  // Settles what depends on whether ranks share CPUs (ranksShareCpus), for
  // what the environment left unset: the FIFO size and the streaming
  // thresholds. Alike on every rank, as `shared` is.
  void fitToSharedCpus(bool shared);
};

}  // namespace hora::core
