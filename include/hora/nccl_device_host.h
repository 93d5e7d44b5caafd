/*
 * The host entry points of NCCL 2.28's device API (NVIDIA's nccl_device.h),
 * as hora's libnccl.so.2 exports them.
 *
 * NCCL's device API lets CUDA kernels talk to peers through a device
 * communicator (ncclDevComm) made by ncclDevCommCreate. hora has no such
 * kernels, so it does not support the API; it still exports every host
 * function NVIDIA's library exports, because a program linked against
 * NVIDIA's library (PyTorch is one) has the loader resolve all of them when
 * hora's library stands in for NVIDIA's. What each returns here:
 *
 *   ncclDevCommCreate, ncclDevCommDestroy, ncclLsaBarrierCreateRequirement,
 *   ncclGinBarrierCreateRequirement, ncclLLA2ACreateRequirement
 *       ncclInvalidUsage; ncclGetLastError says the device API is not
 *       supported. Output arguments are left untouched.
 *   ncclTeamWorld, ncclTeamLsa, ncclTeamRail, ncclTeamRankToWorld,
 *   ncclTeamRankToLsa
 *       computed from the communicator, taking hora's LSA team (the ranks
 *       whose memory a kernel may load and store through the device API) to
 *       be the calling rank alone: with no device API there is no peer memory
 *       to reach. For an invalid communicator or argument the teams are
 *       empty ({0, -1, 1}) and the ranks -1, and ncclGetLastError says why.
 *   ncclLLA2ACalcSlots
 *       NCCL's slot count for the arguments (plain arithmetic), or -1 for
 *       negative arguments or a count beyond INT_MAX.
 *
 * The declarations match NVIDIA's in name, signature and layout (the api
 * test suite compares them). The structs only passed by pointer are left
 * incomplete: hora never reads or writes them. Do not include this header
 * together with NVIDIA's nccl_device.h, which declares the same names; a
 * program that uses the device API builds against NVIDIA's headers anyway.
 */
#ifndef HORA_NCCL_DEVICE_HOST_H_
#define HORA_NCCL_DEVICE_HOST_H_

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A set of ranks of a communicator: nRanks of them, whose world ranks are
 * spaced `stride` apart; `rank` is the caller's index in the set. Returned
 * by value, so its layout is part of the ABI. */
struct ncclTeam {
  int nRanks, rank, stride;
};
typedef struct ncclTeam ncclTeam_t;

/* Only ever passed by pointer. */
typedef struct ncclDevComm ncclDevComm_t;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
typedef struct ncclDevResourceRequirements ncclDevResourceRequirements_t;
typedef struct ncclLsaBarrierHandle ncclLsaBarrierHandle_t;
typedef struct ncclGinBarrierHandle ncclGinBarrierHandle_t;
typedef struct ncclLLA2AHandle ncclLLA2AHandle_t;

/* Each entry point exists twice, as in nccl.h: ncclX and the alias pncclX. */
#define HORA_NCCL_DEVICE_DECLARE(ret, name, args) \
  ret name args;                                  \
  ret p##name args;

HORA_NCCL_DEVICE_DECLARE(ncclResult_t, ncclDevCommCreate,
                         (ncclComm_t comm, ncclDevCommRequirements_t const* reqs, ncclDevComm_t* outDevComm))
HORA_NCCL_DEVICE_DECLARE(ncclResult_t, ncclDevCommDestroy, (ncclComm_t comm, ncclDevComm_t const* devComm))

HORA_NCCL_DEVICE_DECLARE(ncclTeam_t, ncclTeamWorld, (ncclComm_t comm))
HORA_NCCL_DEVICE_DECLARE(ncclTeam_t, ncclTeamLsa, (ncclComm_t comm))
HORA_NCCL_DEVICE_DECLARE(ncclTeam_t, ncclTeamRail, (ncclComm_t comm))
/* The world (or LSA) rank of member `rank` of `team`, a team the caller belongs to. */
HORA_NCCL_DEVICE_DECLARE(int, ncclTeamRankToWorld, (ncclComm_t comm, ncclTeam_t team, int rank))
HORA_NCCL_DEVICE_DECLARE(int, ncclTeamRankToLsa, (ncclComm_t comm, ncclTeam_t team, int rank))

HORA_NCCL_DEVICE_DECLARE(ncclResult_t, ncclLsaBarrierCreateRequirement,
                         (ncclTeam_t team, int nBarriers, ncclLsaBarrierHandle_t* outHandle,
                          ncclDevResourceRequirements_t* outReq))
HORA_NCCL_DEVICE_DECLARE(ncclResult_t, ncclGinBarrierCreateRequirement,
                         (ncclComm_t comm, ncclTeam_t team, int nBarriers, ncclGinBarrierHandle_t* outHandle,
                          ncclDevResourceRequirements_t* outReq))
HORA_NCCL_DEVICE_DECLARE(int, ncclLLA2ACalcSlots, (int maxElts, int maxEltSize))
HORA_NCCL_DEVICE_DECLARE(ncclResult_t, ncclLLA2ACreateRequirement,
                         (int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                          ncclDevResourceRequirements_t* outReq))

#undef HORA_NCCL_DEVICE_DECLARE

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // HORA_NCCL_DEVICE_HOST_H_
