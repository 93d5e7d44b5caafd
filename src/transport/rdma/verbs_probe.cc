#include "transport/rdma/verbs_probe.h"

#include <dlfcn.h>

#include <cerrno>
#include <mutex>

#include "base/env.h"
#include "base/error.h"
#include "base/log.h"

namespace hora::transport::rdma {

namespace {
// The entry points with the symbol version current rdma-core exports
// (IBVERBS_1.1), so an old or new library gives the ABI these calls use.
using GetDeviceList = void** (*)(int*);
using FreeDeviceList = void (*)(void**);
using GetDeviceName = const char* (*)(void*);

void* versioned(void* library, const char* name) {
  void* symbol = ::dlvsym(library, name, "IBVERBS_1.1");
  return symbol != nullptr ? symbol : ::dlsym(library, name);
}
}  // namespace

VerbsProbe probeVerbs() {
  VerbsProbe probe;
  const std::string path = env::get({"HORA_IBVERBS_LIB"}).value_or("libibverbs.so.1");
  void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = ::dlerror();
    probe.why = strCat("cannot load ", path, " (", why != nullptr ? why : "unknown error", ")");
    return probe;
  }
  probe.libraryLoaded = true;
  auto list = reinterpret_cast<GetDeviceList>(versioned(library, "ibv_get_device_list"));
  auto release = reinterpret_cast<FreeDeviceList>(versioned(library, "ibv_free_device_list"));
  auto name = reinterpret_cast<GetDeviceName>(versioned(library, "ibv_get_device_name"));
  if (list == nullptr || release == nullptr || name == nullptr) {
    probe.why = strCat(path, " lacks ibv_get_device_list, ibv_free_device_list or ibv_get_device_name");
  } else {
    int count = 0;
    errno = 0;
    void** devices = list(&count);
    if (devices == nullptr) {
      probe.why = strCat("ibv_get_device_list failed: ", errnoText(errno),
                         errno == ENOSYS ? " (no kernel RDMA support)" : "");
    } else {
      for (int i = 0; i < count; ++i)
        if (const char* device = name(devices[i])) probe.devices.emplace_back(device);
      release(devices);
      if (probe.devices.empty()) probe.why = "libibverbs lists no RDMA device";
    }
  }
  ::dlclose(library);
  return probe;
}

const VerbsProbe& verbsAvailability() {
  static std::once_flag once;
  static VerbsProbe probe;
  std::call_once(once, [] {
    probe = probeVerbs();
    if (probe.devices.empty()) {
      HORA_LOG(Info, "RDMA: ib is not available (", probe.why, "); tcp carries the pairs it would");
    } else {
      std::string names;
      for (const auto& device : probe.devices) names += (names.empty() ? "" : ", ") + device;
      HORA_LOG(Info, "RDMA: found ", names, ", but hora's verbs backend is not in use yet; tcp carries those pairs");
    }
  });
  return probe;
}

}  // namespace hora::transport::rdma
