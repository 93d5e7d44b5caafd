#include "process_group.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <numeric>

#include "wire.h"

namespace hora_torch {

namespace {

using Use = Staged::Use;
using Transfer = hora::Communicator::Transfer;

// Rank 0 makes the id (and with it the rendezvous server); the others read
// it from the store, which waits for it up to the store's own timeout.
hora::Communicator::UniqueId rendezvous(const c10::intrusive_ptr<c10d::Store>& store, int rank) {
  static const std::string kKey = "hora/unique_id";
  hora::Communicator::UniqueId id;
  if (rank == 0) {
    id = hora::Communicator::newUniqueId();
    store->set(kKey, std::vector<std::uint8_t>(id.begin(), id.end()));
    return id;
  }
  const std::vector<std::uint8_t> bytes = store->get(kKey);
  TORCH_CHECK(bytes.size() == id.size(), "hora: the store's key ", kKey, " holds ", bytes.size(),
              " bytes, not a unique id of ", id.size());
  std::copy(bytes.begin(), bytes.end(), id.begin());
  return id;
}

std::unique_ptr<hora::Communicator> connect(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                            int size, std::chrono::milliseconds timeout) {
  hora::CommunicatorOptions options;
  options.timeout = timeout;
  return hora::Communicator::fromUniqueId(rendezvous(store, rank), rank, size, options);
}

int checkRank(std::int64_t rank, int size, const char* what) {
  TORCH_CHECK(rank >= 0 && rank < size, "hora: ", what, " ", rank, " is outside the group's ranks [0, ",
              size, ")");
  return static_cast<int>(rank);
}

// A list of one tensor per rank, each like `like` (same dtype and number of
// elements), as allgather, gather, scatter and reduce_scatter take.
void checkPerRank(const std::vector<at::Tensor>& list, const at::Tensor& like, int size,
                  const char* what) {
  TORCH_CHECK(static_cast<int>(list.size()) == size, "hora: ", what, " needs one tensor per rank (",
              size, "), got ", list.size());
  checkTensors(list, what);
  for (const at::Tensor& t : list) {
    TORCH_CHECK(t.scalar_type() == like.scalar_type(), "hora: ", what, " has dtype ",
                t.scalar_type(), " but the other argument has ", like.scalar_type());
    TORCH_CHECK(t.numel() == like.numel(), "hora: ", what, " has a tensor of ", t.numel(),
                " elements where ", like.numel(), " are expected");
  }
}

const std::vector<at::Tensor>& onlyList(const std::vector<std::vector<at::Tensor>>& lists,
                                        const char* what) {
  TORCH_CHECK(lists.size() == 1, "hora: ", what, " takes exactly one list of tensors, got ",
              lists.size());
  return lists.front();
}

// A contiguous tensor of `like`'s dtype for `copies` of its elements.
at::Tensor flatBuffer(const at::Tensor& like, int copies) {
  return at::empty({copies * like.numel()}, like.options().memory_format(at::MemoryFormat::Contiguous));
}

// all_to_all_single's split sizes: rows of dim 0 per rank; none means equal.
std::vector<std::int64_t> splitRows(const std::vector<std::int64_t>& splits, const at::Tensor& t,
                                    int size, const char* what) {
  const std::int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  if (splits.empty()) {
    TORCH_CHECK(rows % size == 0, "hora: ", what, " has ", rows,
                " rows, not divisible by the group size ", size, " (give split sizes)");
    return std::vector<std::int64_t>(size, rows / size);
  }
  TORCH_CHECK(static_cast<int>(splits.size()) == size, "hora: ", what, " split sizes have ",
              splits.size(), " entries for ", size, " ranks");
  for (std::int64_t s : splits) TORCH_CHECK(s >= 0, "hora: ", what, " split size ", s, " is negative");
  TORCH_CHECK(std::accumulate(splits.begin(), splits.end(), std::int64_t{0}) == rows, "hora: ", what,
              " split sizes add up to ",
              std::accumulate(splits.begin(), splits.end(), std::int64_t{0}), " but the tensor has ",
              rows, " rows");
  return splits;
}

// Wire elements in one row of dim 0.
std::int64_t rowWidth(const at::Tensor& t) {
  std::int64_t elements = wireWidth(t.scalar_type());
  for (std::int64_t d = 1; d < t.dim(); ++d) elements *= t.size(d);
  return elements;
}

// One Send (or Recv) per rank, of rows[r] rows taken one after the other
// from `base`.
void addTransfers(std::vector<Transfer>& out, Transfer::Direction direction, void* base,
                  const std::vector<std::int64_t>& rows, std::int64_t width, hora::DataType type) {
  auto* bytes = static_cast<char*>(base);
  std::size_t offset = 0;
  for (std::size_t peer = 0; peer < rows.size(); ++peer) {
    const auto count = static_cast<std::size_t>(rows[peer] * width);
    out.push_back({direction, count ? bytes + offset * hora::dataTypeSize(type) : nullptr, count,
                   static_cast<int>(peer)});
    offset += count;
  }
}

}  // namespace

ProcessGroupHora::ProcessGroupHora(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                   std::chrono::milliseconds timeout)
    : BackendBase(rank, size), comm_(connect(store, rank, size, timeout)) {}

ProcessGroupHora::~ProcessGroupHora() = default;

ProcessGroupHora::WorkPtr ProcessGroupHora::enqueueLater(c10d::OpType type, const at::Tensor& output,
                                                         std::function<void()> body) {
  auto work = c10::make_intrusive<HoraWork>(rank(), type, Tensors{output}, std::move(body));
  later_.push_back(work);
  return work;
}

ProcessGroupHora::WorkPtr ProcessGroupHora::enqueue(c10d::OpType type, Tensors outputs,
                                                    std::function<void()> body) {
  TORCH_CHECK(!coalescing_, "hora: only send and recv can be coalesced (batch_isend_irecv)");
  auto work = c10::make_intrusive<HoraWork>(rank(), type, std::move(outputs), std::move(body));
  queue_.push(work);
  return work;
}

ProcessGroupHora::WorkPtr ProcessGroupHora::broadcast(Tensors& tensors,
                                                      const c10d::BroadcastOptions& opts) {
  checkSingle(tensors, "broadcast");
  const int root = checkRank(opts.rootRank, size(), "broadcast root");
  at::Tensor t = tensors[0];
  return enqueue(c10d::OpType::BROADCAST, tensors, [this, t, root] {
    Staged s(t, rank() == root ? Use::Read : Use::Write);
    comm_->broadcast(s.data(), s.data(), s.count(), s.type(), root);
    s.finish();
  });
}

ProcessGroupHora::WorkPtr ProcessGroupHora::allreduce(Tensors& tensors,
                                                      const c10d::AllreduceOptions& opts) {
  checkSingle(tensors, "allreduce");
  at::Tensor t = tensors[0];
  const hora::RedOp op = wireOp(opts.reduceOp, t.scalar_type());
  return enqueue(c10d::OpType::ALLREDUCE, tensors, [this, t, op] {
    Staged s(t);
    comm_->allReduce(s.data(), s.data(), s.count(), s.type(), op);
    s.finish();
  });
}

ProcessGroupHora::WorkPtr ProcessGroupHora::allreduce_coalesced(
    Tensors& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "hora: allreduce_coalesced needs at least one tensor");
  checkTensors(tensors, "allreduce_coalesced");
  const hora::RedOp op = wireOp(opts.reduceOp, tensors[0].scalar_type());
  return enqueue(c10d::OpType::ALLREDUCE_COALESCED, tensors, [this, tensors, op] {
    at::Tensor flat = flatten(tensors);
    Staged s(flat);
    comm_->allReduce(s.data(), s.data(), s.count(), s.type(), op);
    s.finish();
    unflatten(flat, tensors);
  });
}

