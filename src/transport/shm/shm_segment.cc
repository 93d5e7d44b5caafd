#include "transport/shm/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

#include "base/error.h"

namespace hora::transport {

namespace {
void* mapShared(int fd, std::size_t bytes, const char* what) {
  void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) fail(ErrorKind::System, "mmap of ", what, " (", bytes, " bytes) failed: ", errnoText(errno));
  return data;
}
}  // namespace

ShmSegment ShmSegment::create(std::size_t bytes) {
  ShmSegment segment;
  segment.fd_ = ::memfd_create("hora-shm", MFD_CLOEXEC);
  if (segment.fd_ < 0) fail(ErrorKind::System, "memfd_create failed: ", errnoText(errno));
  if (::ftruncate(segment.fd_, static_cast<off_t>(bytes)) != 0)
    fail(ErrorKind::System, "ftruncate of a shared-memory segment to ", bytes, " bytes failed: ",
         errnoText(errno));
  segment.data_ = mapShared(segment.fd_, bytes, "a new shared-memory segment");
  segment.size_ = bytes;
  return segment;
}

ShmSegment ShmSegment::openPeer(pid_t pid, int fd, std::size_t bytes) {
  std::string path = strCat("/proc/", pid, "/fd/", fd);
  int local = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (local < 0)
    fail(ErrorKind::System, "cannot open the peer's shared memory ", path, ": ", errnoText(errno),
         " (processes in different pid namespaces or users cannot share memory; set "
         "NCCL_SHM_DISABLE=1 to use TCP)");
  ShmSegment segment;
  segment.fd_ = local;
  segment.data_ = mapShared(local, bytes, path.c_str());
  segment.size_ = bytes;
  segment.closeDescriptor();
  return segment;
}

ShmSegment::~ShmSegment() {
  if (data_ != nullptr) ::munmap(data_, size_);
  closeDescriptor();
}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      fd_(std::exchange(other.fd_, -1)) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, size_);
    closeDescriptor();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void ShmSegment::closeDescriptor() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace hora::transport
