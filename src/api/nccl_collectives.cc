// The collective and point-to-point calls of the nccl.h API: argument
// checks, then one core::Op each (all-to-all, gather and scatter become
// groups of sends and receives).
#include "api/arguments.h"
#include "api/group.h"
#include "api/nccl_api.h"

using namespace hora;

namespace {

// Runs `body`; inside a group an error also fails the group's ncclGroupEnd.
template <typename Body>
ncclResult_t call(const char* function, Body&& body) {
  ncclResult_t result = api::guarded(function, body);
  if (result != ncclSuccess) api::noteGroupError(result);
  return result;
}

}  // namespace

HORA_NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  return call("ncclAllReduce", [&] {
    api::CommPtr c = api::checkComm(comm);
    DataType type = api::checkType(datatype, "datatype");
    api::checkedBytes(count, type, 1);
    api::checkBuffer(sendbuff, count, "sendbuff");
    api::checkBuffer(recvbuff, count, "recvbuff");
    core::Op o = core::makeOp(core::OpKind::AllReduce, sendbuff, recvbuff, count, type);
    o.reduce = c->reduceSpecFor(op, type);
    api::issue(c, o);
  });
}

HORA_NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff,
              size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
              cudaStream_t stream) {
  (void)stream;
  return call("ncclReduceScatter", [&] {
    api::CommPtr c = api::checkComm(comm);
    DataType type = api::checkType(datatype, "datatype");
    api::checkedBytes(recvcount, type, c->nranks());
    api::checkBuffer(sendbuff, recvcount, "sendbuff");
    api::checkBuffer(recvbuff, recvcount, "recvbuff");
    core::Op o = core::makeOp(core::OpKind::ReduceScatter, sendbuff, recvbuff, recvcount, type);
    o.reduce = c->reduceSpecFor(op, type);
    api::issue(c, o);
  });
}

HORA_NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
              ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  return call("ncclAllGather", [&] {
    api::CommPtr c = api::checkComm(comm);
    DataType type = api::checkType(datatype, "datatype");
    api::checkedBytes(sendcount, type, c->nranks());
    api::checkBuffer(sendbuff, sendcount, "sendbuff");
    api::checkBuffer(recvbuff, sendcount, "recvbuff");
    api::issue(c, core::makeOp(core::OpKind::AllGather, sendbuff, recvbuff, sendcount, type));
  });
}

HORA_NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  return call("ncclBroadcast", [&] {
    api::CommPtr c = api::checkComm(comm);
    DataType type = api::checkType(datatype, "datatype");
    api::checkedBytes(count, type, 1);
    api::checkRoot(root, c->nranks());
    if (c->rank() == root) api::checkBuffer(sendbuff, count, "sendbuff (at the root)");
    api::checkBuffer(recvbuff, count, "recvbuff");
    core::Op o = core::makeOp(core::OpKind::Broadcast, sendbuff, recvbuff, count, type);
    o.root = root;
    api::issue(c, o);
  });
}

HORA_NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
              ncclComm_t comm, cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

HORA_NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
              cudaStream_t stream) {
  (void)stream;
  return call("ncclReduce", [&] {
    api::CommPtr c = api::checkComm(comm);
    DataType type = api::checkType(datatype, "datatype");
    api::checkedBytes(count, type, 1);
    api::checkRoot(root, c->nranks());
    api::checkBuffer(sendbuff, count, "sendbuff");
    if (c->rank() == root) api::checkBuffer(recvbuff, count, "recvbuff (at the root)");
    core::Op o = core::makeOp(core::OpKind::Reduce, sendbuff, recvbuff, count, type);
    o.reduce = c->reduceSpecFor(op, type);
    o.root = root;
    api::issue(c, o);
  });
}

HORA_NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
              int peer, ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  return call("ncclSend", [&] {
    api::CommPtr c = api::checkComm(comm);
    DataType type = api::checkType(datatype, "datatype");
    api::checkedBytes(count, type, 1);
    api::checkPeer(peer, c->nranks());
    api::checkBuffer(sendbuff, count, "sendbuff");
    core::Op o = core::makeOp(core::OpKind::Send, sendbuff, nullptr, count, type);
    o.peer = peer;
    api::issue(c, o);
  });
}