ProcessGroupHora::WorkPtr ProcessGroupHora::reduce(Tensors& tensors,
                                                   const c10d::ReduceOptions& opts) {
  checkSingle(tensors, "reduce");
  const int root = checkRank(opts.rootRank, size(), "reduce root");
  at::Tensor t = tensors[0];
  const hora::RedOp op = wireOp(opts.reduceOp, t.scalar_type());
  return enqueue(c10d::OpType::REDUCE, tensors, [this, t, op, root] {
    const bool isRoot = rank() == root;
    Staged s(t, isRoot ? Use::ReadWrite : Use::Read);
    comm_->reduce(s.data(), isRoot ? s.data() : nullptr, s.count(), s.type(), op, root);
    s.finish();
  });
}

ProcessGroupHora::WorkPtr ProcessGroupHora::allgather(TensorLists& outputs, Tensors& inputs,
                                                      const c10d::AllgatherOptions&) {
  checkSingle(inputs, "allgather input");
  const Tensors& outs = onlyList(outputs, "allgather output");
  at::Tensor input = inputs[0];
  checkPerRank(outs, input, size(), "allgather output");
  return enqueue(c10d::OpType::ALLGATHER, outs, [this, input, outs] {
    Staged in(input, Use::Read);
    at::Tensor flat = flatBuffer(input, size());
    Staged gathered(flat, Use::Write);
    comm_->allGather(in.data(), gathered.data(), in.count(), in.type());
    gathered.finish();
    unflatten(flat, outs);
  });
}

