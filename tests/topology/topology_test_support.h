// Helpers shared by the topology tests: fixture paths, temporary files,
// environment variables restored on scope exit, rank placements.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "support/scoped_env.h"
#include "topology/topology.h"

namespace hora::topology::testing {

// HORA_TOPOLOGY_FIXTURES is the tests/fixtures folder, set by meson.build.
inline std::string fixture(const std::string& relative) { return std::string(HORA_TOPOLOGY_FIXTURES) + "/" + relative; }

inline std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A file with the given content, removed when the object goes.
class TempFile {
 public:
  explicit TempFile(const std::string& content, const std::string& suffix = ".xml") {
    std::string pattern = (std::filesystem::temp_directory_path() / "hora-topology-XXXXXX").string() + suffix;
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    int fd = mkstemps(name.data(), static_cast<int>(suffix.size()));
    if (fd < 0) throw std::runtime_error("mkstemps failed");
    close(fd);
    path_ = name.data();
    std::ofstream(path_) << content;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

using test_support::ScopedEnv;

// Rank r on host hostOfRank[r] drives GPU gpuOfRank[r] of the system (-1: none).
inline std::vector<RankPlacement> place(const System& system, const std::vector<int>& gpuOfRank,
                                        const std::vector<std::uint64_t>& hostOfRank = {}) {
  auto gpus = system.devicesOfKind(DeviceKind::Gpu);
  std::vector<RankPlacement> ranks;
  for (std::size_t r = 0; r < gpuOfRank.size(); ++r) {
    std::string bus = gpuOfRank[r] < 0 ? "" : system.devices()[gpus.at(static_cast<std::size_t>(gpuOfRank[r]))].busId;
    std::uint64_t host = hostOfRank.empty() ? 1 : hostOfRank[r];
    ranks.push_back(localPlacement(static_cast<int>(r), host, bus, system));
  }
  return ranks;
}

// Rank r drives GPU r.
inline std::vector<RankPlacement> rankPerGpu(const System& system) {
  std::vector<int> gpus;
  for (std::size_t g = 0; g < system.devicesOfKind(DeviceKind::Gpu).size(); ++g) gpus.push_back(static_cast<int>(g));
  return place(system, gpus);
}

inline int gpuIndex(const System& system, int gpuNumber) {
  return system.devicesOfKind(DeviceKind::Gpu).at(static_cast<std::size_t>(gpuNumber));
}

// Path class between GPU i and GPU j (numbers as in GPU0, GPU1...).
inline PathClass gpuPath(const System& system, int i, int j) {
  return system.pathBetween(gpuIndex(system, i), gpuIndex(system, j));
}

inline int deviceNamed(const System& system, const std::string& name) {
  for (std::size_t i = 0; i < system.devices().size(); ++i)
    if (system.devices()[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace hora::topology::testing
