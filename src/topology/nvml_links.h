// NVLink as the NVIDIA driver reports it, through NVML loaded at run time
// (libnvidia-ml.so.1, which comes with the driver). hora does not link
// against NVML: on hosts without a driver this finds nothing and says why.
#pragma once

#include <string>

#include "topology/system_builder.h"

namespace hora::topology {

// Adds the active NVLinks of the builder's GPUs that have none yet: to other
// GPUs, to NVSwitches (one fabric), or to the CPU (POWER). Returns "" when
// NVML answered, else the reason it could not be used (logged by the caller).
std::string addNvLinksFromNvml(SystemBuilder& builder);

}  // namespace hora::topology
