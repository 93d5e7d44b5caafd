// The binary interface of one nccl.h, as a table of named values: enum
// values, struct sizes and field offsets, initializer contents, macro values
// and function signatures. The same recording code is compiled twice, once
// against NVIDIA's nccl.h and once against hora's, and a test compares the
// two tables: any difference is an ABI break for programs built with
// NVIDIA's header and run on hora's library.
#pragma once

#include <string>
#include <vector>

namespace hora_api_test {

struct AbiEntry {
  std::string name;   // e.g. "offsetof(ncclConfig_t, netName)"
  std::string value;  // e.g. "24"
};

// Recorded in a translation unit that includes NVIDIA's nccl.h.
std::vector<AbiEntry> nvidiaAbiTable();
// Recorded in a translation unit that includes hora's nccl.h.
std::vector<AbiEntry> horaAbiTable();

}  // namespace hora_api_test
