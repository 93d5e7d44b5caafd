// One collective call with known inputs and an exactly known result, and a
// RankProgram that runs a list of them and checks every byte around them.
//
// Each buffer lives in a guarded arena: 64 bytes of guard pattern, the
// buffer (starting 64-byte aligned, or one element later when `unaligned`),
// and 64 more bytes of guard. After the call, the whole arena must equal an
// independently built image of what it should hold: outputs as the
// reference says, inputs untouched (out of place), guards untouched, and
// buffers the call must not write (the receive buffer of a non-root rank in
// reduce and gather) still holding their junk.
//
// In-place layouts are NCCL's: all_reduce, broadcast and reduce use
// recvbuff == sendbuff; reduce_scatter recvbuff = sendbuff + rank*recvcount;
// all_gather sendbuff = recvbuff + rank*sendcount; at the root, gather
// sendbuff = recvbuff + root*count and scatter recvbuff = sendbuff +
// root*count. Non-root ranks of broadcast and scatter pass sendbuff = NULL
// out of place (only the root's is read).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"
#include "rank_program.h"
#include "reference.h"

namespace hora_coll_test {

enum class Collective { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, AlltoAll, Gather, Scatter };

const std::vector<Collective>& allCollectives();
const char* collectiveName(Collective collective);
bool isReducing(Collective collective);
bool hasRoot(Collective collective);
bool supportsInPlace(Collective collective);

struct CollectiveCase {
  Collective collective = Collective::AllReduce;
  ncclDataType_t type = ncclFloat32;
  Reduction reduction = Reduction::Sum;  // reducing collectives only
  std::size_t count = 0;                 // the count argument of the call
  int root = 0;                          // rooted collectives only
  bool inPlace = false;
  bool unaligned = false;
  // Buffers from ncclMemAlloc, registered as windows (ncclCommWindowRegister)
  // before the call and deregistered after. Registration is collective, so
  // such cases run with a thread or a process per rank, never with one
  // thread driving every rank.
  bool inWindows = false;
  std::uint64_t seed = 1;
  std::string describe() const;
};

// A program whose step i runs cases[i].
ProgramFactory collectiveCasesProgram(std::vector<CollectiveCase> cases);
// A program whose step i issues all of steps[i] inside one
// ncclGroupStart/End, then checks each.
ProgramFactory collectiveStepsProgram(std::vector<std::vector<CollectiveCase>> steps);

// Issues `c` on one rank with the given buffers (and op, for reductions).
ncclResult_t issueCollective(const CollectiveCase& c, const void* send, void* recv, ncclRedOp_t op,
                             ncclComm_t comm);

}  // namespace hora_coll_test
