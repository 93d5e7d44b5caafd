// The ib transport's device on libibverbs: which ports a process may use
// (NCCL_IB_HCA, ACTIVE), listed through a fake ibv_* table; and on this
// machine, through the real library, "no device" as a reason, never an
// error. Nothing here has run on an InfiniBand or RoCE NIC.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "transport/rdma/verbs/verbs_device.h"

namespace hora::transport::rdma::verbs {
namespace {

using ::testing::HasSubstr;

std::vector<PortListing> twoDevices() {
  return {{"mlx5_0", 1, true, "InfiniBand"},
          {"mlx5_0", 2, false, "InfiniBand"},
          {"mlx5_1", 1, true, "Ethernet"}};
}

TEST(UsablePorts, ActivePortsTheFilterAllowsInOrder) {
  std::string why;
  auto usable = usablePorts(twoDevices(), HcaFilter{}, {}, why);
  ASSERT_EQ(usable.size(), 2u);
  EXPECT_EQ(usable[0].device, "mlx5_0");
  EXPECT_EQ(usable[1].device, "mlx5_1");
  EXPECT_TRUE(why.empty());

  usable = usablePorts(twoDevices(), HcaFilter::parse("^mlx5_0"), {}, why);
  ASSERT_EQ(usable.size(), 1u);
  EXPECT_EQ(usable[0].device, "mlx5_1");
}

TEST(UsablePorts, TheNicsNearestTheRankComeFirst) {
  std::string why;
  auto usable = usablePorts(twoDevices(), HcaFilter{}, {"mlx5_1", "mlx5_0"}, why);
  ASSERT_EQ(usable.size(), 2u);
  EXPECT_EQ(usable[0].device, "mlx5_1");
  EXPECT_EQ(usable[1].device, "mlx5_0");
  // A device the topology does not know keeps its place after those it does.
  usable = usablePorts(twoDevices(), HcaFilter{}, {"mlx5_1"}, why);
  EXPECT_EQ(usable[0].device, "mlx5_1");
}

// Multi-rail: beside the port opened, the usable ports of the devices as
// near as the first (topology::rdmaRailsNearest), on its link layer.
TEST(FurtherRails, ThePortsOfEquallyNearDevicesOnTheSameLinkLayer) {
  const std::vector<PortListing> usable{{"mlx5_0", 1, true, "InfiniBand"},
                                        {"mlx5_1", 1, true, "InfiniBand"},
                                        {"mlx5_2", 1, true, "Ethernet"},
                                        {"mlx5_3", 1, true, "InfiniBand"}};
  // mlx5_0 and mlx5_1 share a PCIe switch with the rank's data.
  auto rails = furtherRails(usable, 0, {"mlx5_0", "mlx5_1"});
  ASSERT_EQ(rails.size(), 1u);
  EXPECT_EQ(rails[0].device, "mlx5_1");
  // A rail on RoCE beside one on InfiniBand reaches other peers: not one.
  EXPECT_TRUE(furtherRails(usable, 0, {"mlx5_0", "mlx5_2"}).empty());
  // No topology (no rails named): one NIC, as before.
  EXPECT_TRUE(furtherRails(usable, 0, {}).empty());
  // The first port failed to open and the second was: rails after it.
  rails = furtherRails(usable, 1, {"mlx5_0", "mlx5_1", "mlx5_3"});
  ASSERT_EQ(rails.size(), 1u);
  EXPECT_EQ(rails[0].device, "mlx5_3");
  EXPECT_TRUE(furtherRails(usable, 4, {"mlx5_0"}).empty());
}

TEST(UsablePorts, NoneSaysWhatWasLeftOutAndWhy) {
  std::string why;
  EXPECT_TRUE(usablePorts(twoDevices(), HcaFilter::parse("=mlx5_0:2"), {}, why).empty());
  EXPECT_THAT(why, HasSubstr("not ACTIVE: mlx5_0:2"));
  EXPECT_THAT(why, HasSubstr("left out by NCCL_IB_HCA: mlx5_0:1, mlx5_1:1"));
  EXPECT_TRUE(usablePorts({}, HcaFilter{}, {}, why).empty());
  EXPECT_THAT(why, HasSubstr("lists no RDMA device"));
}

// A fake library with two devices: mlx5_0 (two ports, the second down)
// and mlx5_1 (one RoCE port). Every context opened is closed again.
struct FakeDevices {
  static inline int opened = 0, closed = 0;
  static inline ibv_device* devices[3] = {reinterpret_cast<ibv_device*>(0x10), reinterpret_cast<ibv_device*>(0x20),
                                          nullptr};
  VerbsApi api;
  FakeDevices() {
    opened = closed = 0;
    api.getDeviceList = [](int* count) {
      *count = 2;
      return devices;
    };
    api.freeDeviceList = [](ibv_device**) {};
    api.getDeviceName = [](ibv_device* device) { return device == devices[0] ? "mlx5_0" : "mlx5_1"; };
    api.openDevice = [](ibv_device* device) {
      ++opened;
      return reinterpret_cast<ibv_context*>(device);  // never dereferenced
    };
    api.closeDevice = [](ibv_context*) { return ++closed, 0; };
    api.queryDevice = [](ibv_context* context, ibv_device_attr* attributes) {
      attributes->phys_port_cnt = reinterpret_cast<ibv_device*>(context) == devices[0] ? 2 : 1;
      return 0;
    };
    api.queryPort = [](ibv_context* context, std::uint8_t port, ibv_port_attr* attributes) {
      const bool first = reinterpret_cast<ibv_device*>(context) == devices[0];
      attributes->state = first && port == 2 ? IBV_PORT_DOWN : IBV_PORT_ACTIVE;
      attributes->link_layer = first ? IBV_LINK_LAYER_INFINIBAND : IBV_LINK_LAYER_ETHERNET;
      return 0;
    };
  }
};

TEST(ListPorts, EveryPortOfEveryDeviceWithItsStateAndLinkLayer) {
  FakeDevices fake;
  int count = 0;
  ibv_device** devices = fake.api.getDeviceList(&count);
  const auto ports = listPorts(fake.api, devices, count);
  ASSERT_EQ(ports.size(), 3u);
  EXPECT_EQ(ports[0].device, "mlx5_0");
  EXPECT_EQ(ports[0].port, 1);
  EXPECT_TRUE(ports[0].active);
  EXPECT_EQ(ports[1].port, 2);
  EXPECT_FALSE(ports[1].active);
  EXPECT_EQ(ports[2].device, "mlx5_1");
  EXPECT_EQ(ports[2].linkLayer, "Ethernet");
  EXPECT_EQ(FakeDevices::opened, 2);
  EXPECT_EQ(FakeDevices::closed, 2) << "listing must leave no device open";
}

// "Not available", with the reason, and never an error, in each way a
// machine can have no RDMA port: a library without kernel support
// (ibv_get_device_list fails with ENOSYS), an empty device list, and
// devices whose ports are all down.
TEST(OpenVerbsDevice, NoKernelSupportIsNotAvailable) {
  FakeDevices fake;
  fake.api.getDeviceList = [](int* count) -> ibv_device** {
    *count = 0;
    errno = ENOSYS;
    return nullptr;
  };
  VerbsOpening opening;
  EXPECT_NO_THROW(opening = openVerbsDevice(fake.api, {}));
  EXPECT_EQ(opening.device, nullptr);
  EXPECT_THAT(opening.why, HasSubstr("ibv_get_device_list failed"));
  EXPECT_THAT(opening.why, HasSubstr("no kernel RDMA support"));
}

TEST(OpenVerbsDevice, AnEmptyDeviceListIsNotAvailable) {
  FakeDevices fake;
  fake.api.getDeviceList = [](int* count) {
    *count = 0;
    return FakeDevices::devices + 2;  // the list's terminating null
  };
  VerbsOpening opening;
  EXPECT_NO_THROW(opening = openVerbsDevice(fake.api, {}));
  EXPECT_EQ(opening.device, nullptr);
  EXPECT_THAT(opening.why, HasSubstr("lists no RDMA device"));
}

TEST(OpenVerbsDevice, NoActivePortIsNotAvailable) {
  FakeDevices fake;
  fake.api.queryPort = [](ibv_context*, std::uint8_t, ibv_port_attr* attributes) {
    attributes->state = IBV_PORT_DOWN;
    attributes->link_layer = IBV_LINK_LAYER_INFINIBAND;
    return 0;
  };
  VerbsOpening opening;
  EXPECT_NO_THROW(opening = openVerbsDevice(fake.api, {}));
  EXPECT_EQ(opening.device, nullptr);
  EXPECT_THAT(opening.why, HasSubstr("not ACTIVE: mlx5_0:1, mlx5_0:2, mlx5_1:1"));
  EXPECT_EQ(FakeDevices::opened, FakeDevices::closed) << "every device listed is closed again";
}

// This machine, through the real libibverbs: no RDMA device, so the ib
// device is "not available" with the library's reason, and no error.
TEST(VerbsOnThisMachine, NoDeviceIsAReasonNotAnError) {
  std::string why;
  const VerbsApi* api = loadVerbsApi(&why);
  ASSERT_NE(api, nullptr) << "libibverbs is a build dependency, so its library is here: " << why;
  VerbsOpening opening;
  EXPECT_NO_THROW(opening = openVerbsDevice(*api, {}));
  if (opening.device) {
    EXPECT_THAT(opening.device->name(), HasSubstr("verbs port "));
  } else {
    EXPECT_FALSE(opening.why.empty());
    std::printf("ib on this machine: %s\n", opening.why.c_str());
  }
}

// A missing library: not available, with its name in the reason. The
// library is loaded once per process, so this runs in a fresh one: the test
// program again, with only the case below and the variable set.
TEST(VerbsOnThisMachine, AMissingLibraryIsAReasonNotAnError) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::setenv("HORA_IBVERBS_LIB", "libibverbs-that-does-not-exist.so.1", 1);
    ::execl("/proc/self/exe", "verbs_queue_pair_tests", "--gtest_filter=VerbsMissingLibrary.*",
            "--gtest_also_run_disabled_tests", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the fresh process's check failed";
}

// Run only by the case above, in a fresh process.
TEST(VerbsMissingLibrary, DISABLED_LoadSaysWhichLibraryIsMissing) {
  std::string why;
  EXPECT_EQ(loadVerbsApi(&why), nullptr);
  EXPECT_THAT(why, HasSubstr("libibverbs-that-does-not-exist.so.1"));
}

}  // namespace
}  // namespace hora::transport::rdma::verbs