// all_gather_coalesced: outputs[r][i] receives rank r's inputs[i]. The
// inputs travel as one flat block per rank, one all-gather for them all.
ProcessGroupHora::WorkPtr ProcessGroupHora::allgather_coalesced(TensorLists& outputs, Tensors& inputs,
                                                                const c10d::AllgatherOptions&) {
  TORCH_CHECK(!inputs.empty(), "hora: allgather_coalesced needs at least one input tensor");
  checkTensors(inputs, "allgather_coalesced input");
  TORCH_CHECK(static_cast<int>(outputs.size()) == size(), "hora: allgather_coalesced needs one output list per rank (",
              size(), "), got ", outputs.size());
  Tensors everyOutput;
  for (const Tensors& list : outputs) {
    TORCH_CHECK(list.size() == inputs.size(), "hora: allgather_coalesced output lists need ", inputs.size(),
                " tensors (one per input), got ", list.size());
    for (std::size_t i = 0; i < list.size(); ++i)
      TORCH_CHECK(list[i].numel() == inputs[i].numel() && list[i].scalar_type() == inputs[i].scalar_type(),
                  "hora: allgather_coalesced output ", i, " must match input ", i, " in size and dtype");
    everyOutput.insert(everyOutput.end(), list.begin(), list.end());
  }
  checkTensors(everyOutput, "allgather_coalesced output");
  return enqueue(c10d::OpType::ALLGATHER_COALESCED, everyOutput, [this, inputs, everyOutput] {
    const at::Tensor packed = flatten(inputs);
    Staged in(packed, Use::Read);
    at::Tensor flat = flatBuffer(packed, size());
    Staged gathered(flat, Use::Write);
    comm_->allGather(in.data(), gathered.data(), in.count(), in.type());
    gathered.finish();
    unflatten(flat, everyOutput);  // rank by rank, each rank's inputs in order
  });
}

ProcessGroupHora::WorkPtr ProcessGroupHora::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                            const c10d::AllgatherOptions&) {
  checkTensors({output, input}, "_allgather_base");
  TORCH_CHECK(output.numel() == size() * input.numel(), "hora: all_gather_into_tensor needs an output of ",
              size(), " x ", input.numel(), " elements, got ", output.numel());
  return enqueue(c10d::OpType::_ALLGATHER_BASE, {output}, [this, output, input] {
    Staged in(input, Use::Read);
    Staged out(output, Use::Write);
    comm_->allGather(in.data(), out.data(), in.count(), in.type());
    out.finish();
  });
}

ProcessGroupHora::WorkPtr ProcessGroupHora::gather(TensorLists& outputs, Tensors& inputs,
                                                   const c10d::GatherOptions& opts) {
  checkSingle(inputs, "gather input");
  const int root = checkRank(opts.rootRank, size(), "gather root");
  at::Tensor input = inputs[0];
  Tensors outs;
  if (rank() == root) {
    outs = onlyList(outputs, "gather output (at the root)");
    checkPerRank(outs, input, size(), "gather output");
  } else {
    TORCH_CHECK(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()),
                "hora: gather output is given on rank ", rank(), ", which is not the root ", root);
  }
  return enqueue(c10d::OpType::GATHER, outs, [this, input, outs, root] {
    Staged in(input, Use::Read);
    if (rank() != root) {
      comm_->gatherAsync(in.data(), nullptr, in.count(), in.type(), root)->wait();
      return;
    }
    at::Tensor flat = flatBuffer(input, size());
    Staged gathered(flat, Use::Write);
    comm_->gatherAsync(in.data(), gathered.data(), in.count(), in.type(), root)->wait();
    gathered.finish();
    unflatten(flat, outs);
  });
}