HORA_NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype,
              int peer, ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  return call("ncclRecv", [&] {
    api::CommPtr c = api::checkComm(comm);
    DataType type = api::checkType(datatype, "datatype");
    api::checkedBytes(count, type, 1);
    api::checkPeer(peer, c->nranks());
    api::checkBuffer(recvbuff, count, "recvbuff");
    core::Op o = core::makeOp(core::OpKind::Recv, nullptr, recvbuff, count, type);
    o.peer = peer;
    api::issue(c, o);
  });
}

namespace {
// All-to-all, gather and scatter: one group of point-to-point messages.
// `sendTo(p)` / `recvFrom(p)` give the block for peer p, or null to skip it.
template <typename SendBlock, typename RecvBlock>
void pointToPointPattern(const api::CommPtr& comm, std::size_t count, DataType type, SendBlock sendTo,
                         RecvBlock recvFrom) {
  std::vector<core::Op> ops;
  for (int p = 0; p < comm->nranks(); ++p) {
    if (const void* block = sendTo(p)) {
      core::Op o = core::makeOp(core::OpKind::Send, block, nullptr, count, type);
      o.peer = p;
      ops.push_back(o);
    }
    if (void* block = recvFrom(p)) {
      core::Op o = core::makeOp(core::OpKind::Recv, nullptr, block, count, type);
      o.peer = p;
      ops.push_back(o);
    }
  }
  if (api::inGroup()) {
    for (const auto& o : ops) api::issue(comm, o);
  } else {
    comm->execute(ops);
  }
}
}  // namespace

HORA_NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  return call("ncclAlltoAll", [&] {
    api::CommPtr c = api::checkComm(comm);
    DataType type = api::checkType(datatype, "datatype");
    std::size_t blockBytes = api::checkedBytes(count, type, 1);
    api::checkedBytes(count, type, c->nranks());
    api::checkBuffer(sendbuff, count, "sendbuff");
    api::checkBuffer(recvbuff, count, "recvbuff");
    HORA_CHECK_ARG(count == 0 || sendbuff != recvbuff, "ncclAlltoAll cannot run in place");
    auto* in = static_cast<const char*>(sendbuff);
    auto* out = static_cast<char*>(recvbuff);
    pointToPointPattern(
        c, count, type, [&](int p) -> const void* { return in + p * blockBytes; },
        [&](int p) -> void* { return out + p * blockBytes; });
  });
}

HORA_NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  return call("ncclGather", [&] {
    api::CommPtr c = api::checkComm(comm);
    DataType type = api::checkType(datatype, "datatype");
    std::size_t blockBytes = api::checkedBytes(count, type, 1);
    api::checkedBytes(count, type, c->nranks());
    api::checkRoot(root, c->nranks());
    api::checkBuffer(sendbuff, count, "sendbuff");
    const bool isRoot = c->rank() == root;
    if (isRoot) api::checkBuffer(recvbuff, count, "recvbuff (at the root)");
    auto* out = static_cast<char*>(recvbuff);
    pointToPointPattern(
        c, count, type, [&](int p) -> const void* { return p == root ? sendbuff : nullptr; },
        [&](int p) -> void* { return isRoot ? out + p * blockBytes : nullptr; });
  });
}

HORA_NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  return call("ncclScatter", [&] {
    api::CommPtr c = api::checkComm(comm);
    DataType type = api::checkType(datatype, "datatype");
    std::size_t blockBytes = api::checkedBytes(count, type, 1);
    api::checkedBytes(count, type, c->nranks());
    api::checkRoot(root, c->nranks());
    api::checkBuffer(recvbuff, count, "recvbuff");
    const bool isRoot = c->rank() == root;
    if (isRoot) api::checkBuffer(sendbuff, count, "sendbuff (at the root)");
    auto* in = static_cast<const char*>(sendbuff);
    pointToPointPattern(
        c, count, type, [&](int p) -> const void* { return isRoot ? in + p * blockBytes : nullptr; },
        [&](int p) -> void* { return p == root ? recvbuff : nullptr; });
  });
}
