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

Loaded load() {
  Loaded loaded;
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
