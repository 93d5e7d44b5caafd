#include "transport/rdma/verbs/verbs_api.h"

#include <dlfcn.h>

#include <cstring>
#include <mutex>
#include <type_traits>

#include "base/env.h"
#include "base/error.h"

namespace hora::transport::rdma::verbs {

namespace {

// The exported ibv_query_port, with the ABI of its first version (a port
// attribute struct that later grew): only for providers without the
// extended query_port op. Set once, by fillVerbsApi.
using CompatQueryPort = int (*)(ibv_context*, std::uint8_t, _compat_ibv_port_attr*);
CompatQueryPort compatQueryPort = nullptr;

// What the inline ibv_query_port of <infiniband/verbs.h> does, with the
// exported fallback looked up rather than linked.
int queryPortThroughOps(ibv_context* context, std::uint8_t port, ibv_port_attr* attributes) {
  if (verbs_context* extended = verbs_get_ctx_op(context, query_port))
    return extended->query_port(context, port, attributes, sizeof(*attributes));
  std::memset(attributes, 0, sizeof(*attributes));
  return compatQueryPort(context, port, reinterpret_cast<_compat_ibv_port_attr*>(attributes));
}

int postSendThroughOps(ibv_qp* qp, ibv_send_wr* request, ibv_send_wr** bad) {
  return ibv_post_send(qp, request, bad);
}
int postRecvThroughOps(ibv_qp* qp, ibv_recv_wr* request, ibv_recv_wr** bad) {
  return ibv_post_recv(qp, request, bad);
}
int pollCqThroughOps(ibv_cq* cq, int entries, ibv_wc* completions) {
  return ibv_poll_cq(cq, entries, completions);
}
int reqNotifyCqThroughOps(ibv_cq* cq, int solicitedOnly) { return ibv_req_notify_cq(cq, solicitedOnly); }

// The symbol with the newest of `versions` the library has.
void* lookUp(void* library, const char* name, std::initializer_list<const char*> versions) {
  for (const char* version : versions)
    if (void* symbol = ::dlvsym(library, name, version)) return symbol;
  return nullptr;
}

}  // namespace

bool fillVerbsApi(void* library, VerbsApi& api, std::string& why) {
  std::string missing;
  auto bind = [&](auto& entry, const char* name, std::initializer_list<const char*> versions) {
    entry = reinterpret_cast<std::remove_reference_t<decltype(entry)>>(lookUp(library, name, versions));
    if (entry == nullptr) missing += strCat(missing.empty() ? "" : ", ", name);
  };
  const auto v11 = {"IBVERBS_1.1"};
  const auto v10 = {"IBVERBS_1.0"};
  bind(api.getDeviceList, "ibv_get_device_list", v11);
  bind(api.freeDeviceList, "ibv_free_device_list", v11);
  bind(api.getDeviceName, "ibv_get_device_name", v11);
  bind(api.openDevice, "ibv_open_device", v11);
  bind(api.closeDevice, "ibv_close_device", v11);
  bind(api.queryDevice, "ibv_query_device", v11);
  bind(api.queryGid, "ibv_query_gid", v11);
  bind(api.allocPd, "ibv_alloc_pd", v11);
  bind(api.deallocPd, "ibv_dealloc_pd", v11);
  bind(api.regMr, "ibv_reg_mr", v11);
  bind(api.deregMr, "ibv_dereg_mr", v11);
  bind(api.createCompChannel, "ibv_create_comp_channel", v10);
  bind(api.destroyCompChannel, "ibv_destroy_comp_channel", v10);
  bind(api.createCq, "ibv_create_cq", v11);
  bind(api.destroyCq, "ibv_destroy_cq", v11);
  bind(api.getCqEvent, "ibv_get_cq_event", v11);
  bind(api.ackCqEvents, "ibv_ack_cq_events", v11);
  bind(api.createQp, "ibv_create_qp", v11);
  bind(api.destroyQp, "ibv_destroy_qp", v11);
  bind(api.modifyQp, "ibv_modify_qp", v11);
  CompatQueryPort exportedQueryPort = nullptr;
  bind(exportedQueryPort, "ibv_query_port", v11);
  if (!missing.empty()) {
    why = strCat("libibverbs lacks ", missing);
    return false;
  }
  // Optional: rdma-core 32 and later.
  api.queryGidEntry = reinterpret_cast<decltype(api.queryGidEntry)>(lookUp(library, "_ibv_query_gid_ex", {"IBVERBS_1.11"}));
  // Optional: rdma-core 34 and later.
  api.regDmabufMr = reinterpret_cast<decltype(api.regDmabufMr)>(lookUp(library, "ibv_reg_dmabuf_mr", {"IBVERBS_1.12"}));

  compatQueryPort = exportedQueryPort;
  api.queryPort = queryPortThroughOps;
  api.postSend = postSendThroughOps;
  api.postRecv = postRecvThroughOps;
  api.pollCq = pollCqThroughOps;
  api.reqNotifyCq = reqNotifyCqThroughOps;
  return true;
}

const VerbsApi* loadVerbsApi(std::string* why) {
  static std::once_flag once;
  static VerbsApi api;
  static const VerbsApi* loaded = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    const std::string path = env::get({"HORA_IBVERBS_LIB"}).value_or("libibverbs.so.1");
    void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* error = ::dlerror();
      failure = strCat("cannot load ", path, " (", error != nullptr ? error : "unknown error", ")");
      return;
    }
    if (fillVerbsApi(library, api, failure)) {
      loaded = &api;
    } else {
      failure = strCat(path, ": ", failure);
      ::dlclose(library);
    }
  });
  if (loaded == nullptr && why != nullptr) *why = failure;
  return loaded;
}

}  // namespace hora::transport::rdma::verbs
