// Communication hooks: how the Reducer turns one bucket of local gradients
// into the bucket summed over all ranks. The default is a plain all-reduce;
// a hook can compress, quantise or skip communication.
//
// The Reducer has already multiplied the bucket by 1/worldSize when it calls
// the hook (the mean is taken by pre-multiplying), so a hook only has to sum.
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
  bool isLast = false;     // the last bucket of this step
  void* data = nullptr;    // the flat gradients (already divided by the world size)
  std::size_t count = 0;   // elements
  DataType type = DataType::Float32;
  MemoryKind memory = MemoryKind::Host;
};

class CommHook {
 public:
  virtual ~CommHook() = default;
  virtual std::string name() const = 0;
  // Starts reducing the bucket. When the returned Work has finished, without
  // error, bucket.data must hold the element-wise sum over all ranks of their
  // bucket.data. Called once per bucket per synchronised step, in bucket
  // order, on every rank alike; the Work is waited for (or tested) on the
  // thread that calls Reducer::finish().
  virtual WorkPtr run(ProcessGroup& group, const GradBucket& bucket) = 0;
};

// The default: an all-reduce (sum) of the bucket as it is.
std::shared_ptr<CommHook> makeAllReduceHook();

// Halves the bytes on the wire: converts a Float32 bucket to wireType
// (Float16 or Bfloat16, rounding to nearest even), all-reduces that, and
// converts the sum back into the bucket. Buckets of other types are reduced
// unchanged. Float16 keeps more mantissa bits but overflows past 65504;
// Bfloat16 keeps Float32's range with 8 significant bits.
// The hook keeps one scratch buffer per bucket: use one hook per Reducer.
std::shared_ptr<CommHook> makeCompressionHook(DataType wireType);

}  // namespace hora::ddp
