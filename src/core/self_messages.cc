#include "core/self_messages.h"

#include <cstddef>
#include <vector>

#include "base/error.h"

namespace hora::core {

void checkSelfMessagesPair(std::span<const Op> ops, int rank) {
  std::vector<std::size_t> sends, recvs;  // bytes, in issue order
  for (const Op& op : ops)
    if (op.isPointToPoint() && op.peer == rank) (op.kind == OpKind::Send ? sends : recvs).push_back(op.bytes);
  if (sends.size() != recvs.size())
    fail(ErrorKind::InvalidUsage, "rank ", rank, ": ", sends.size(), " send(s) to itself and ", recvs.size(),
         " receive(s) from itself in one group; each send to itself needs a receive from itself");
  for (std::size_t i = 0; i < sends.size(); ++i)
    if (sends[i] != recvs[i])
      fail(ErrorKind::InvalidUsage, "rank ", rank, ": send to itself number ", i + 1, " of ", sends[i],
           " bytes meets a receive of ", recvs[i], " bytes (sends and receives to and from itself pair in "
           "issue order)");
}

}  // namespace hora::core
