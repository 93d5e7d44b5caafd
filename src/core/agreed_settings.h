// Settings every rank must share. Each decides how an operation's bytes
// move: the size of a ring step, the FIFO that caps it, which algorithm
// and protocol carry a size, which all-gathers copy once, which windows
// skip the FIFOs, whether operations carry stamps, and the slice (the
// slot size of the FIFOs a rank makes, which the argument that a ring step
// fits half a FIFO counts on: core/communicator.cc). Ranks that differ in
// one of them pair different bytes: results come out wrong, or a rank waits
// for bytes that never come. So init compares them (they travel with each
// rank's placement) and fails on every rank, naming the variable, when
// they differ. Settings that only change how a rank waits or writes its
// own output (HORA_SPIN_US, HORA_WAIT, HORA_STREAMING_MIN) may differ.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tuning.h"

namespace hora::core {

struct AgreedSettings {
  std::uint64_t chunkBytes = 0;    // HORA_CHUNK_SIZE
  std::uint64_t shmFifoBytes = 0;  // HORA_SHM_FIFO_SIZE (0: unset)
  std::uint64_t directMaxBytes = 0;
  std::uint64_t llMaxBytes = 0;
  std::uint64_t singleCopyMinBytes = 0;
  std::uint64_t singleCopyMaxBytes = 0;
  std::uint64_t zeroCopyMinBytes = 0;
  std::uint64_t checkAgreement = 0;
  std::uint64_t sliceBytes = 0;  // HORA_SLICE_SIZE (0: unset, the transport's default)
};

// This rank's, from the environment's values (before the communicator fits
// them to the ranks' placement, which every rank does alike).
AgreedSettings agreedSettingsOf(const Tuning& tuning);

// Throws an InvalidUsage error if some rank's settings differ from rank
// 0's: the same text on every rank (but for its "rank R: "), naming the
// variable, the first rank that differs and both values. `sharedCpus`
// settles an unset FIFO size as Tuning::fitToSharedCpus does, so that
// setting it to its default on one rank only is no difference.
void checkSettingsAgree(const std::vector<AgreedSettings>& all, int rank, bool sharedCpus);

}  // namespace hora::core
