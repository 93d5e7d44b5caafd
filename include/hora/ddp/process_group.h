// The collectives the data-parallel layer needs, behind a small interface:
// hora::Communicator provides them (wrapCommunicator), and tests may provide
// an in-process fake. Communication hooks receive a ProcessGroup to issue
// their own collectives.
#pragma once

#include <cstddef>
#include <memory>

#include "hora/communicator.h"
#include "hora/types.h"

namespace hora::ddp {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Asynchronous, issued in the same order on every rank (as on a
  // hora::Communicator); the buffers must stay valid until the Work finished.
  virtual WorkPtr allReduce(void* buffer, std::size_t count, DataType type, RedOp op) = 0;
  virtual WorkPtr broadcast(void* buffer, std::size_t count, DataType type, int root) = 0;
  // recv holds size() * count elements, rank r's contribution at r * count.
  virtual WorkPtr allGather(const void* send, void* recv, std::size_t count, DataType type) = 0;
  // This rank will not issue a collective its peers expect (a step broke
  // off here): stop the group, so that their calls fail now, naming this
  // rank, instead of pairing with this rank's later calls. Afterwards the
  // group can only be shrunk or dropped. The default does nothing: peers
  // then wait for the missing call until their deadline.
  virtual void revoke() {}
};

// A ProcessGroup over a communicator the caller keeps alive (not owned).
std::shared_ptr<ProcessGroup> wrapCommunicator(Communicator& communicator);

}  // namespace hora::ddp
