// A group's messages from a rank to itself: each send to itself is a copy
// into the receive from itself issued in the same place among them, so the
// two lists must pair up, count for count and size for size. Checked before
// anything of the group runs, so that a group that breaks the rule fails
// alone and leaves the communicator usable, as NCCL's does.
#pragma once

#include <span>

#include "core/op.h"

namespace hora::core {

// Throws InvalidUsage, naming `rank`, when `ops`' sends to `rank` and
// receives from `rank` do not pair up in issue order.
void checkSelfMessagesPair(std::span<const Op> ops, int rank);

}  // namespace hora::core
