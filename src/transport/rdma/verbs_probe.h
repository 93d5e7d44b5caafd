// Whether this machine has RDMA devices that libibverbs can open, asked at
// run time: libibverbs is loaded with dlopen (HORA_IBVERBS_LIB overrides
// "libibverbs.so.1") and its versioned symbols, so one libnccl.so.2 runs
// on machines with and without rdma-core. No library, no device, or a
// device list that fails (ENOSYS without kernel support) all mean "not
// available": never an error.
//
// hora's verbs backend (verbs/verbs_queue_pair.h) is not installed as a
// device yet; the probe says what a user's machine has, once, at INFO.
#pragma once

#include <string>
#include <vector>

namespace hora::transport::rdma {

struct VerbsProbe {
  bool libraryLoaded = false;
  std::vector<std::string> devices;  // names, as ibv_get_device_name gives them
  std::string why;                   // when there is nothing usable
};

// Runs the probe (each call: loads the library, lists, unloads).
VerbsProbe probeVerbs();

// The probe's result, said once per process at INFO: "no RDMA device
// (...): ib is not available; tcp carries those pairs", or the devices
// found and that the verbs backend is not in use yet.
const VerbsProbe& verbsAvailability();

}  // namespace hora::transport::rdma
