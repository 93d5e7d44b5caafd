#include "core/self_messages.h"

#include <cstddef>
#include <vector>

#include "base/error.h"

namespace hora::core {

void checkSelfMessagesPair(std::span<const Op> ops, int rank) {
  std::vector<const Op*> sends, recvs;  // in issue order
  for (const Op& op : ops)
    if (op.isPointToPoint() && op.peer == rank) (op.kind == OpKind::Send ? sends : recvs).push_back(&op);
  if (sends.size() != recvs.size())
    fail(ErrorKind::InvalidUsage, "rank ", rank, ": ", sends.size(), " send(s) to itself and ", recvs.size(),
         " receive(s) from itself in one group; each send to itself needs a receive from itself");
  for (std::size_t i = 0; i < sends.size(); ++i) {
    if (sends[i]->bytes != recvs[i]->bytes)
      fail(ErrorKind::InvalidUsage, "rank ", rank, ": send to itself number ", i + 1, " of ", sends[i]->bytes,
           " bytes meets a receive of ", recvs[i]->bytes, " bytes (sends and receives to and from itself pair in "
           "issue order)");
    if (sends[i]->tag != recvs[i]->tag)
      fail(ErrorKind::InvalidUsage, "rank ", rank, ": send to itself number ", i + 1, " with tag ", sends[i]->tag,
           " meets a receive with tag ", recvs[i]->tag, " (sends and receives to and from itself pair in issue "
           "order, not by tag)");
  }
}

}  // namespace hora::core
