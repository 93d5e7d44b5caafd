// hora as a torch.distributed backend for CPU tensors: every collective
// torch's ProcessGroup offers, run by a hora::Communicator on the process
// group's own thread (work.h). The communicator meets through torch's
// key-value store: rank 0 makes a unique id and puts it there.
#pragma once

#include <chrono>
#include <memory>

#include "hora/communicator.h"
#include "torch_compat.h"
#include "work.h"

namespace hora_torch {

class ProcessGroupHora : public BackendBase {
 public:
  // Collective over the group's ranks. `timeout` bounds the rendezvous and
  // every wait on a peer (init_process_group's timeout).
  ProcessGroupHora(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                   std::chrono::milliseconds timeout);
  ~ProcessGroupHora() override;

  const std::string getBackendName() const override { return "hora"; }

  using Tensors = std::vector<at::Tensor>;
  using TensorLists = std::vector<std::vector<at::Tensor>>;
  using WorkPtr = c10::intrusive_ptr<c10d::Work>;

  WorkPtr broadcast(Tensors& tensors, const c10d::BroadcastOptions& opts) override;
  WorkPtr allreduce(Tensors& tensors, const c10d::AllreduceOptions& opts) override;
  WorkPtr allreduce_coalesced(Tensors& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  WorkPtr reduce(Tensors& tensors, const c10d::ReduceOptions& opts) override;
  WorkPtr allgather(TensorLists& outputs, Tensors& inputs, const c10d::AllgatherOptions& opts) override;
  WorkPtr allgather_coalesced(TensorLists& outputs, Tensors& inputs,
                              const c10d::AllgatherOptions& opts) override;
  WorkPtr _allgather_base(at::Tensor& output, at::Tensor& input,
                          const c10d::AllgatherOptions& opts) override;
  WorkPtr gather(TensorLists& outputs, Tensors& inputs, const c10d::GatherOptions& opts) override;
  WorkPtr scatter(Tensors& outputs, TensorLists& inputs, const c10d::ScatterOptions& opts) override;
  WorkPtr reduce_scatter(Tensors& outputs, TensorLists& inputs,
                         const c10d::ReduceScatterOptions& opts) override;
  WorkPtr _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                               const c10d::ReduceScatterOptions& opts) override;
  WorkPtr alltoall_base(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& outputSplits,
                        std::vector<int64_t>& inputSplits, const c10d::AllToAllOptions& opts) override;
  WorkPtr alltoall(Tensors& outputs, Tensors& inputs, const c10d::AllToAllOptions& opts) override;
  WorkPtr send(Tensors& tensors, int dstRank, int tag) override;
  WorkPtr recv(Tensors& tensors, int srcRank, int tag) override;
  WorkPtr barrier(const c10d::BarrierOptions& opts) override;

  // batch_isend_irecv: the sends and receives issued between these two run
  // as one group of transfers, which progress together, so that ranks that
  // all send first and receive second do not wait on each other.
  void startCoalescing() override;
#if HORA_TORCH_VERSION_MAJOR >= 2
  WorkPtr endCoalescing() override;
#else
  void endCoalescing(std::vector<WorkPtr>& works) override;
#endif

 private:
  // A send or receive deferred to the end of a coalesced batch.
  struct PendingTransfer {
    at::Tensor tensor;
    int peer;
    bool sending;
    int tag;
  };
  WorkPtr enqueueTransfer(c10d::OpType type, const at::Tensor& tensor, int peer, bool sending, int tag);
  WorkPtr enqueueBatch();
  // A Work queued only when the batch is (after it).
  WorkPtr enqueueLater(c10d::OpType type, const at::Tensor& output, std::function<void()> body);

  WorkPtr enqueue(c10d::OpType type, Tensors outputs, std::function<void()> body);
  int rank() const { return comm_->rank(); }
  int size() const { return comm_->size(); }

  std::unique_ptr<hora::Communicator> comm_;
  bool coalescing_ = false;
  std::vector<PendingTransfer> batch_;
  // The batch's outcome, which each deferred transfer's Work reports.
  std::shared_ptr<std::exception_ptr> batchError_;
  std::vector<c10::intrusive_ptr<HoraWork>> later_;
  // After comm_: destroyed first, so every queued Work finished with the
  // communicator still there.
  WorkQueue queue_;
};

}  // namespace hora_torch
