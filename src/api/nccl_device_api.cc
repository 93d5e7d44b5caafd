// The host entry points of NCCL's device API (include/hora/nccl_device_host.h).
//
// hora has no CUDA kernels that take a device communicator, so what needs
// one (creating it, and the barrier and all-to-all resources it would hold)
// fails with ncclInvalidUsage. They exist because a program linked against
// NVIDIA's library, PyTorch among them, has the loader resolve every one of
// its symbols when hora's library stands in for NVIDIA's.
//
// The team functions return values, not result codes, so each one answers
// what it can from the communicator alone. Teams follow NCCL's arithmetic
// (a team is nRanks world ranks spaced `stride` apart, the caller at index
// `rank`), with hora's LSA team (the ranks whose memory a kernel could load
// and store through the device API) being the caller alone: NVIDIA's
// library gives that same team to a rank with no peer memory in reach.
#include <climits>

#include "api/nccl_api.h"
#include "hora/nccl_device_host.h"

using namespace hora;

namespace {

// What the team functions return when they cannot answer (ncclGetLastError
// says why): no member (nRanks 0, the caller at no index), and a stride of 1
// so that NCCL's inline team arithmetic, which divides by it, stays defined.
constexpr ncclTeam_t kEmptyTeam = {0, -1, 1};
constexpr int kNoRank = -1;
constexpr int kNoCount = -1;

ncclResult_t deviceApiUnsupported(const char* function, const char* what) {
  api::reportError(strCat(function, ": NCCL's device API (nccl_device.h) is not supported by hora: ", what));
  return ncclInvalidUsage;
}

// Runs `body` for a function returning `T`: its value, or `fallback` when it
// throws (the error text recorded for ncclGetLastError, as api::guarded does).
template <typename T, typename Body>
T valueOr(const char* function, T fallback, Body&& body) {
  T value = fallback;
  if (api::guarded(function, [&] { value = body(); }) != ncclSuccess) return fallback;
  return value;
}

ncclTeam_t worldTeam(const api::CommPtr& comm) { return {comm->nranks(), comm->rank(), 1}; }

// World rank of member `member` of `team`, which the caller belongs to: the
// caller's own world rank, moved by the members between them.
long long worldRankOf(const api::CommPtr& comm, ncclTeam_t team, int member) {
  HORA_CHECK_ARG(team.nRanks >= 1 && team.rank >= 0 && team.rank < team.nRanks,
                 "the team {nRanks ", team.nRanks, ", rank ", team.rank, ", stride ", team.stride,
                 "} does not hold the calling rank");
  HORA_CHECK_ARG(member >= 0 && member < team.nRanks, "rank ", member, " is not a member of a team of ",
                 team.nRanks);
  return comm->rank() + (static_cast<long long>(member) - team.rank) * team.stride;
}

}  // namespace

HORA_NCCL_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm, ncclDevCommRequirements_t const* reqs,
              ncclDevComm_t* outDevComm) {
  (void)comm, (void)reqs, (void)outDevComm;
  return deviceApiUnsupported("ncclDevCommCreate", "no device communicator can be made (hora has no CUDA kernels "
                                                   "that would use one)");
}

HORA_NCCL_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, ncclDevComm_t const* devComm) {
  (void)comm, (void)devComm;
  return deviceApiUnsupported("ncclDevCommDestroy", "ncclDevCommCreate never makes a device communicator");
}

HORA_NCCL_API(ncclResult_t, ncclLsaBarrierCreateRequirement, ncclTeam_t team, int nBarriers,
              ncclLsaBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq) {
  (void)team, (void)nBarriers, (void)outHandle, (void)outReq;
  return deviceApiUnsupported("ncclLsaBarrierCreateRequirement",
                              "no device communicator can be made to hold the barriers");
}

