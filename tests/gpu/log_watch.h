// What this process's hora log gained since a point in a test: for tests
// that check a decision the library states in its log (HORA_DEBUG=INFO,
// written into the file HORA_DEBUG_FILE names, which every process of a
// test may append to).
#pragma once

#include <cstdlib>
#include <fstream>
#include <string>

// The gpu suite's *_host_fifos runs: NCCL_P2P_DISABLE=1, which puts every
// rank's FIFOs in pinned host memory, and the log in a file to check that.
inline bool p2pDisabledAndLogged() {
  const char* disabled = std::getenv("NCCL_P2P_DISABLE");
  return disabled != nullptr && std::string(disabled) == "1" && std::getenv("HORA_DEBUG_FILE") != nullptr;
}

// What the executor of each rank logs when its FIFOs went to host memory
// because P2P is disabled.
inline constexpr const char* kFifosInHostMemoryLine = "receive FIFOs in pinned host memory: P2P is disabled";

class LogWatch {
 public:
  LogWatch() {
    if (const char* path = std::getenv("HORA_DEBUG_FILE")) path_ = path;
    start_ = sizeNow();
  }
  // The log goes into a file this can read.
  bool active() const { return !path_.empty(); }
  // Lines written since this was made that contain `text`.
  int linesWith(const std::string& text) const {
    std::ifstream in(path_, std::ios::binary);
    in.seekg(start_);
    int found = 0;
    for (std::string line; std::getline(in, line);)
      if (line.find(text) != std::string::npos) ++found;
    return found;
  }

 private:
  std::streamoff sizeNow() const {
    std::ifstream in(path_, std::ios::binary | std::ios::ate);
    return in ? static_cast<std::streamoff>(in.tellg()) : 0;
  }
  std::string path_;
  std::streamoff start_ = 0;
};
