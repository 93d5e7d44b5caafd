#include "transport/shm/shm_segment.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

#include "base/error.h"

namespace hora::transport {

std::size_t ShmSegment::pageBytes() {
  static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

void ShmSegment::map(std::size_t bytes, std::size_t ringOffset, const char* what) {
  const std::size_t page = pageBytes();
  HORA_ENFORCE(bytes % page == 0 && ringOffset % page == 0 && ringOffset < bytes,
               "shared-memory segment of ", bytes, " bytes with a ring at ", ringOffset,
               " is not page-aligned");
  const std::size_t ringBytes = bytes - ringOffset;
  const std::size_t total = bytes + ringBytes;
  // Reserve the whole range first, so that both mappings land back to back
  // and nothing else can be placed in between.
  void* base = ::mmap(nullptr, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED)
    fail(ErrorKind::System, "reserving ", total, " bytes of address space for ", what,
         " failed: ", errnoText(errno));
  char* at = static_cast<char*>(base);
  void* first = ::mmap(at, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd_, 0);
  void* second = first == MAP_FAILED
                     ? MAP_FAILED
                     : ::mmap(at + bytes, ringBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                              fd_, static_cast<off_t>(ringOffset));
  if (second == MAP_FAILED) {
    int error = errno;
    ::munmap(base, total);
    fail(ErrorKind::System, "mmap of ", what, " (", bytes, " bytes) failed: ", errnoText(error));
  }
  data_ = base;
  size_ = bytes;
  mappedBytes_ = total;
}

ShmSegment ShmSegment::create(std::size_t bytes, std::size_t ringOffset) {
  ShmSegment segment;
  segment.fd_ = ::memfd_create("hora-shm", MFD_CLOEXEC);
  if (segment.fd_ < 0) fail(ErrorKind::System, "memfd_create failed: ", errnoText(errno));
  if (::ftruncate(segment.fd_, static_cast<off_t>(bytes)) != 0)
    fail(ErrorKind::System, "ftruncate of a shared-memory segment to ", bytes, " bytes failed: ",
         errnoText(errno));
  segment.identity_ = identityOf(segment.fd_);
  segment.map(bytes, ringOffset, "a new shared-memory segment");
  return segment;
}

ShmSegment ShmSegment::openPeer(pid_t pid, int fd, const FileIdentity& identity,
                                std::size_t bytes, std::size_t ringOffset) {
  ShmSegment segment;
  segment.fd_ = openPeerFile(pid, fd, identity, "the peer's shared memory",
                             "; set NCCL_SHM_DISABLE=1 to use TCP");
  const std::string path = strCat("/proc/", pid, "/fd/", fd);
  segment.map(bytes, ringOffset, path.c_str());
  segment.closeDescriptor();
  return segment;
}

void ShmSegment::unmap() {
  if (data_ != nullptr) ::munmap(data_, mappedBytes_);
  data_ = nullptr;
  size_ = mappedBytes_ = 0;
}

ShmSegment::~ShmSegment() {
  unmap();
  closeDescriptor();
}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mappedBytes_(std::exchange(other.mappedBytes_, 0)),
      fd_(std::exchange(other.fd_, -1)),
      identity_(std::exchange(other.identity_, {})) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    unmap();
    closeDescriptor();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mappedBytes_ = std::exchange(other.mappedBytes_, 0);
    fd_ = std::exchange(other.fd_, -1);
    identity_ = std::exchange(other.identity_, {});
  }
  return *this;
}

void ShmSegment::closeDescriptor() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace hora::transport
