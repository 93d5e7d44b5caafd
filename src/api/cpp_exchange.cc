// hora's C++ API: the collectives that move blocks between ranks without
// reducing them (all-to-all, gather, scatter) and grouped point-to-point
// transfers. Arguments are checked by the same rules as nccl.h's calls.
#include "api/arguments.h"
#include "api/cpp_errors.h"
#include "base/error.h"
#include "core/communicator.h"
#include "hora/communicator.h"

namespace hora {

namespace {

core::Op blockOp(core::Communicator& c, core::OpKind kind, const void* send, void* recv,
                 std::size_t count, DataType type) {
  api::checkType(static_cast<int>(type), "data type");
  api::checkedBytes(count, type, c.nranks());
  return core::makeApiOp(kind, send, recv, count, type);
}

core::Op rootedOp(core::Communicator& c, core::OpKind kind, const void* send, void* recv,
                  std::size_t count, DataType type, int root) {
  core::Op o = blockOp(c, kind, send, recv, count, type);
  api::checkRoot(root, c.nranks());
  o.root = root;
  return o;
}

}  // namespace

WorkPtr Communicator::allToAllAsync(const void* send, void* recv, std::size_t count,
                                    DataType type) {
  return api::onRank(impl_->rank(), [&] {
    core::Op o = blockOp(*impl_, core::OpKind::AllToAll, send, recv, count, type);
    api::checkBuffer(send, count, "send");
    api::checkBuffer(recv, count, "recv");
    HORA_CHECK_ARG(count == 0 || send != recv, "all-to-all cannot run in place");
    return impl_->submit({o});
  });
}

WorkPtr Communicator::gatherAsync(const void* send, void* recv, std::size_t count, DataType type,
                                  int root) {
  return api::onRank(impl_->rank(), [&] {
    const bool isRoot = impl_->rank() == root;
    core::Op o = rootedOp(*impl_, core::OpKind::Gather, send, isRoot ? recv : nullptr, count, type,
                          root);
    api::checkBuffer(send, count, "send");
    if (isRoot) api::checkBuffer(recv, count, "recv (at the root)");
    return impl_->submit({o});
  });
}

WorkPtr Communicator::scatterAsync(const void* send, void* recv, std::size_t count, DataType type,
                                   int root) {
  return api::onRank(impl_->rank(), [&] {
    const bool isRoot = impl_->rank() == root;
    core::Op o = rootedOp(*impl_, core::OpKind::Scatter, isRoot ? send : nullptr, recv, count, type,
                          root);
    api::checkBuffer(recv, count, "recv");
    if (isRoot) api::checkBuffer(send, count, "send (at the root)");
    return impl_->submit({o});
  });
}

WorkPtr Communicator::exchangeAsync(const std::vector<Transfer>& transfers, DataType type) {
  return api::onRank(impl_->rank(), [&] {
    api::checkType(static_cast<int>(type), "data type");
    std::vector<core::Op> ops;
    ops.reserve(transfers.size());
    for (const Transfer& t : transfers) {
      api::checkedBytes(t.count, type, 1);
      api::checkPeer(t.peer, impl_->nranks());
      api::checkBuffer(t.buffer, t.count, "buffer");
      const bool sending = t.direction == Transfer::Direction::Send;
      core::Op o = core::makeApiOp(sending ? core::OpKind::Send : core::OpKind::Recv,
                                sending ? t.buffer : nullptr, sending ? nullptr : t.buffer, t.count,
                                type);
      o.peer = t.peer;
      o.tag = t.tag;
      ops.push_back(o);
    }
    return impl_->submit(std::move(ops));
  });
}

}  // namespace hora
