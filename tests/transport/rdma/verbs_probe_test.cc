// The verbs probe: libibverbs loaded at run time, its devices listed, and
// "nothing usable" never an error. On a machine without an RDMA NIC (as
// here) it reports none; a missing library is no error either.
#include <gtest/gtest.h>

#include <cstdlib>

#include "transport/rdma/verbs_probe.h"

namespace hora::transport::rdma {
namespace {

TEST(VerbsProbe, AMissingLibraryMeansNotAvailableNotAnError) {
  ::setenv("HORA_IBVERBS_LIB", "libibverbs-that-does-not-exist.so.1", 1);
  VerbsProbe probe;
  EXPECT_NO_THROW(probe = probeVerbs());
  ::unsetenv("HORA_IBVERBS_LIB");
  EXPECT_FALSE(probe.libraryLoaded);
  EXPECT_TRUE(probe.devices.empty());
  EXPECT_NE(probe.why.find("libibverbs-that-does-not-exist.so.1"), std::string::npos) << probe.why;
}

TEST(VerbsProbe, TheInstalledLibraryLoadsAndSaysWhatItHas) {
  // libibverbs is a build dependency, so its runtime library is here.
  const VerbsProbe probe = probeVerbs();
  EXPECT_TRUE(probe.libraryLoaded) << probe.why;
  // No device must come with a reason; devices, with names.
  if (probe.devices.empty()) {
    EXPECT_FALSE(probe.why.empty());
  } else {
    for (const auto& name : probe.devices) EXPECT_FALSE(name.empty());
  }
  std::printf("verbs probe: %zu device(s)%s%s\n", probe.devices.size(), probe.why.empty() ? "" : ": ",
              probe.why.c_str());
}

}  // namespace
}  // namespace hora::transport::rdma
