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

void ShmSegment::map(std::size_t bytes, const char* what) {
  HORA_ENFORCE(bytes > 0 && bytes % pageBytes() == 0, "shared-memory segment of ", bytes,
               " bytes is not a whole number of pages");
  void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (data == MAP_FAILED)
    fail(ErrorKind::System, "mmap of ", what, " (", bytes, " bytes) failed: ", errnoText(errno));
  data_ = data;
  size_ = bytes;
}

ShmSegment ShmSegment::create(std::size_t bytes) {
  ShmSegment segment;
  segment.fd_ = ::memfd_create("hora-shm", MFD_CLOEXEC);
  if (segment.fd_ < 0) fail(ErrorKind::System, "memfd_create failed: ", errnoText(errno));
  if (::ftruncate(segment.fd_, static_cast<off_t>(bytes)) != 0)
    fail(ErrorKind::System, "ftruncate of a shared-memory segment to ", bytes, " bytes failed: ",
         errnoText(errno));
  segment.identity_ = identityOf(segment.fd_);
  segment.map(bytes, "a new shared-memory segment");
  return segment;
}

ShmSegment ShmSegment::openPeer(pid_t pid, int fd, const FileIdentity& identity, std::size_t bytes,
                                const char* hint) {
  ShmSegment segment;
  segment.fd_ = openPeerFile(pid, fd, identity, "the peer's shared memory", hint);
  const std::string path = strCat("/proc/", pid, "/fd/", fd);
  segment.map(bytes, path.c_str());
  segment.closeDescriptor();
  return segment;
}

void ShmSegment::unmap() {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

ShmSegment::~ShmSegment() {
  unmap();
  closeDescriptor();
}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      fd_(std::exchange(other.fd_, -1)),
      identity_(std::exchange(other.identity_, {})) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    unmap();
    closeDescriptor();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
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
