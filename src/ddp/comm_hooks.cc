#include <cstdint>
#include <string>
#include <vector>

#include "float_formats.h"
#include "hora/ddp/comm_hook.h"
#include "works.h"

namespace hora::ddp {

namespace {

class AllReduceHook final : public CommHook {
 public:
  std::string name() const override { return "allreduce"; }
  WorkPtr run(ProcessGroup& group, const GradBucket& bucket) override {
    // Avg on floating types multiplies every input by 1/size inside the
    // reduction itself: the mean costs no extra pass over the bucket.
    return group.allReduce(bucket.data, bucket.count, bucket.type, RedOp::Avg);
  }
};

class CompressionHook final : public CommHook {
 public:
  explicit CompressionHook(DataType wireType) : wireType_(wireType) {
    if (wireType != DataType::Float16 && wireType != DataType::Bfloat16)
      throw Error(ErrorKind::InvalidArgument,
                  std::string("the compression hook sends half or bfloat16, not ") +
                      dataTypeName(wireType));
  }

  std::string name() const override {
    return std::string("compress-") + dataTypeName(wireType_);
  }

  WorkPtr run(ProcessGroup& group, const GradBucket& bucket) override {
    // Already small, or double, or in device memory (the conversion runs on
    // the host): averaged as it is. Failing instead would end training at
    // the first step for want of an optimisation.
    if (bucket.type != DataType::Float32 || bucket.memory != MemoryKind::Host)
      return group.allReduce(bucket.data, bucket.count, bucket.type, RedOp::Avg);

    std::vector<std::uint16_t>& wire = scratchFor(bucket.index, bucket.count);
    auto* values = static_cast<float*>(bucket.data);
    const bool half = wireType_ == DataType::Float16;
    // As PyTorch's fp16_compress_hook and bf16_compress_hook compute it
    // (buffer.to(16 bits).div_(world size)): each value is rounded to 16
    // bits first, then divided by the world size in float and rounded
    // again, so that a program moved from PyTorch gets the same numbers. A
    // gradient beyond Float16's range is infinite before the division, as
    // there.
    const auto worldSize = static_cast<float>(group.size());
    for (std::size_t i = 0; i < bucket.count; ++i) {
      wire[i] = half ? floatToHalf(halfToFloat(floatToHalf(values[i])) / worldSize)
                     : floatToBfloat16(bfloat16ToFloat(floatToBfloat16(values[i])) / worldSize);
    }

    // The continuation keeps the buffer's data pointer, not the vector: the
    // vector may move when a later bucket index grows scratch_, its data does not.
    const std::uint16_t* sum = wire.data();
    WorkPtr reduction = group.allReduce(wire.data(), bucket.count, wireType_, RedOp::Sum);
    const std::size_t count = bucket.count;
    return std::make_shared<ContinuationWork>(std::move(reduction), [sum, values, count, half] {
      for (std::size_t i = 0; i < count; ++i)
        values[i] = half ? halfToFloat(sum[i]) : bfloat16ToFloat(sum[i]);
    });
  }

 private:
  // One buffer per bucket index, reused every step: each bucket is reduced
  // once per step, so its buffer is free again when its next reduction starts.
  std::vector<std::uint16_t>& scratchFor(std::size_t bucket, std::size_t count) {
    if (scratch_.size() <= bucket) scratch_.resize(bucket + 1);
    if (scratch_[bucket].size() < count) scratch_[bucket].resize(count);
    return scratch_[bucket];
  }

  DataType wireType_;
  std::vector<std::vector<std::uint16_t>> scratch_;
};

}  // namespace

std::shared_ptr<CommHook> makeAllReduceHook() { return std::make_shared<AllReduceHook>(); }

std::shared_ptr<CommHook> makeCompressionHook(DataType wireType) {
  return std::make_shared<CompressionHook>(wireType);
}

}  // namespace hora::ddp
