#include "transport/shm/shared_memory.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "base/error.h"
#include "transport/shm/peer_file.h"
#include "transport/shm/shm_segment.h"

namespace hora::transport {
namespace {

struct Allocation {
  std::size_t bytes;  // mapped, a multiple of the page size
  int fd;
  std::uint64_t device;
  std::uint64_t inode;
};

// Every live allocation of this process, by first byte.
struct Registry {
  std::mutex mutex;
  std::map<std::uintptr_t, Allocation> allocations;
};

Registry& registry() {
  static Registry* instance = new Registry();  // never destroyed: frees may run at exit
  return *instance;
}

std::size_t roundToPages(std::size_t bytes) {
  const std::size_t page = ShmSegment::pageBytes();
  return (bytes + page - 1) / page * page;
}

// What this host can still give a new allocation: MemAvailable plus
// SwapFree from /proc/meminfo, in bytes (none where it cannot be read).
std::optional<std::uint64_t> availableMemoryBytes() {
  // Line by line: not every line of /proc/meminfo has a unit.
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  std::uint64_t total = 0;
  int found = 0;
  while (found < 2 && std::getline(meminfo, line)) {
    unsigned long long kib = 0;
    if (std::sscanf(line.c_str(), "MemAvailable: %llu kB", &kib) == 1 ||
        std::sscanf(line.c_str(), "SwapFree: %llu kB", &kib) == 1) {
      total += kib * 1024;
      ++found;
    }
  }
  if (found < 2) return std::nullopt;
  return total;
}

}  // namespace

void* allocateShared(std::size_t bytes) {
  HORA_CHECK_ARG(bytes > 0, "cannot allocate 0 bytes of shared memory");
  const std::size_t mapped = roundToPages(bytes);
  HORA_CHECK_ARG(mapped >= bytes, bytes, " bytes of shared memory overflow the address space");
  // A memfd takes its pages when they are first written, so an allocation
  // larger than the host can give would succeed here and then kill the
  // process at a later store (SIGBUS, or the OOM killer). Refused now, as
  // NCCL's device allocation is refused when the GPU lacks the memory.
  if (const auto available = availableMemoryBytes(); available && mapped > *available)
    fail(ErrorKind::System, "allocating ", bytes, " bytes of shared memory: this host has ", *available,
         " bytes available (MemAvailable and SwapFree in /proc/meminfo)");
  const int fd = ::memfd_create("hora-mem", MFD_CLOEXEC);
  if (fd < 0)
    fail(ErrorKind::System, "memfd_create for ", bytes, " bytes failed: ", errnoText(errno));
  struct stat status {};
  void* data = MAP_FAILED;
  if (::ftruncate(fd, static_cast<off_t>(mapped)) == 0 && ::fstat(fd, &status) == 0)
    data = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    const int error = errno;
    ::close(fd);
    fail(ErrorKind::System, "allocating ", bytes,
         " bytes of shared memory failed: ", errnoText(error));
  }
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  reg.allocations[reinterpret_cast<std::uintptr_t>(data)] = {
      mapped, fd, static_cast<std::uint64_t>(status.st_dev),
      static_cast<std::uint64_t>(status.st_ino)};
  return data;
}

void freeShared(void* ptr) {
  Allocation allocation{};
  {
    Registry& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mutex);
    auto found = reg.allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
    HORA_CHECK_ARG(found != reg.allocations.end(), "pointer ", ptr,
                   " was not returned by ncclMemAlloc, or was freed already");
    allocation = found->second;
    reg.allocations.erase(found);
  }
  ::munmap(ptr, allocation.bytes);
  ::close(allocation.fd);
}

std::optional<SharedRange> findShared(const void* ptr, std::size_t bytes) {
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  auto after = reg.allocations.upper_bound(address);
  if (after == reg.allocations.begin()) return std::nullopt;
  const auto& [base, allocation] = *std::prev(after);
  const std::size_t offset = address - base;
  if (offset >= allocation.bytes || bytes > allocation.bytes - offset) return std::nullopt;
  return SharedRange{::getpid(), allocation.fd, allocation.device, allocation.inode, offset, bytes};
}

PeerMapping PeerMapping::open(const SharedRange& range) {
  const char* what = "the peer's memory";
  const int fd = openPeerFile(range.pid, range.fd, {range.device, range.inode}, what, "");
  const std::size_t page = ShmSegment::pageBytes();
  const std::size_t start = range.fileOffset / page * page;
  PeerMapping mapping;
  mapping.lead_ = range.fileOffset - start;
  mapping.mappedBytes_ = roundToPages(mapping.lead_ + std::max<std::size_t>(range.bytes, 1));
  void* base = ::mmap(nullptr, mapping.mappedBytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                      static_cast<off_t>(start));
  const int error = errno;
  ::close(fd);  // the mapping keeps the memory
  if (base == MAP_FAILED)
    fail(ErrorKind::System, "mapping ", mapping.mappedBytes_, " bytes of ", what, " (/proc/",
         range.pid, "/fd/", range.fd, ") failed: ", errnoText(error));
  mapping.base_ = base;
  return mapping;
}

void PeerMapping::unmap() {
  if (base_ != nullptr) ::munmap(base_, mappedBytes_);
  base_ = nullptr;
  mappedBytes_ = lead_ = 0;
}

PeerMapping::~PeerMapping() { unmap(); }

PeerMapping::PeerMapping(PeerMapping&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      mappedBytes_(std::exchange(other.mappedBytes_, 0)),
      lead_(std::exchange(other.lead_, 0)) {}

PeerMapping& PeerMapping::operator=(PeerMapping&& other) noexcept {
  if (this != &other) {
    unmap();
    base_ = std::exchange(other.base_, nullptr);
    mappedBytes_ = std::exchange(other.mappedBytes_, 0);
    lead_ = std::exchange(other.lead_, 0);
  }
  return *this;
}

}  // namespace hora::transport
