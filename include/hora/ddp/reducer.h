// Gradient synchronisation for data-parallel training: the Reducer.
//
// Register the model's parameters once. The Reducer broadcasts rank 0's
// values to every rank, checks that all ranks built the same bucket layout,
// and owns the gradients: each parameter's gradient is a view into a flat
// bucket. A training step on every rank:
//
//   reducer.zeroGradients();
//   for (layer = last .. first) {            // the user's backward pass
//     auto grad = reducer.gradientAs<float>(index_of_layer_weight);
//     ... accumulate into grad ...
//     reducer.markReady(index_of_layer_weight);  // may start a bucket's all-reduce
//   }
//   reducer.finish();                         // every gradient now holds the mean over ranks
//   optimizer_step(parameters, gradients);
//
// Buckets are all-reduced asynchronously while backward goes on, strictly in
// bucket order on every rank. The mean is taken by pre-multiplying: each
// rank's values are multiplied by 1/worldSize before they are summed, inside
// the all-reduce (RedOp::Avg) rather than in a separate pass over the bucket,
// which keeps partial sums in range for 16-bit buckets and hooks
// (see comm_hook.h).
//
// Gradient accumulation: under `auto guard = reducer.noSync();` steps only
// accumulate locally (markReady records, finish() returns at once); the next
// synchronised step reduces the accumulated sum. Call zeroGradients() only
// when a new accumulation begins.
//
// A Reducer is driven from one thread. Collectives are issued on the
// communicator it was given; do not issue other collectives on it between the
// first markReady() of a step and finish().
//
// Parameters in CUDA memory (MemoryKind::Device) get buckets in device
// memory: gradient views are device pointers, a gradient's writes must be
// complete on the device when it is marked ready, and after finish() the
// averaged gradients are complete on the device (docs/ddp.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hora/communicator.h"
#include "hora/ddp/bucket_layout.h"
#include "hora/ddp/comm_hook.h"
#include "hora/ddp/process_group.h"
#include "hora/types.h"

namespace hora::ddp {

// A parameter the caller owns. Gradients must be of a floating type (float,
// double, half, bfloat16); the gradient has the parameter's type and count.
struct Parameter {
  std::string name;       // used in error messages
  void* data = nullptr;   // the values; rank 0's are copied to every rank
  std::size_t count = 0;  // elements
  DataType type = DataType::Float32;
  MemoryKind memory = MemoryKind::Host;

  Parameter() = default;
  Parameter(std::string name, void* data, std::size_t count, DataType type,
            MemoryKind memory = MemoryKind::Host)
      : name(std::move(name)), data(data), count(count), type(type), memory(memory) {}
  Parameter(std::string name, std::span<float> values)
      : Parameter(std::move(name), values.data(), values.size(), DataType::Float32) {}
  Parameter(std::string name, std::span<double> values)
      : Parameter(std::move(name), values.data(), values.size(), DataType::Float64) {}

  ParameterShape shape() const { return {count, type, memory}; }
};

// A parameter's gradient: a window into its bucket. Valid until the
// Reducer's layout changes (registerParameter) or the Reducer is destroyed.
struct GradientView {
  void* data = nullptr;
  std::size_t count = 0;
  DataType type = DataType::Float32;
  MemoryKind memory = MemoryKind::Host;

  // The elements as T: float for Float32, double for Float64, std::uint16_t
  // (raw bits) for Float16 and Bfloat16. Throws hora::Error(InvalidArgument)
  // on a mismatch.
  template <typename T>
  std::span<T> as() const {
    checkElementType(sizeof(T), std::is_floating_point_v<T>);
    return {static_cast<T*>(data), count};
  }

 private:
  void checkElementType(std::size_t elementSize, bool isFloating) const;
};

struct ReducerOptions {
  BucketCaps caps;                 // 1 MiB first bucket, 25 MiB after
  std::shared_ptr<CommHook> hook = nullptr;  // null: makeAllReduceHook()
};

class Reducer {
 public:
  // Collective: every rank constructs its Reducer at the same point, with the
  // same parameters (count and type) in the same order and the same caps.
  // Broadcasts the parameter values from rank 0 and compares the bucket
  // layout across ranks: a mismatch throws hora::Error(InvalidUsage) on every
  // rank, naming the ranks that differ.
  Reducer(Communicator& communicator, std::vector<Parameter> parameters,
          ReducerOptions options = {});
  Reducer(std::shared_ptr<ProcessGroup> group, std::vector<Parameter> parameters,
          ReducerOptions options = {});
  // Waits for reductions still in flight (their errors are dropped).
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Adds one more parameter, before the first step only (afterwards it
  // throws hora::Error(InvalidUsage)). Collective, like the constructor: the
  // value is broadcast from rank 0 and the new layout is checked across ranks.
  // Gradient values are kept; earlier GradientViews become invalid.
  // Returns the parameter's index.
  std::size_t registerParameter(const Parameter& parameter);

  std::size_t numParameters() const;
  const Parameter& parameter(std::size_t index) const;
  // In reduction order.
  const std::vector<Bucket>& buckets() const;
  int rank() const;
  int worldSize() const;

  GradientView gradient(std::size_t index) const;
  // Throws hora::Error(InvalidArgument), naming the rank and parameter, when
  // T is not the gradient's element type (as GradientView::as).
  template <typename T>
  std::span<T> gradientAs(std::size_t index) const {
    const GradientView view = gradient(index);
    checkGradientElement(index, sizeof(T), std::is_floating_point_v<T>);
    return {static_cast<T*>(view.data), view.count};
  }

  // Sets every gradient to zero (between steps).
  void zeroGradients();

  // Declares parameter `index`'s gradient complete for this step. When it
  // completes a bucket, that bucket and any completed ones after it start
  // reducing, in bucket order. The first call of a step begins the step.
  // Throws hora::Error(InvalidUsage) when the gradient was already marked in
  // this step.
  void markReady(std::size_t index);

  // Ends the step: waits for every bucket's reduction, after which every
  // gradient holds the mean over ranks. Throws hora::Error(InvalidUsage) when
  // some gradient was not marked ready (nothing changes; mark it and call
  // again), and the collective's error (naming the rank and the bucket) when
  // a reduction failed, e.g. a peer left. After such a failure the Reducer
  // refuses further steps.
  void finish();

  // Goes on with the ranks that remain after a failed step: `group` is the
  // shrunk communicator (Communicator::shrink past the rank that
  // hora::Error::failedRank() names). Collective over the new group: the
  // failed step is dropped (gradients zeroed: compute the step again), the
  // layout is checked and the parameters broadcast from the new rank 0, and
  // gradients are averaged over the new group from then on.
  void continueWith(std::shared_ptr<ProcessGroup> group);
  void continueWith(Communicator& communicator);

  // While a guard lives, steps accumulate gradients locally without
  // communicating. The mode in force at a step's first markReady() applies
  // to that whole step.
  class [[nodiscard]] NoSyncGuard {
   public:
    explicit NoSyncGuard(Reducer& reducer);
    ~NoSyncGuard();
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    Reducer& reducer_;
    bool previous_;
  };
  NoSyncGuard noSync() { return NoSyncGuard(*this); }
  bool syncEnabled() const;

  // Replaces the communication hook (between steps).
  void setCommHook(std::shared_ptr<CommHook> hook);

 private:
  void checkGradientElement(std::size_t index, std::size_t elementSize, bool isFloating) const;

  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace hora::ddp
