// Communication hooks: how the Reducer turns one bucket of this rank's
// gradients into the mean over all ranks. The default is an all-reduce with
// RedOp::Avg; a hook can compress, quantise or skip communication.
//
// Where the division happens: before the sum. Avg on floating types
// multiplies each rank's input by 1/worldSize inside the reduction, so it
// costs no extra pass over the bucket, and the compression hook divides
// each value once it is in 16 bits, as PyTorch's compression hooks do;
// either way partial sums stay in the range of the mean.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "hora/communicator.h"
#include "hora/ddp/bucket_layout.h"
#include "hora/ddp/process_group.h"

namespace hora::ddp {

// One bucket handed to a hook.
struct GradBucket {
  std::size_t index = 0;   // position in reduction order
  bool isLast = false;     // the last bucket of this step the hook sees (empty buckets skip it)
  void* data = nullptr;    // the flat gradients of this rank
  std::size_t count = 0;   // elements
  DataType type = DataType::Float32;
  MemoryKind memory = MemoryKind::Host;
};

class CommHook {
 public:
  virtual ~CommHook() = default;
  virtual std::string name() const = 0;
  // Starts reducing the bucket. When the returned Work has finished, without
  // error, bucket.data must hold the element-wise mean over all ranks of their
  // bucket.data. Called once per bucket per synchronised step, in bucket
  // order, on every rank alike; the Work is waited for (or tested) on the
  // thread that calls Reducer::finish().
  virtual WorkPtr run(ProcessGroup& group, const GradBucket& bucket) = 0;
};

// The default: an all-reduce of the bucket with RedOp::Avg.
std::shared_ptr<CommHook> makeAllReduceHook();

// Halves the bytes on the wire, as PyTorch's fp16_compress_hook and
// bf16_compress_hook: converts a Float32 bucket to wireType (Float16 or
// Bfloat16, rounding to nearest even), divides it by the world size there
// (computed in float, rounded to wireType again), all-reduces that (sum),
// and converts the result back into the bucket.
// Buckets of other types, and buckets in device memory (the conversion runs
// on the host), are averaged unchanged. Float16 keeps more mantissa bits but overflows past 65504;
// Bfloat16 keeps Float32's range with 8 significant bits.
// The hook keeps one scratch buffer per bucket: use one hook per Reducer.
std::shared_ptr<CommHook> makeCompressionHook(DataType wireType);

}  // namespace hora::ddp
