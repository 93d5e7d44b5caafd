// PCI bus ids in one spelling. hwloc, NVML, sysfs and NCCL's topology files
// spell the same device differently ("0000:07:00.0", "00000000:07:00.0",
// "07:00.0", upper or lower case); topology compares them only after
// canonicalBusId() turned them into "dddd:bb:dd.f", lower case.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hora::topology {

struct PciAddress {
  unsigned domain = 0;
  unsigned bus = 0;
  unsigned device = 0;
  unsigned function = 0;
};

// Parses "[domain:]bus:device.function" (hex fields; a missing function
// means 0). Returns nullopt for anything else.
std::optional<PciAddress> parseBusId(std::string_view text);

// "0000:07:00.0": four hex digits of domain at least (more when the domain
// needs them), lower case.
std::string formatBusId(const PciAddress& address);

// parseBusId + formatBusId; nullopt when the text is no bus id.
std::optional<std::string> canonicalBusId(std::string_view text);

}  // namespace hora::topology
