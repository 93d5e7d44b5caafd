#include "topology/nvml_links.h"

#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "base/error.h"
#include "topology/bus_id.h"

namespace hora::topology {

namespace {

// The few NVML declarations used, as the NVML API reference documents them.
using nvmlReturn_t = int;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
using nvmlEnableState_t = int;  // NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1
constexpr nvmlEnableState_t NVML_FEATURE_ENABLED = 1;
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;  // device id << 16 | vendor id
  unsigned int pciSubSystemId;
  char busId[32];
};
constexpr unsigned kMaxNvLinks = 18;  // NVML_NVLINK_MAX_LINKS of current drivers
constexpr unsigned kNvidiaVendor = 0x10de;

using InitFn = nvmlReturn_t (*)();
using ShutdownFn = nvmlReturn_t (*)();
using CountFn = nvmlReturn_t (*)(unsigned int*);
using HandleFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using PciInfoFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*);
using LinkStateFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlEnableState_t*);
using RemotePciFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlPciInfo_t*);
using CapabilityFn = nvmlReturn_t (*)(nvmlDevice_t, int*, int*);

// dlopen()ed NVML, initialised for the object's lifetime.
class Nvml {
 public:
  Nvml() {
    handle_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* why = dlerror();
      problem_ = strCat("no NVIDIA driver library (", why ? why : "libnvidia-ml.so.1 not found", ")");
      return;
    }
    bool complete = load(init, "nvmlInit_v2") && load(shutdown, "nvmlShutdown") &&
                    load(count, "nvmlDeviceGetCount_v2") && load(handleByIndex, "nvmlDeviceGetHandleByIndex_v2") &&
                    load(pciInfo, "nvmlDeviceGetPciInfo_v3") && load(linkState, "nvmlDeviceGetNvLinkState") &&
                    load(remotePci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    load(capability, "nvmlDeviceGetCudaComputeCapability");  // optional: refines bandwidth
    if (!complete) return;
    if (nvmlReturn_t rc = init(); rc != NVML_SUCCESS) {
      problem_ = strCat("nvmlInit_v2 failed with NVML error ", rc);
      return;
    }
    initialised_ = true;
  }
  ~Nvml() {
    if (initialised_) shutdown();
    if (handle_ != nullptr) dlclose(handle_);
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  bool usable() const { return initialised_; }
  const std::string& problem() const { return problem_; }

  InitFn init = nullptr;
  ShutdownFn shutdown = nullptr;
  CountFn count = nullptr;
  HandleFn handleByIndex = nullptr;
  PciInfoFn pciInfo = nullptr;
  LinkStateFn linkState = nullptr;
  RemotePciFn remotePci = nullptr;
  CapabilityFn capability = nullptr;

 private:
  template <typename Fn>
  bool load(Fn& fn, const char* name) {
    fn = reinterpret_cast<Fn>(dlsym(handle_, name));
    if (fn == nullptr && problem_.empty() && std::string(name) != "nvmlDeviceGetCudaComputeCapability")
      problem_ = strCat("the NVIDIA driver's NVML lacks ", name);
    return fn != nullptr;
  }

  void* handle_ = nullptr;
  bool initialised_ = false;
  std::string problem_;
};

std::string busIdOf(const nvmlPciInfo_t& pci) { return formatBusId(PciAddress{pci.domain, pci.bus, pci.device, 0}); }

}  // namespace

std::string addNvLinksFromNvml(SystemBuilder& builder) {
  Nvml nvml;
  if (!nvml.usable()) return nvml.problem();
  unsigned int count = 0;
  if (nvmlReturn_t rc = nvml.count(&count); rc != NVML_SUCCESS)
    return strCat("nvmlDeviceGetCount_v2 failed with NVML error ", rc);

  std::set<int> eligible;  // GPUs whose NVLinks no other source described
  for (int id = 0; id < builder.deviceCount(); ++id)
    if (builder.device(id).kind == DeviceKind::Gpu && !builder.hasNvLinks(id)) eligible.insert(id);

  std::map<std::pair<int, int>, int> gpuLinks;  // links seen from each end; counted once
  int fabric = -1;
  for (unsigned int index = 0; index < count; ++index) {
    nvmlDevice_t device = nullptr;
    nvmlPciInfo_t pci{};
    if (nvml.handleByIndex(index, &device) != NVML_SUCCESS || nvml.pciInfo(device, &pci) != NVML_SUCCESS) continue;
    int gpu = builder.findDevice(busIdOf(pci), DeviceKind::Gpu);
    if (gpu < 0 || !eligible.count(gpu)) continue;
    int major = 0, minor = 0;
    if (nvml.capability != nullptr && nvml.capability(device, &major, &minor) == NVML_SUCCESS &&
        builder.device(gpu).smVersion == 0)
      builder.device(gpu).smVersion = major * 10 + minor;
    const double perLink = nvlinkGBpsPerLink(builder.device(gpu).smVersion);
    std::map<int, int> toGpu;
    for (unsigned int link = 0; link < kMaxNvLinks; ++link) {
      nvmlEnableState_t active = 0;
      // Links past the GPU's last one answer with an error: skip them.
      if (nvml.linkState(device, link, &active) != NVML_SUCCESS || active != NVML_FEATURE_ENABLED) continue;
      nvmlPciInfo_t remote{};
      if (nvml.remotePci(device, link, &remote) != NVML_SUCCESS) continue;
      std::string remoteId = busIdOf(remote);
      if (int other = builder.findDevice(remoteId, DeviceKind::Gpu); other >= 0) {
        ++toGpu[other];
      } else if ((remote.pciDeviceId & 0xffff) == kNvidiaVendor) {
        int nvswitch = builder.findDevice(remoteId, DeviceKind::NvSwitch);
        if (nvswitch < 0) {
          if (fabric < 0) {
            Device d;
            d.kind = DeviceKind::NvSwitch;
            d.detail = "NVLink fabric (NVML)";
            fabric = builder.addDevice(-1, d, 0);
          }
          nvswitch = fabric;
        }
        builder.addNvLink(gpu, nvswitch, perLink);
      } else {
        // Another vendor's device at the far end: the CPU (IBM POWER's NVLink).
        builder.addNvLinkToCpu(gpu, builder.cpuNode(builder.device(gpu).numaNode), perLink);
      }
    }
    for (const auto& [other, links] : toGpu) {
      auto key = std::make_pair(std::min(gpu, other), std::max(gpu, other));
      gpuLinks[key] = std::max(gpuLinks[key], links);
    }
  }
  for (const auto& [pair, links] : gpuLinks) {
    int sm = std::max(builder.device(pair.first).smVersion, builder.device(pair.second).smVersion);
    builder.addNvLink(pair.first, pair.second, links * nvlinkGBpsPerLink(sm));
  }
  return "";
}

}  // namespace hora::topology