HORA_NCCL_API(ncclResult_t, ncclGinBarrierCreateRequirement, ncclComm_t comm, ncclTeam_t team, int nBarriers,
              ncclGinBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq) {
  (void)comm, (void)team, (void)nBarriers, (void)outHandle, (void)outReq;
  return deviceApiUnsupported("ncclGinBarrierCreateRequirement",
                              "no device communicator can be made to hold the barriers");
}

HORA_NCCL_API(ncclResult_t, ncclLLA2ACreateRequirement, int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
              ncclDevResourceRequirements_t* outReq) {
  (void)nBlocks, (void)nSlots, (void)outHandle, (void)outReq;
  return deviceApiUnsupported("ncclLLA2ACreateRequirement",
                              "no device communicator can be made to hold the all-to-all buffers");
}

// Plain arithmetic, so it answers as NCCL does: an LL all-to-all slot
// carries 8 bytes of an element, so each element takes ceil(size / 8) slots.
HORA_NCCL_API(int, ncclLLA2ACalcSlots, int maxElts, int maxEltSize) {
  return valueOr("ncclLLA2ACalcSlots", kNoCount, [&] {
    HORA_CHECK_ARG(maxElts >= 0 && maxEltSize >= 0, "maxElts (", maxElts, ") and maxEltSize (", maxEltSize,
                   ") must not be negative");
    const long long slots = static_cast<long long>(maxElts) * ((static_cast<long long>(maxEltSize) + 7) / 8);
    HORA_CHECK_ARG(slots <= INT_MAX, maxElts, " elements of ", maxEltSize, " bytes need ", slots,
                   " slots, more than an int holds");
    return static_cast<int>(slots);
  });
}

// Every rank of the communicator, the caller at its own rank: what NCCL
// returns.
HORA_NCCL_API(ncclTeam_t, ncclTeamWorld, ncclComm_t comm) {
  return valueOr("ncclTeamWorld", kEmptyTeam, [&] { return worldTeam(api::checkComm(comm)); });
}

// The caller alone (see the top of this file).
HORA_NCCL_API(ncclTeam_t, ncclTeamLsa, ncclComm_t comm) {
  return valueOr("ncclTeamLsa", kEmptyTeam, [&] {
    api::checkComm(comm);
    return ncclTeam_t{1, 0, 1};
  });
}

// The ranks at the caller's index in every LSA team: NCCL's outer factor of
// the world by the LSA team's size, which with an LSA team of one rank is
// the world team itself.
HORA_NCCL_API(ncclTeam_t, ncclTeamRail, ncclComm_t comm) {
  return valueOr("ncclTeamRail", kEmptyTeam, [&] { return worldTeam(api::checkComm(comm)); });
}

HORA_NCCL_API(int, ncclTeamRankToWorld, ncclComm_t comm, ncclTeam_t team, int rank) {
  return valueOr("ncclTeamRankToWorld", kNoRank, [&] {
    api::CommPtr c = api::checkComm(comm);
    const long long world = worldRankOf(c, team, rank);
    HORA_CHECK_ARG(world >= 0 && world < c->nranks(), "member ", rank, " of the team {nRanks ", team.nRanks,
                   ", rank ", team.rank, ", stride ", team.stride, "} would be world rank ", world,
                   ", outside [0, ", c->nranks(), ")");
    return static_cast<int>(world);
  });
}

// The LSA team holds only the caller, whose LSA rank is 0: any other member
// of `team` has no LSA rank.
HORA_NCCL_API(int, ncclTeamRankToLsa, ncclComm_t comm, ncclTeam_t team, int rank) {
  return valueOr("ncclTeamRankToLsa", kNoRank, [&] {
    api::CommPtr c = api::checkComm(comm);
    const long long world = worldRankOf(c, team, rank);
    HORA_CHECK_ARG(world == c->rank(), "member ", rank, " of the team is world rank ", world,
                   ", which is not in this rank's LSA team: in hora that team is the calling rank alone");
    return 0;
  });
}
