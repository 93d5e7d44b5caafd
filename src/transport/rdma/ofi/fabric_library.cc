#include "transport/rdma/ofi/fabric_library.h"

#include <dlfcn.h>

#include <mutex>

#include "base/env.h"
#include "base/error.h"

namespace hora::transport::rdma::ofi {

namespace {
// The versions libfabric 1.5 and later export these at, matching the
// struct layouts of <rdma/fabric.h> (fi_info grew at 1.3, fi_fabric_attr at 1.1).
template <typename Function>
bool bind(void* library, const char* name, const char* version, Function& into) {
  void* symbol = ::dlvsym(library, name, version);
  into = reinterpret_cast<Function>(symbol);
  return symbol != nullptr;
}

struct Loaded {
  FabricLibrary library;
  std::string why;
  bool ok = false;
};

// libfabric's rxm layer, which runs reliable datagrams over the tcp provider
// (and over verbs where a provider is asked for them), sizes each
// endpoint's buffer pools for an endpoint that talks to many peers: about
// 84 MB per endpoint over tcp, measured with libfabric 1.20. hora opens an
// endpoint per connection, each for one peer, and sends little through
// those buffers: its data moves by RMA writes, and its messages are a
// connection's few credit records and write notes in flight. So, unless
// the user set them, smaller pools (about 8 MB per endpoint over tcp): an
// all-to-all among 8 ranks of one host opens 14 endpoints per rank. They
// are read when libfabric first initialises its providers, so they are set
// before it is loaded.
// The values stay in the process's environment: its children inherit them,
// and another user of libfabric in the process (an MPI library) gets them
// too if it initialises libfabric after this.
void sizeRxmBuffers() {
  env::setUnlessSet("FI_OFI_RXM_MSG_RX_SIZE", "16");
  env::setUnlessSet("FI_OFI_RXM_MSG_TX_SIZE", "16");
  env::setUnlessSet("FI_OFI_RXM_BUFFER_SIZE", "4096");
}

Loaded load() {
  Loaded loaded;
  sizeRxmBuffers();
  const std::string path = env::get({"HORA_OFI_LIB"}).value_or("libfabric.so.1");
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    loaded.why = strCat("cannot load ", path, " (", why != nullptr ? why : "unknown error", ")");
    return loaded;
  }
  FabricLibrary& f = loaded.library;
  if (!bind(handle, "fi_getinfo", "FABRIC_1.3", f.getinfo) || !bind(handle, "fi_freeinfo", "FABRIC_1.3", f.freeinfo) ||
      !bind(handle, "fi_dupinfo", "FABRIC_1.3", f.dupinfo) || !bind(handle, "fi_fabric", "FABRIC_1.1", f.fabric) ||
      !bind(handle, "fi_strerror", "FABRIC_1.0", f.strerror)) {
    loaded.why = strCat(path, " lacks fi_getinfo@FABRIC_1.3 or another entry point hora needs (libfabric 1.5 or later is)");
    ::dlclose(handle);
    return loaded;
  }
  loaded.ok = true;  // never dlclosed
  return loaded;
}
}  // namespace

std::string FabricLibrary::explain(const char* call, long result) const {
  const int code = static_cast<int>(result < 0 ? -result : result);
  return strCat(call, " failed: ", strerror != nullptr ? strerror(code) : "?", " (", result, ")");
}

const FabricLibrary* fabricLibrary(std::string& why) {
  static std::once_flag once;
  static Loaded* loaded = nullptr;
  std::call_once(once, [] { loaded = new Loaded(load()); });
  why = loaded->why;
  return loaded->ok ? &loaded->library : nullptr;
}

}  // namespace hora::transport::rdma::ofi
