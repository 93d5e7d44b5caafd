#include "transport/shm/peer_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/error.h"

namespace hora::transport {
namespace {

bool identify(int fd, FileIdentity& identity) {
  struct stat status {};
  if (::fstat(fd, &status) != 0) return false;
  identity = {static_cast<std::uint64_t>(status.st_dev), static_cast<std::uint64_t>(status.st_ino)};
  return true;
}

}  // namespace

FileIdentity identityOf(int fd) {
  FileIdentity identity;
  if (!identify(fd, identity))
    fail(ErrorKind::System, "fstat of descriptor ", fd, " failed: ", errnoText(errno));
  return identity;
}

int openPeerFile(pid_t pid, int fd, const FileIdentity& expected, const char* what,
                 const char* hint) {
  const std::string path = strCat("/proc/", pid, "/fd/", fd);
  const int local = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  // The descriptor (or the whole process) is gone: the peer closed its end
  // before this rank opened it, because it stopped or exited. That is the
  // peer's failure, not a setup problem here.
  if (local < 0 && errno == ENOENT)
    fail(ErrorKind::Remote, "the peer closed ", what, " before this rank opened it (", path,
         "): the peer process stopped the communicator or exited");
  if (local < 0)
    fail(ErrorKind::System, "cannot open ", what, " ", path, ": ", errnoText(errno),
         " (processes in different pid namespaces or users cannot share memory)", hint);
  FileIdentity found;
  if (!identify(local, found) || found != expected) {
    ::close(local);
    fail(ErrorKind::System, path, " is not ", what, " (is the peer in another pid namespace?)",
         hint);
  }
  return local;
}

}  // namespace hora::transport
