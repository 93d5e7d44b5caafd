// PeerMemory over host shared memory: allocations are memfds
// (shared_memory.h), a handle is the SharedRange that finds and checks one.
#include <cstring>
#include <type_traits>

#include "transport/peer_memory.h"
#include "transport/shm/shared_memory.h"

namespace hora::transport {
namespace {

// SharedRange on the wire: fixed-size fields.
struct RangeRecord {
  std::int32_t pid;
  std::int32_t fd;
  std::uint64_t device;
  std::uint64_t inode;
  std::uint64_t fileOffset;
  std::uint64_t bytes;
};
static_assert(sizeof(RangeRecord) <= sizeof(PeerMemoryHandle));
static_assert(std::is_trivially_copyable_v<RangeRecord>);

class HostMapping final : public PeerMemoryMapping {
 public:
  explicit HostMapping(PeerMapping mapping) : mapping_(std::move(mapping)) {}
  void* data() const override { return mapping_.data(); }

 private:
  PeerMapping mapping_;
};

class HostPeerMemory final : public PeerMemory {
 public:
  const char* name() const override { return "host shared memory"; }
  void* allocate(std::size_t bytes) override { return allocateShared(bytes); }
  void free(void* ptr) override { freeShared(ptr); }

  std::optional<PeerMemoryHandle> exportRange(const void* ptr, std::size_t bytes) const override {
    const auto range = findShared(ptr, bytes);
    if (!range) return std::nullopt;
    const RangeRecord record{range->pid,   range->fd,         range->device,
                             range->inode, range->fileOffset, range->bytes};
    PeerMemoryHandle handle{};
    std::memcpy(handle.bytes, &record, sizeof(record));
    return handle;
  }

  std::unique_ptr<PeerMemoryMapping> import(const PeerMemoryHandle& handle) const override {
    RangeRecord record;
    std::memcpy(&record, handle.bytes, sizeof(record));
    return std::make_unique<HostMapping>(PeerMapping::open(
        {record.pid, record.fd, record.device, record.inode, record.fileOffset, record.bytes}));
  }
};

}  // namespace

PeerMemory& hostPeerMemory() {
  static HostPeerMemory memory;
  return memory;
}

}  // namespace hora::transport