ProcessGroupHora::WorkPtr ProcessGroupHora::scatter(Tensors& outputs, TensorLists& inputs,
                                                    const c10d::ScatterOptions& opts) {
  checkSingle(outputs, "scatter output");
  const int root = checkRank(opts.rootRank, size(), "scatter root");
  at::Tensor output = outputs[0];
  Tensors ins;
  if (rank() == root) {
    ins = onlyList(inputs, "scatter input (at the root)");
    checkPerRank(ins, output, size(), "scatter input");
  } else {
    TORCH_CHECK(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()),
                "hora: scatter input is given on rank ", rank(), ", which is not the root ", root);
  }
  return enqueue(c10d::OpType::SCATTER, outputs, [this, output, ins, root] {
    Staged out(output, Use::Write);
    if (rank() != root) {
      comm_->scatterAsync(nullptr, out.data(), out.count(), out.type(), root)->wait();
    } else {
      Staged flat(flatten(ins), Use::Read);
      comm_->scatterAsync(flat.data(), out.data(), out.count(), out.type(), root)->wait();
    }
    out.finish();
  });
}

ProcessGroupHora::WorkPtr ProcessGroupHora::reduce_scatter(Tensors& outputs, TensorLists& inputs,
                                                           const c10d::ReduceScatterOptions& opts) {
  checkSingle(outputs, "reduce_scatter output");
  at::Tensor output = outputs[0];
  const Tensors& ins = onlyList(inputs, "reduce_scatter input");
  checkPerRank(ins, output, size(), "reduce_scatter input");
  const hora::RedOp op = wireOp(opts.reduceOp, output.scalar_type());
  return enqueue(c10d::OpType::REDUCE_SCATTER, outputs, [this, output, ins, op] {
    Staged in(flatten(ins), Use::Read);
    Staged out(output, Use::Write);
    comm_->reduceScatter(in.data(), out.data(), out.count(), out.type(), op);
    out.finish();
  });
}

ProcessGroupHora::WorkPtr ProcessGroupHora::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  checkTensors({output, input}, "_reduce_scatter_base");
  TORCH_CHECK(input.numel() == size() * output.numel(), "hora: reduce_scatter_tensor needs an input of ",
              size(), " x ", output.numel(), " elements, got ", input.numel());
  const hora::RedOp op = wireOp(opts.reduceOp, output.scalar_type());
  return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, {output}, [this, output, input, op] {
    Staged in(input, Use::Read);
    Staged out(output, Use::Write);
    comm_->reduceScatter(in.data(), out.data(), out.count(), out.type(), op);
    out.finish();
  });
}

ProcessGroupHora::WorkPtr ProcessGroupHora::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                          std::vector<int64_t>& outputSplits,
                                                          std::vector<int64_t>& inputSplits,
                                                          const c10d::AllToAllOptions&) {
  checkTensors({output, input}, "alltoall_base");
  const std::vector<std::int64_t> sendRows = splitRows(inputSplits, input, size(), "input");
  const std::vector<std::int64_t> recvRows = splitRows(outputSplits, output, size(), "output");
  TORCH_CHECK(rowWidth(input) == rowWidth(output), "hora: all_to_all_single's input and output rows differ in size");
  return enqueue(c10d::OpType::ALLTOALL_BASE, {output}, [this, output, input, sendRows, recvRows] {
    // hora does not exchange in place; a copy of the input makes it so.
    const bool sameMemory = input.numel() > 0 && input.data_ptr() == output.data_ptr();
    Staged in(sameMemory ? input.clone() : input, Use::Read);
    Staged out(output, Use::Write);
    std::vector<Transfer> transfers;
    const std::int64_t width = rowWidth(input);
    addTransfers(transfers, Transfer::Direction::Send, in.data(), sendRows, width, in.type());
    addTransfers(transfers, Transfer::Direction::Recv, out.data(), recvRows, width, out.type());
    comm_->exchangeAsync(transfers, in.type())->wait();
    out.finish();
  });
}

ProcessGroupHora::WorkPtr ProcessGroupHora::alltoall(Tensors& outputs, Tensors& inputs,
                                                     const c10d::AllToAllOptions&) {
  TORCH_CHECK(static_cast<int>(outputs.size()) == size() && static_cast<int>(inputs.size()) == size(),
              "hora: all_to_all needs one input and one output tensor per rank (", size(), "), got ",
              inputs.size(), " and ", outputs.size());
  Tensors all = inputs;
  all.insert(all.end(), outputs.begin(), outputs.end());
  checkTensors(all, "all_to_all tensors");
  return enqueue(c10d::OpType::ALLTOALL, outputs, [this, outputs, inputs] {
    std::vector<Staged> ins, outs;
    std::vector<Transfer> transfers;
    for (const at::Tensor& t : inputs) ins.emplace_back(t, Use::Read);
    for (const at::Tensor& t : outputs) outs.emplace_back(t, Use::Write);
    for (int peer = 0; peer < size(); ++peer) {
      transfers.push_back({Transfer::Direction::Send, ins[peer].data(), ins[peer].count(), peer});
      transfers.push_back({Transfer::Direction::Recv, outs[peer].data(), outs[peer].count(), peer});
    }
    comm_->exchangeAsync(transfers, ins.front().type())->wait();
    for (Staged& out : outs) out.finish();
  });
}

