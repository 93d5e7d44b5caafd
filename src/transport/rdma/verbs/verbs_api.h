// The libibverbs calls the verbs backend makes, as a table of function
// pointers, so that:
//   - libibverbs is loaded at run time (dlopen, like verbs_probe.h): one
//     libnccl.so.2 runs on machines with and without rdma-core, and only
//     the headers are needed to build it;
//   - tests drive the backend through a fake table (a recorded
//     ibv_modify_qp, a failing ibv_create_qp) where there is no NIC.
//
// Most entries are exported functions, looked up with the symbol version
// whose ABI <infiniband/verbs.h> describes (IBVERBS_1.1; IBVERBS_1.0 for the
// completion channel calls, which never got a 1.1). The data path
// (ibv_post_send, ibv_post_recv, ibv_poll_cq, ibv_req_notify_cq) is static
// inline in the header, a jump through the context's provider ops with no
// symbol to look up: the loaded table holds small functions that make that
// jump, so the backend calls every verb the same way. ibv_query_port is
// also inline in current rdma-core (it prefers the extended provider op and
// falls back to the exported, older-ABI function); the table's entry does
// the same.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace hora::transport::rdma::verbs {

struct VerbsApi {
  // Devices.
  ibv_device** (*getDeviceList)(int* count) = nullptr;
  void (*freeDeviceList)(ibv_device** list) = nullptr;
  const char* (*getDeviceName)(ibv_device* device) = nullptr;
  ibv_context* (*openDevice)(ibv_device* device) = nullptr;
  int (*closeDevice)(ibv_context* context) = nullptr;
  int (*queryDevice)(ibv_context* context, ibv_device_attr* attributes) = nullptr;
  int (*queryPort)(ibv_context* context, std::uint8_t port, ibv_port_attr* attributes) = nullptr;
  int (*queryGid)(ibv_context* context, std::uint8_t port, int index, ibv_gid* gid) = nullptr;
  // The GID with its type (RoCE v1 or v2); rdma-core 32 and later. Null
  // where the library is older: then the type comes from sysfs.
  int (*queryGidEntry)(ibv_context* context, std::uint32_t port, std::uint32_t index, ibv_gid_entry* entry,
                       std::uint32_t flags, std::size_t entrySize) = nullptr;

  // Protection domain and memory.
  ibv_pd* (*allocPd)(ibv_context* context) = nullptr;
  int (*deallocPd)(ibv_pd* pd) = nullptr;
  ibv_mr* (*regMr)(ibv_pd* pd, void* address, std::size_t bytes, int access) = nullptr;
  int (*deregMr)(ibv_mr* region) = nullptr;
  // Registers a dma-buf (GPU memory exported by its driver); rdma-core 34
  // and later. Null where the library is older. Only tried, never used for
  // data: hora reports whether GPUDirect RDMA is possible
  // (rdma/gpu_direct.h, driverRegistersDmabuf).
  ibv_mr* (*regDmabufMr)(ibv_pd* pd, std::uint64_t offset, std::size_t bytes, std::uint64_t iova, int fd,
                         int access) = nullptr;

  // Completions.
  ibv_comp_channel* (*createCompChannel)(ibv_context* context) = nullptr;
  int (*destroyCompChannel)(ibv_comp_channel* channel) = nullptr;
  ibv_cq* (*createCq)(ibv_context* context, int entries, void* userContext, ibv_comp_channel* channel,
                      int vector) = nullptr;
  int (*destroyCq)(ibv_cq* cq) = nullptr;
  int (*getCqEvent)(ibv_comp_channel* channel, ibv_cq** cq, void** userContext) = nullptr;
  void (*ackCqEvents)(ibv_cq* cq, unsigned int events) = nullptr;

  // Queue pairs.
  ibv_qp* (*createQp)(ibv_pd* pd, ibv_qp_init_attr* attributes) = nullptr;
  int (*destroyQp)(ibv_qp* qp) = nullptr;
  int (*modifyQp)(ibv_qp* qp, ibv_qp_attr* attributes, int mask) = nullptr;

  // The data path (inline in the header; see above).
  int (*postSend)(ibv_qp* qp, ibv_send_wr* request, ibv_send_wr** bad) = nullptr;
  int (*postRecv)(ibv_qp* qp, ibv_recv_wr* request, ibv_recv_wr** bad) = nullptr;
  int (*pollCq)(ibv_cq* cq, int entries, ibv_wc* completions) = nullptr;
  int (*reqNotifyCq)(ibv_cq* cq, int solicitedOnly) = nullptr;
};

// Loads `HORA_IBVERBS_LIB` (default "libibverbs.so.1") once per process and
// fills the table; the library stays loaded, as its objects may live until
// exit. Null when the library or one of the required symbols is missing,
// with `why` (if given) saying which: never an error, as "no verbs" only
// means the ib transport is not available.
const VerbsApi* loadVerbsApi(std::string* why = nullptr);

// Fills `api` from an already opened library handle (dlopen's), for
// loadVerbsApi and its tests; false with `why` if a required symbol is
// missing.
bool fillVerbsApi(void* library, VerbsApi& api, std::string& why);

}  // namespace hora::transport::rdma::verbs
