// hora::Error, the one exception type hora throws, and its kinds.
//
// A header of its own so that code which only reports failures (the
// reduction kernels, the data-parallel helpers, the internal error
// utilities) does not pull in the whole Communicator API.
#pragma once

#include <stdexcept>
#include <string>

#include "hora/export.h"

namespace hora {

// Error kinds, mirroring ncclResult_t at the C boundary.
enum class ErrorKind : int {
  Cuda = 1,             // a CUDA call failed on this rank
  System = 2,           // a syscall or library failed on this rank
  Internal = 3,         // an invariant broke inside hora (a bug)
  InvalidArgument = 4,  // a bad argument from the caller
  InvalidUsage = 5,     // a call at the wrong time, or an unsupported feature
  Remote = 6,           // a peer failed, vanished or timed out
};

// Every failure inside hora is a hora::Error. what() says which rank, which
// peer, what failed and why.
class HORA_API Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message, int failedRank = -1)
      : std::runtime_error(message), kind_(kind), failedRank_(failedRank) {}
  ErrorKind kind() const noexcept { return kind_; }
  // The rank whose failure (death, abort, silence, misuse it found) stopped
  // the communicator first, where hora knows it; -1 otherwise. A survivor
  // can shrink the communicator past it (Communicator::shrink).
  int failedRank() const noexcept { return failedRank_; }

 private:
  ErrorKind kind_;
  int failedRank_;
};

}  // namespace hora
