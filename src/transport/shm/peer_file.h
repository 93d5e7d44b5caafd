// Opening a file that another process of this host holds open, through
// /proc/<pid>/fd/<fd>: how a rank reaches a peer's anonymous memfd (a FIFO
// segment, an ncclMemAlloc allocation), which has no name anywhere else.
//
// A pid and a descriptor number mean something only in the owner's pid
// namespace. A rank in another namespace (another container on the same
// host) resolves the same pid to whatever process has it there, possibly an
// unrelated one with a different file open under that number, and would map
// the wrong memory without noticing. So the owner also publishes the file's
// identity (device and inode), and the opener checks it: only the file the
// owner meant has both.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace hora::transport {

struct FileIdentity {
  std::uint64_t device = 0;  // st_dev
  std::uint64_t inode = 0;   // st_ino
  bool operator==(const FileIdentity&) const = default;
};

// The identity of a descriptor open in this process; throws System if it
// cannot be read.
FileIdentity identityOf(int fd);

// Opens descriptor `fd` of process `pid` read-write (close-on-exec) and
// checks it is the file `expected` names. Returns a new descriptor, which the
// caller closes (a mapping of the file outlives it). Throws System, naming
// the /proc path, when the file cannot be opened or is another file; `what`
// names the file in the message ("the peer's memory"), and `hint` ends it
// (what to do instead, as "; set ..."; may be empty).
int openPeerFile(pid_t pid, int fd, const FileIdentity& expected, const char* what,
                 const char* hint);

}  // namespace hora::transport
