// GPUDirect RDMA detection: the peer-memory module found under a sysfs
// root (a temporary tree here), and the wording of each combination of
// facts. Nothing here has a GPU or an RDMA NIC: the facts of this machine
// are only checked to be what it has (no module, no GPU).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "transport/rdma/gpu_direct.h"

namespace hora::transport::rdma {
namespace {

namespace fs = std::filesystem;

class SysfsTree {
 public:
  SysfsTree() {
    std::string pattern = (fs::temp_directory_path() / "hora-sysfs-XXXXXX").string();
    root_ = ::mkdtemp(pattern.data());
  }
  ~SysfsTree() { fs::remove_all(root_); }
  void add(const std::string& relative) {
    const fs::path file = fs::path(root_) / relative.substr(1);
    fs::create_directories(file.parent_path());
    std::ofstream(file) << "1.0\n";
  }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

TEST(GpuDirect, NoPeerMemoryModuleInAnEmptyTree) {
  SysfsTree tree;
  EXPECT_EQ(findPeerMemoryModule(tree.root()), "");
}

TEST(GpuDirect, EachWayTheModuleShowsItselfIsFound) {
  for (const char* path : {"/kernel/mm/memory_peers/nv_mem/version", "/kernel/mm/memory_peers/nv_mem_nc/version",
                           "/module/nvidia_peermem/version"}) {
    SysfsTree tree;
    tree.add(path);
    EXPECT_EQ(findPeerMemoryModule(tree.root()), tree.root() + path);
  }
}

TEST(GpuDirect, TheWordingSaysWhatIsPossibleAndWhatHoraDoes) {
  GpuDirectFacts none;
  EXPECT_EQ(describeGpuDirect(none), "not available: no peer-memory module, and neither the GPU nor libibverbs "
                                     "offers dma-buf");
  EXPECT_EQ(describeDeviceDataPath(none),
            "staged through pinned host memory (GPUDirect RDMA not available: no peer-memory module, and neither "
            "the GPU nor libibverbs offers dma-buf)");
  GpuDirectFacts nicOnly{"", true, false};
  EXPECT_EQ(describeGpuDirect(nicOnly), "not available: no peer-memory module, and no GPU exports dma-bufs");
  GpuDirectFacts gpuOnly{"", false, true};
  EXPECT_EQ(describeGpuDirect(gpuOnly), "not available: no peer-memory module, and libibverbs cannot register a "
                                        "dma-buf");
  GpuDirectFacts dmabuf{"", true, true};
  const std::string dmabufWay =
      "dma-buf, as far as the GPU and libibverbs say (no RDMA port is open to ask the NIC's driver)";
  EXPECT_EQ(describeGpuDirect(dmabuf), "possible here: " + dmabufWay);
  EXPECT_EQ(describeDeviceDataPath(dmabuf), "staged through pinned host memory (GPUDirect RDMA possible here: " +
                                                dmabufWay + "; hora does not use it yet)");
  GpuDirectFacts both{"/sys/module/nvidia_peermem/version", true, true};
  EXPECT_EQ(describeGpuDirect(both), "possible here: peer memory (/sys/module/nvidia_peermem/version) and " + dmabufWay);
  // With a port open, the NIC driver's answer to the trial registration.
  GpuDirectFacts driverTook{"", true, true, true};
  EXPECT_EQ(describeGpuDirect(driverTook), "possible here: dma-buf (the NIC's driver took a trial registration)");
  GpuDirectFacts driverRefused{"", true, true, false};
  EXPECT_FALSE(driverRefused.possible());
  EXPECT_EQ(describeGpuDirect(driverRefused),
            "not available: no peer-memory module, and the NIC's driver refused a trial dma-buf registration");
  GpuDirectFacts module{"/sys/module/nvidia_peermem/version", false, false};
  EXPECT_EQ(describeDeviceDataPath(module), "staged through pinned host memory (GPUDirect RDMA possible here: peer "
                                            "memory (/sys/module/nvidia_peermem/version); hora does not use it yet)");
}

// This machine: no GPU, so no dma-buf export, whatever libibverbs offers.
TEST(GpuDirect, ThisMachinesFactsHaveNoGpuExport) {
  const GpuDirectFacts facts = gpuDirectFacts(-1);
  EXPECT_FALSE(facts.gpuExportsDmabuf);
  EXPECT_EQ(facts.peerMemoryModule, findPeerMemoryModule());
}

}  // namespace
}  // namespace hora::transport::rdma