// Tags are not matched: messages between two ranks arrive in the order
// they were sent, as with NCCL. Each message carries its tag, so a receive
// with another tag than the message's fails on both ranks (Gloo would
// match it with a later message) instead of taking the wrong bytes.
ProcessGroupHora::WorkPtr ProcessGroupHora::send(Tensors& tensors, int dstRank, int tag) {
  checkSingle(tensors, "send");
  const int peer = checkRank(dstRank, size(), "send destination");
  return enqueueTransfer(c10d::OpType::SEND, tensors[0], peer, true, tag);
}

ProcessGroupHora::WorkPtr ProcessGroupHora::recv(Tensors& tensors, int srcRank, int tag) {
  checkSingle(tensors, "recv");
  const int peer = checkRank(srcRank, size(), "recv source");
  return enqueueTransfer(c10d::OpType::RECV, tensors[0], peer, false, tag);
}

ProcessGroupHora::WorkPtr ProcessGroupHora::enqueueTransfer(c10d::OpType type, const at::Tensor& t,
                                                            int peer, bool sending, int tag) {
  if (coalescing_) {
    // Runs with the whole batch (enqueueBatch, queued first); this Work
    // completes right after it, with the batch's outcome.
    batch_.push_back({t, peer, sending, tag});
    std::shared_ptr<std::exception_ptr> error = batchError_;
    return enqueueLater(type, t, [error] {
      if (*error) std::rethrow_exception(*error);
    });
  }
  if (sending)
    return enqueue(type, {t}, [this, t, peer, tag] {
      Staged s(t, Use::Read);
      comm_->send(s.data(), s.count(), s.type(), peer, tag);
    });
  return enqueue(type, {t}, [this, t, peer, tag] {
    Staged s(t, Use::Write);
    comm_->recv(s.data(), s.count(), s.type(), peer, tag);
    s.finish();
  });
}

void ProcessGroupHora::startCoalescing() {
  TORCH_CHECK(!coalescing_, "hora: coalescing started twice");
  coalescing_ = true;
  batch_.clear();
  later_.clear();
  batchError_ = std::make_shared<std::exception_ptr>();
}

ProcessGroupHora::WorkPtr ProcessGroupHora::enqueueBatch() {
  TORCH_CHECK(coalescing_, "hora: coalescing ended without being started");
  coalescing_ = false;
  std::vector<PendingTransfer> batch = std::move(batch_);
  std::shared_ptr<std::exception_ptr> error = batchError_;
  WorkPtr whole = enqueue(c10d::OpType::UNKNOWN, {}, [this, batch, error] {
    try {
      std::vector<Staged> staged;
      staged.reserve(batch.size());
      std::vector<Transfer> transfers;
      for (const PendingTransfer& p : batch) {
        staged.emplace_back(p.tensor, p.sending ? Use::Read : Use::Write);
        transfers.push_back({p.sending ? Transfer::Direction::Send : Transfer::Direction::Recv,
                             staged.back().data(), staged.back().count(), p.peer, p.tag});
      }
      if (!transfers.empty()) {
        // One element type per group: every transfer's bytes, as bytes.
        for (std::size_t i = 0; i < transfers.size(); ++i)
          transfers[i].count *= hora::dataTypeSize(staged[i].type());
        comm_->exchangeAsync(transfers, hora::DataType::Uint8)->wait();
      }
      for (Staged& s : staged) s.finish();
    } catch (...) {
      *error = std::current_exception();
      throw;
    }
  });
  for (auto& work : later_) queue_.push(work);
  later_.clear();
  return whole;
}

#if HORA_TORCH_VERSION_MAJOR >= 2
ProcessGroupHora::WorkPtr ProcessGroupHora::endCoalescing() { return enqueueBatch(); }
#else
void ProcessGroupHora::endCoalescing(std::vector<WorkPtr>&) { enqueueBatch(); }
#endif

ProcessGroupHora::WorkPtr ProcessGroupHora::barrier(const c10d::BarrierOptions&) {
  return enqueue(c10d::OpType::BARRIER, {}, [this] { comm_->barrier(); });
}

}  // namespace hora_torch
