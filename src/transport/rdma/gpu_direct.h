// GPUDirect RDMA: whether a NIC could read and write GPU memory itself,
// which would let the network proxy hand device buffers to the NIC instead
// of staging them through pinned host memory. Linux offers two ways, and a
// machine has either, both or neither:
//   - a peer-memory module (nvidia-peermem, formerly nv_peer_mem) that lets
//     the RDMA stack pin GPU pages behind an ordinary registration;
//   - dma-buf: the GPU driver exports device memory as a dma-buf file
//     descriptor (CUDA's CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED) and the NIC
//     registers that (ibv_reg_dmabuf_mr, rdma-core 34 and later).
// hora detects and reports both; its proxy stages device data through
// pinned host memory either way (docs/transports.md says so), so the report
// tells a user what the machine could do and what hora does.
#pragma once

#include <optional>
#include <string>

namespace hora::transport::rdma {

struct GpuDirectFacts {
  std::string peerMemoryModule;     // the file that shows the module loaded; empty: none
  bool nicRegistersDmabuf = false;  // libibverbs has ibv_reg_dmabuf_mr
  bool gpuExportsDmabuf = false;    // the rank's GPU exports dma-bufs
  // The NIC's kernel driver registers dma-bufs, as a trial registration
  // found (Device::acceptsDmabuf); nullopt where no verbs port is open.
  std::optional<bool> driverRegistersDmabuf;

  bool dmabufPossible() const {
    return nicRegistersDmabuf && gpuExportsDmabuf && driverRegistersDmabuf.value_or(true);
  }
  // Either way is there.
  bool possible() const { return !peerMemoryModule.empty() || dmabufPossible(); }
};

// The first of the files that show a peer-memory module loaded, as NCCL
// looks for them, under `sysfsRoot` (tests give another root); empty when
// none exists.
std::string findPeerMemoryModule(const std::string& sysfsRoot = "/sys");

// Whether the libibverbs found at run time can register a dma-buf (false
// where it cannot be loaded, or hora was built without the verbs backend).
bool verbsRegistersDmabuf();

// The facts for the GPU `cudaDevice` (-1: none; then the GPU exports
// nothing), and the ib device open in this process, if one is.
GpuDirectFacts gpuDirectFacts(int cudaDevice);
// The facts for this host, its first GPU standing for all (dma-buf export
// is a property of the driver), for hora-topo.
GpuDirectFacts gpuDirectFactsOfHost();

// What GPUDirect RDMA the machine offers, for hora-topo: "possible here:
// dma-buf, ...", or "not available: no peer-memory module, and ...".
// dma-buf counts as possible when the GPU exports dma-bufs, libibverbs has
// ibv_reg_dmabuf_mr and the NIC's driver took the trial registration (or,
// where no port is open to try it on, was not asked: the text says so).
std::string describeGpuDirect(const GpuDirectFacts& facts);

// How device data reaches the NIC, for the log of a connection to another
// host over ib: "staged through pinned host memory (GPUDirect RDMA possible
// here: ...; hora does not use it yet)".
std::string describeDeviceDataPath(const GpuDirectFacts& facts);

}  // namespace hora::transport::rdma
