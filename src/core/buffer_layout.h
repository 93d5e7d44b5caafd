// Whether a collective's buffers may be used as they overlap. NCCL's
// in-place forms put the receive buffer at one exact place relative to the
// send buffer (the same buffer, or one block of the larger one); any other
// overlap would make a schedule read elements it already overwrote, so it
// is refused before anything moves.
#pragma once

#include "core/op.h"

namespace hora::core {

// Throws InvalidArgument, naming the rank and the in-place layout, when
// `op`'s send and receive buffers on `rank` overlap other than in place.
void checkBufferOverlap(const Op& op, int rank, int nranks);

// Throws InvalidArgument, naming the rank and the buffer, when a buffer
// `op` uses on `rank` does not start at a multiple of its element size.
void checkBufferAlignment(const Op& op, int rank, int nranks);

}  // namespace hora::core
