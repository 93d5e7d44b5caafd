#include "transport/rdma/gpu_direct.h"

#include <unistd.h>

#include "base/error.h"
#include "hora_config.h"
#include "transport/rdma/device.h"
#if HORA_HAVE_IBVERBS
#include "transport/rdma/verbs/verbs_api.h"
#endif
#if HORA_HAVE_CUDA
#include "device/device_memory.h"
#endif

namespace hora::transport::rdma {

std::string findPeerMemoryModule(const std::string& sysfsRoot) {
  // The module registers itself with the RDMA core's peer-memory clients
  // (nv_mem, or nv_mem_nc for its variant without caching), and shows up
  // as a loaded module (nvidia_peermem).
  for (const char* path : {"/kernel/mm/memory_peers/nv_mem/version", "/kernel/mm/memory_peers/nv_mem_nc/version",
                           "/module/nvidia_peermem/version"}) {
    std::string file = sysfsRoot + path;
    if (::access(file.c_str(), F_OK) == 0) return file;
  }
  return {};
}

bool verbsRegistersDmabuf() {
#if HORA_HAVE_IBVERBS
  const verbs::VerbsApi* api = verbs::loadVerbsApi();
  return api != nullptr && api->regDmabufMr != nullptr;
#else
  return false;
#endif
}

GpuDirectFacts gpuDirectFacts(int cudaDevice) {
  GpuDirectFacts facts;
  facts.peerMemoryModule = findPeerMemoryModule();
  facts.nicRegistersDmabuf = verbsRegistersDmabuf();
  if (const std::shared_ptr<Device> ib = currentDevice(TransportKind::Ib)) facts.driverRegistersDmabuf = ib->acceptsDmabuf();
#if HORA_HAVE_CUDA
  facts.gpuExportsDmabuf = cudaDevice >= 0 && device::exportsDmabuf(cudaDevice);
#else
  (void)cudaDevice;
#endif
  return facts;
}

GpuDirectFacts gpuDirectFactsOfHost() {
#if HORA_HAVE_CUDA
  return gpuDirectFacts(device::deviceCount() > 0 ? 0 : -1);
#else
  return gpuDirectFacts(-1);
#endif
}

std::string describeGpuDirect(const GpuDirectFacts& facts) {
  std::string ways;
  if (!facts.peerMemoryModule.empty()) ways = strCat("peer memory (", facts.peerMemoryModule, ")");
  if (facts.dmabufPossible())
    ways += strCat(ways.empty() ? "" : " and ",
                   facts.driverRegistersDmabuf ? "dma-buf (the NIC's driver took a trial registration)"
                                               : "dma-buf, as far as the GPU and libibverbs say (no RDMA port is "
                                                 "open to ask the NIC's driver)");
  if (facts.possible()) return strCat("possible here: ", ways);
  const char* dmabuf = !facts.gpuExportsDmabuf && !facts.nicRegistersDmabuf
                           ? "neither the GPU nor libibverbs offers dma-buf"
                       : !facts.gpuExportsDmabuf   ? "no GPU exports dma-bufs"
                       : !facts.nicRegistersDmabuf ? "libibverbs cannot register a dma-buf"
                                                   : "the NIC's driver refused a trial dma-buf registration";
  return strCat("not available: no peer-memory module, and ", dmabuf);
}

std::string describeDeviceDataPath(const GpuDirectFacts& facts) {
  return strCat("staged through pinned host memory (GPUDirect RDMA ", describeGpuDirect(facts),
                facts.possible() ? "; hora does not use it yet)" : ")");
}

}  // namespace hora::transport::rdma
