#include "core/tuning.h"

#include "base/env.h"
#include "base/error.h"

namespace hora::core {

Tuning Tuning::fromEnvironment() {
  Tuning t;
  t.chunkBytes = env::getBytes({"HORA_CHUNK_SIZE"}, t.chunkBytes);
  HORA_CHECK_ARG(t.chunkBytes >= 64, "HORA_CHUNK_SIZE must be at least 64 bytes");
  t.sliceBytes = env::getBytes({"HORA_SLICE_SIZE"}, 0);
  HORA_CHECK_ARG(t.sliceBytes == 0 || t.sliceBytes >= 64, "HORA_SLICE_SIZE must be at least 64 bytes");
  t.sliceBytes = t.sliceBytes / 64 * 64;
  t.shmFifoBytes = env::getBytes({"HORA_SHM_FIFO_SIZE"}, 0);
  // At most 1 GiB: each pair of ranks maps a FIFO each way, and a value
  // mistyped by a factor of 1024 must not take the host's memory.
  HORA_CHECK_ARG(t.shmFifoBytes == 0 || (t.shmFifoBytes >= 4096 && t.shmFifoBytes <= (1ull << 30)),
                 "HORA_SHM_FIFO_SIZE must be between 4K and 1G, got ", t.shmFifoBytes, " bytes");
  t.directMaxBytes = env::getBytes({"HORA_DIRECT_MAX_BYTES"}, t.directMaxBytes);
  t.streamingMinSet = env::get({"HORA_STREAMING_MIN"}).has_value();
  t.streamingMinBytes = env::getBytes({"HORA_STREAMING_MIN"}, t.streamingMinBytes);
  t.reductionStreamingMinBytes = t.streamingMinBytes;
  t.fifoStreamingMinSet = env::get({"HORA_FIFO_STREAMING_MIN"}).has_value();
  t.fifoStreamingMinBytes = env::getBytes({"HORA_FIFO_STREAMING_MIN"}, t.fifoStreamingMinBytes);
  t.singleCopyMinBytes = env::getBytes({"HORA_SHM_SINGLE_COPY_MIN"}, t.singleCopyMinBytes);
  t.singleCopyMaxBytes = env::getBytes({"HORA_SHM_SINGLE_COPY_MAX"}, t.singleCopyMaxBytes);
  t.zeroCopyMinBytes = env::getBytes({"HORA_ZERO_COPY_MIN"}, t.zeroCopyMinBytes);
  t.llMaxBytes = env::getBytes({"HORA_LL_MAX_BYTES"}, t.llMaxBytes);
  t.spin = std::chrono::microseconds(env::getInt({"HORA_SPIN_US"}, t.spin.count()));
  HORA_CHECK_ARG(t.spin.count() >= 0, "HORA_SPIN_US must not be negative");
  const std::string wait = env::get({"HORA_WAIT"}).value_or("auto");
  if (wait == "spin") t.waitMode = WaitModeSetting::Spin;
  else if (wait == "yield") t.waitMode = WaitModeSetting::Yield;
  else HORA_CHECK_ARG(wait == "auto", "HORA_WAIT must be auto, spin or yield, got '", wait, "'");
  const long long check = env::getInt({"HORA_CHECK_AGREEMENT"}, 1);
  HORA_CHECK_ARG(check == 0 || check == 1, "HORA_CHECK_AGREEMENT must be 0 or 1, got ", check);
  t.checkAgreement = check == 1;
  t.tracePrefix = env::get({"HORA_TRACE"}).value_or("");
  const long long records = env::getInt({"HORA_TRACE_RECORDS"}, static_cast<long long>(t.traceRecords));
  HORA_CHECK_ARG(records > 0, "HORA_TRACE_RECORDS must be positive, got ", records);
  t.traceRecords = static_cast<std::size_t>(records);
  return t;
}

void Tuning::fitToSharedCpus(bool shared) {
  if (shmFifoBytes == 0) shmFifoBytes = shared ? kSharedCoresShmFifoBytes : kShmFifoBytes;
  if (shared && !streamingMinSet) reductionStreamingMinBytes = kSharedCoresStreamingMinBytes;
  if (shared && !fifoStreamingMinSet) fifoStreamingMinBytes = ~std::size_t{0};
}

}  // namespace hora::core
