// The argument checks of a collective or point-to-point call, shared by
// both APIs (nccl.h and include/hora/communicator.h), so that the two refuse
// exactly the same inputs with InvalidArgument before anything is queued: a
// call that fails later, on a worker thread, would report a caller's
// mistake as a failed operation instead.
//
// Each check takes the name the caller's API gives the argument, so that
// the message speaks the caller's language ("sendbuff" in nccl.h, "send"
// in the C++ API).
#pragma once

#include <cstddef>

#include "hora/types.h"

namespace hora::api {

// The element type behind an API's integer value; refuses values outside
// DataType ("invalid <name> 42 (valid: 0..11)").
DataType checkType(int value, const char* name);

// The bytes of `count` elements times `blocks` (a collective whose buffer
// holds one block per rank passes the rank count). Refuses sizes that do
// not fit in a ptrdiff_t: pointer arithmetic on such a buffer would
// overflow long before any memory ran out.
std::size_t checkedBytes(std::size_t count, DataType type, std::size_t blocks);

// A buffer the call reads or writes: NULL only when there is nothing to
// read or write (count == 0).
void checkBuffer(const void* buffer, std::size_t count, const char* name);

// A rank argument of a communicator of `nranks` ranks.
void checkRoot(int root, int nranks);
void checkPeer(int peer, int nranks);

}  // namespace hora::api
