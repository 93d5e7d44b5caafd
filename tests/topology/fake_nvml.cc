// A stand-in for the NVIDIA driver's libnvidia-ml.so.1, so the NVML code
// path runs on machines without a driver. It reports four GPUs of the test
// machine kMixedMachine (synthetic_machines.h) plus one it does not have:
//   0000:12:00.0 <-> 0000:13:00.0   two links (each side reports them)
//   0000:12:00.0  -> the CPU         one link (far end: an IBM device)
//   0000:15:00.0, 0000:20:00.0 -> an NVSwitch (0000:f0:00.0), three links each
//   0000:99:00.0                    not in the topology: ignored
// FAKE_NVML_FAIL_INIT=1 makes nvmlInit_v2 fail as without a loaded driver.
#include <cstdlib>
#include <cstring>

namespace {

struct Pci {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

struct Link {
  unsigned bus;     // far end's bus number (domain 0, device 0)
  unsigned vendor;  // far end's PCI vendor
};

struct Gpu {
  unsigned bus;
  Link links[4];
  unsigned linkCount;
};

const Gpu kGpus[] = {
    {0x12, {{0x13, 0x10de}, {0x13, 0x10de}, {0x00, 0x1014}}, 3},
    {0x13, {{0x12, 0x10de}, {0x12, 0x10de}}, 2},
    {0x15, {{0xf0, 0x10de}, {0xf0, 0x10de}, {0xf0, 0x10de}}, 3},
    {0x20, {{0xf0, 0x10de}, {0xf0, 0x10de}, {0xf0, 0x10de}}, 3},
    {0x99, {{0x12, 0x10de}}, 1},
};
constexpr unsigned kGpuCount = sizeof kGpus / sizeof kGpus[0];
constexpr int kSuccess = 0, kInvalidArgument = 2, kDriverNotLoaded = 9;

const Gpu* gpuOf(void* handle) { return static_cast<const Gpu*>(handle); }

void fill(Pci* pci, unsigned bus, unsigned vendor) {
  std::memset(pci, 0, sizeof *pci);
  pci->bus = bus;
  pci->pciDeviceId = (0x20b0u << 16) | vendor;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int nvmlInit_v2() {
  const char* fail = std::getenv("FAKE_NVML_FAIL_INIT");
  return fail != nullptr && fail[0] == '1' ? kDriverNotLoaded : kSuccess;
}
__attribute__((visibility("default"))) int nvmlShutdown() { return kSuccess; }
__attribute__((visibility("default"))) int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = kGpuCount;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (index >= kGpuCount) return kInvalidArgument;
  *device = const_cast<Gpu*>(&kGpus[index]);
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetPciInfo_v3(void* device, Pci* pci) {
  fill(pci, gpuOf(device)->bus, 0x10de);
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetNvLinkState(void* device, unsigned int link, int* active) {
  if (link >= 12) return kInvalidArgument;  // this GPU generation has 12 links
  *active = link < gpuOf(device)->linkCount ? 1 : 0;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetNvLinkRemotePciInfo_v2(void* device, unsigned int link,
                                                                              Pci* pci) {
  if (link >= gpuOf(device)->linkCount) return kInvalidArgument;
  fill(pci, gpuOf(device)->links[link].bus, gpuOf(device)->links[link].vendor);
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetCudaComputeCapability(void*, int* major, int* minor) {
  *major = 8;
  *minor = 0;
  return kSuccess;
}

}  // extern "C"
