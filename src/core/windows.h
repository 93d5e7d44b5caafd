// Windows: buffers that all ranks of a communicator registered together
// (ncclCommWindowRegister), each rank's mapped into every other rank's
// address space where the ranks share a host. A collective whose buffers
// lie in windows on every rank can then read its peers' inputs and write
// their outputs directly (core/zero_copy.cc).
//
// Windows are numbered in registration order, which is the same on every
// rank because registration is collective, so a rank can name a buffer to
// its peers as (window, offset).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "transport/peer_memory.h"

namespace hora::core {

struct WindowLocation {
  int window;
  std::size_t offset;
};

class WindowTable {
 public:
  struct Window {
    char* local = nullptr;  // this rank's buffer
    std::size_t bytes = 0;
    // Usable: every rank's buffer is mapped here, at rankBases[rank], and
    // is rankBytes[rank] long (ranks may register different sizes).
    bool usable = false;
    std::vector<char*> rankBases;
    std::vector<std::size_t> rankBytes;
    std::vector<std::unique_ptr<transport::PeerMemoryMapping>> mappings;  // keep the peers' memory mapped
  };

  // Adds `window` under the next number, which it returns.
  int add(Window window);
  // Throws InvalidArgument naming `id` if it is not a live window.
  void remove(int id);
  // Whether a usable window was ever registered. The same answer on every
  // rank, since registration is collective, while deregistration is local
  // (as in NCCL): a rank that let go of its windows first still takes the
  // same path as its peers, and offers no window.
  bool everUsable() const { return everUsable_; }
  // The usable window holding all of [ptr, ptr + bytes), if any.
  std::optional<WindowLocation> find(const void* ptr, std::size_t bytes) const;
  // Rank `rank`'s byte at `offset` of usable window `id`, mapped here; null
  // if `id` is not a live usable window or the range [offset, offset +
  // bytes) is outside it.
  char* address(int id, int rank, std::size_t offset, std::size_t bytes) const;

 private:
  std::map<int, Window> windows_;
  int nextId_ = 0;
  bool everUsable_ = false;
};

}  // namespace hora::core
