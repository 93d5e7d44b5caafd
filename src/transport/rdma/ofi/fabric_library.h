// libfabric, loaded at run time: dlopen of "libfabric.so.1" (HORA_OFI_LIB
// overrides) and the few entry points that are real symbols, taken at the
// symbol versions these headers were written for, so one libnccl.so.2 runs
// on machines with and without libfabric. Everything else libfabric offers
// (domains, endpoints, memory registration, RMA, completion queues) is an
// inline call through the objects these return, and needs no symbol.
#pragma once

#include <rdma/fabric.h>

#include <string>

namespace hora::transport::rdma::ofi {

struct FabricLibrary {
  int (*getinfo)(std::uint32_t version, const char* node, const char* service, std::uint64_t flags,
                 const fi_info* hints, fi_info** info) = nullptr;
  void (*freeinfo)(fi_info* info) = nullptr;
  fi_info* (*dupinfo)(const fi_info* info) = nullptr;  // dupinfo(nullptr): a blank one
  int (*fabric)(fi_fabric_attr* attr, fid_fabric** fabric, void* context) = nullptr;
  const char* (*strerror)(int error) = nullptr;

  // "fi_x failed: <libfabric's text> (-code)"; `result` is what fi_x returned.
  std::string explain(const char* call, long result) const;
};

// The library, loaded on first use and kept for the process's life
// (providers start threads that must not outlive their code); null with
// `why` filled when it cannot be loaded.
const FabricLibrary* fabricLibrary(std::string& why);

}  // namespace hora::transport::rdma::ofi
