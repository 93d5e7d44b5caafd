// Reads a machine through hwloc: this host, or an hwloc XML export.
#pragma once

#include <string>

#include "topology/system_builder.h"

namespace hora::topology {

// Describes this host (xmlPath empty) or the machine in an hwloc XML file:
// CPUs, the PCIe tree down to GPUs, NICs and NVSwitches, and NVLinks from an
// "NVLinkBandwidth" distance matrix when the export has one (hwloc's NVML
// backend writes it). Throws hora::Error when hwloc cannot load it.
void importHwloc(const std::string& xmlPath, SystemBuilder& builder);

}  // namespace hora::topology
