// Which CPUs a rank's own threads keep to. NCCL keeps its threads on the
// NUMA node of the rank's GPU: the data they touch (staging buffers, the
// FIFOs a device reads) then lives in that node's memory, and a thread on
// the far socket would cross the interconnect on every access. hora does
// the same for its threads when it knows the rank's device (its GPU, or
// the NIC that carries its traffic to other hosts).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hora::topology {

// NCCL's and the kernel's mask notation, "0000ffff,ffffffff": 32-bit hex
// words, most significant first. Throws InvalidArgument on anything else.
std::vector<int> parseCpuMask(std::string_view mask);

// "0-3,8"; "" for none.
std::string formatCpuList(const std::vector<int>& cpus);

// The CPUs this thread may run on now (sched_getaffinity).
std::vector<int> currentCpus();

// What the threads should keep to: the device's CPUs within the current
// mask, when that is narrower than the current mask. nullopt leaves the
// mask alone: no device CPUs known, the current mask already within them
// (the user's narrower choice stands), or no CPU in common (never widened,
// never moved out of what the user chose).
std::optional<std::vector<int>> affinityNear(const std::vector<int>& current, const std::vector<int>& deviceCpus);

}  // namespace hora::topology
