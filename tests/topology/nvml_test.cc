// The NVML path against the stand-in library (fake_nvml.cc), found through
// LD_LIBRARY_PATH: NVLinks between GPUs, to an NVSwitch and to the CPU are
// added to a System described by a file, each counted once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "synthetic_machines.h"
#include "topology/nvml_links.h"
#include "topology_test_support.h"

namespace hora::topology {
namespace {

using testing::gpuIndex;
using testing::gpuPath;
using testing::ScopedEnv;
using testing::TempFile;
using ::testing::HasSubstr;

TEST(NvmlTest, AddsTheLinksTheDriverReports) {
  TempFile file(testing::kMixedMachine);
  ScopedEnv topo("HORA_TOPO_FILE", file.path()), nvswitch("HORA_TOPO_NVSWITCH", std::nullopt);
  ScopedEnv init("FAKE_NVML_FAIL_INIT", std::nullopt);
  System sys = loadSystem();
  // GPU0 (12) and GPU1 (13): two links of 25 GB/s, reported by both ends, counted once.
  EXPECT_EQ(gpuPath(sys, 0, 1), PathClass::Nvl);
  EXPECT_DOUBLE_EQ(sys.path(gpuIndex(sys, 0), gpuIndex(sys, 1)).bandwidthGBps, 50);
  // GPU0 also has a link to the CPU.
  EXPECT_DOUBLE_EQ(sys.devices()[gpuIndex(sys, 0)].nvlinkGBps, 75);
  EXPECT_EQ(sys.devices()[gpuIndex(sys, 0)].smVersion, 80);
  // GPU2 (15) and GPU3 (20) meet in the NVSwitch.
  EXPECT_EQ(gpuPath(sys, 2, 3), PathClass::Nvl);
  EXPECT_DOUBLE_EQ(sys.path(gpuIndex(sys, 2), gpuIndex(sys, 3)).bandwidthGBps, 75);
  EXPECT_EQ(sys.devicesOfKind(DeviceKind::NvSwitch).size(), 1u);
  // Not joined by NVLink: the PCIe path stays.
  EXPECT_EQ(gpuPath(sys, 0, 2), PathClass::Pxb);
  EXPECT_EQ(gpuPath(sys, 1, 4), PathClass::Sys);
}

TEST(NvmlTest, LoadingAFileDirectlyDoesNotAskTheDriver) {
  TempFile file(testing::kMixedMachine);
  ScopedEnv init("FAKE_NVML_FAIL_INIT", std::nullopt);
  System sys = loadSystemFromFile(file.path());
  EXPECT_EQ(gpuPath(sys, 0, 1), PathClass::Pix);
  EXPECT_TRUE(sys.devicesOfKind(DeviceKind::NvSwitch).empty());
}

TEST(NvmlTest, TheDriversLinksComeBeforeTheNvSwitchAssumption) {
  TempFile file(testing::kMixedMachine);
  ScopedEnv topo("HORA_TOPO_FILE", file.path()), nvswitch("HORA_TOPO_NVSWITCH", "1");
  ScopedEnv init("FAKE_NVML_FAIL_INIT", std::nullopt);
  System sys = loadSystem();
  EXPECT_DOUBLE_EQ(sys.path(gpuIndex(sys, 0), gpuIndex(sys, 1)).bandwidthGBps, 50);  // as the driver says
  // GPU4 had no NVLink: the assumption puts it on the fabric, with GPU2 and GPU3.
  EXPECT_EQ(gpuPath(sys, 4, 2), PathClass::Nvl);
  EXPECT_EQ(gpuPath(sys, 4, 3), PathClass::Nvl);
}

TEST(NvmlTest, ADriverThatFailsIsReportedNotThrown) {
  ScopedEnv init("FAKE_NVML_FAIL_INIT", "1");
  SystemBuilder builder("test");
  EXPECT_THAT(addNvLinksFromNvml(builder), HasSubstr("nvmlInit_v2 failed with NVML error 9"));
}

}  // namespace
}  // namespace hora::topology
