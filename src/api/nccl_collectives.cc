// The collective and point-to-point calls of the nccl.h API: argument
// checks, then one core::Op each, carrying the caller's stream.
#include "api/arguments.h"
#include "api/group.h"
#include "api/nccl_api.h"

using namespace hora;

namespace {

// An Op of this call, on the caller's stream.
core::Op opOf(core::OpKind kind, const void* send, void* recv, std::size_t count, DataType type,
              cudaStream_t stream) {
  core::Op o = core::makeOp(kind, send, recv, count, type);
  o.stream = stream;
  return o;
}

}  // namespace

HORA_NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return api::guardedInGroup("ncclAllReduce", [&] {
    api::issueWhenMade(comm, "ncclAllReduce", [=](const api::CommPtr& c) {
      DataType type = api::checkType(datatype, "datatype");
      api::checkedBytes(count, type, 1);
      api::checkBuffer(sendbuff, count, "sendbuff");
      api::checkBuffer(recvbuff, count, "recvbuff");
      core::Op o = opOf(core::OpKind::AllReduce, sendbuff, recvbuff, count, type, stream);
      o.reduce = c->reduceSpecFor(op, type);
      return o;
    });
  });
}

HORA_NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff,
              size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
              cudaStream_t stream) {
  return api::guardedInGroup("ncclReduceScatter", [&] {
    api::issueWhenMade(comm, "ncclReduceScatter", [=](const api::CommPtr& c) {
      DataType type = api::checkType(datatype, "datatype");
      api::checkedBytes(recvcount, type, c->nranks());
      api::checkBuffer(sendbuff, recvcount, "sendbuff");
      api::checkBuffer(recvbuff, recvcount, "recvbuff");
      core::Op o = opOf(core::OpKind::ReduceScatter, sendbuff, recvbuff, recvcount, type, stream);
      o.reduce = c->reduceSpecFor(op, type);
      return o;
    });
  });
}

HORA_NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
              ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return api::guardedInGroup("ncclAllGather", [&] {
    api::issueWhenMade(comm, "ncclAllGather", [=](const api::CommPtr& c) {
      DataType type = api::checkType(datatype, "datatype");
      api::checkedBytes(sendcount, type, c->nranks());
      api::checkBuffer(sendbuff, sendcount, "sendbuff");
      api::checkBuffer(recvbuff, sendcount, "recvbuff");
      return opOf(core::OpKind::AllGather, sendbuff, recvbuff, sendcount, type, stream);
    });
  });
}

HORA_NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return api::guardedInGroup("ncclBroadcast", [&] {
    api::issueWhenMade(comm, "ncclBroadcast", [=](const api::CommPtr& c) {
      DataType type = api::checkType(datatype, "datatype");
      api::checkedBytes(count, type, 1);
      api::checkRoot(root, c->nranks());
      if (c->rank() == root) api::checkBuffer(sendbuff, count, "sendbuff (at the root)");
      api::checkBuffer(recvbuff, count, "recvbuff");
      core::Op o = opOf(core::OpKind::Broadcast, sendbuff, recvbuff, count, type, stream);
      o.root = root;
      return o;
    });
  });
}

HORA_NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
              ncclComm_t comm, cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

HORA_NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
              cudaStream_t stream) {
  return api::guardedInGroup("ncclReduce", [&] {
    api::issueWhenMade(comm, "ncclReduce", [=](const api::CommPtr& c) {
      DataType type = api::checkType(datatype, "datatype");
      api::checkedBytes(count, type, 1);
      api::checkRoot(root, c->nranks());
      api::checkBuffer(sendbuff, count, "sendbuff");
      if (c->rank() == root) api::checkBuffer(recvbuff, count, "recvbuff (at the root)");
      core::Op o = opOf(core::OpKind::Reduce, sendbuff, recvbuff, count, type, stream);
      o.reduce = c->reduceSpecFor(op, type);
      o.root = root;
      return o;
    });
  });
}

HORA_NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
              int peer, ncclComm_t comm, cudaStream_t stream) {
  return api::guardedInGroup("ncclSend", [&] {
    api::issueWhenMade(comm, "ncclSend", [=](const api::CommPtr& c) {
      DataType type = api::checkType(datatype, "datatype");
      api::checkedBytes(count, type, 1);
      api::checkPeer(peer, c->nranks());
      api::checkBuffer(sendbuff, count, "sendbuff");
      core::Op o = opOf(core::OpKind::Send, sendbuff, nullptr, count, type, stream);
      o.peer = peer;
      return o;
    });
  });
}

HORA_NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype,
              int peer, ncclComm_t comm, cudaStream_t stream) {
  return api::guardedInGroup("ncclRecv", [&] {
    api::issueWhenMade(comm, "ncclRecv", [=](const api::CommPtr& c) {
      DataType type = api::checkType(datatype, "datatype");
      api::checkedBytes(count, type, 1);
      api::checkPeer(peer, c->nranks());
      api::checkBuffer(recvbuff, count, "recvbuff");
      core::Op o = opOf(core::OpKind::Recv, nullptr, recvbuff, count, type, stream);
      o.peer = peer;
      return o;
    });
  });
}


HORA_NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return api::guardedInGroup("ncclAlltoAll", [&] {
    api::issueWhenMade(comm, "ncclAlltoAll", [=](const api::CommPtr& c) {
      DataType type = api::checkType(datatype, "datatype");
      api::checkedBytes(count, type, c->nranks());
      api::checkBuffer(sendbuff, count, "sendbuff");
      api::checkBuffer(recvbuff, count, "recvbuff");
      HORA_CHECK_ARG(count == 0 || sendbuff != recvbuff, "ncclAlltoAll cannot run in place");
      return opOf(core::OpKind::AllToAll, sendbuff, recvbuff, count, type, stream);
    });
  });
}

HORA_NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return api::guardedInGroup("ncclGather", [&] {
    api::issueWhenMade(comm, "ncclGather", [=](const api::CommPtr& c) {
      DataType type = api::checkType(datatype, "datatype");
      api::checkedBytes(count, type, c->nranks());
      api::checkRoot(root, c->nranks());
      api::checkBuffer(sendbuff, count, "sendbuff");
      const bool isRoot = c->rank() == root;
      if (isRoot) api::checkBuffer(recvbuff, count, "recvbuff (at the root)");
      core::Op o = opOf(core::OpKind::Gather, sendbuff, isRoot ? recvbuff : nullptr, count, type, stream);
      o.root = root;
      return o;
    });
  });
}

HORA_NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return api::guardedInGroup("ncclScatter", [&] {
    api::issueWhenMade(comm, "ncclScatter", [=](const api::CommPtr& c) {
      DataType type = api::checkType(datatype, "datatype");
      api::checkedBytes(count, type, c->nranks());
      api::checkRoot(root, c->nranks());
      api::checkBuffer(recvbuff, count, "recvbuff");
      const bool isRoot = c->rank() == root;
      if (isRoot) api::checkBuffer(sendbuff, count, "sendbuff (at the root)");
      core::Op o = opOf(core::OpKind::Scatter, isRoot ? sendbuff : nullptr, recvbuff, count, type, stream);
      o.root = root;
      return o;
    });
  });
}
