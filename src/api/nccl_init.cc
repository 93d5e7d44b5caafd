// Communicator lifecycle and queries of the nccl.h API.
#include <algorithm>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "api/arguments.h"
#include "api/comm_config.h"
#include "api/group.h"
#include "api/nccl_api.h"
#include "bootstrap/unique_id.h"
#include "core/scalar.h"

using namespace hora;

namespace {

// `device`: the CUDA device to bind (NCCL's current device of the caller).
ncclComm* makeComm(int nranks, const bootstrap::UniqueId& id, int rank, bool hostRoot,
                   const ncclConfig_t* config, int device = core::CommunicatorConfig::kCallingThreadDevice) {
  core::CommunicatorConfig settings;
  settings.hostRoot = hostRoot;
  settings.device = device;
  return api::wrapComm(std::make_shared<core::Communicator>(id, nranks, rank, settings),
                       api::nonBlockingConfig(config));
}

void checkConfig(const ncclConfig_t* config) { (void)api::effectiveConfig(config); }

// As NCCL: a non-blocking init returns the communicator's state: in
// progress, or, when it has finished already, its outcome.
ncclResult_t initResult(ncclResult_t result, ncclComm_t comm, const ncclConfig_t* config) {
  if (result != ncclSuccess || !api::nonBlockingConfig(config)) return result;
  if (api::inProgress(comm)) return ncclInProgress;
  ncclResult_t state = ncclSuccess;
  if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return ncclInternalError;
  return state;
}

void initRank(ncclComm_t* out, int nranks, const ncclUniqueId& commId, int rank,
              const ncclConfig_t* config) {
  HORA_CHECK_ARG(out != nullptr, "the output communicator pointer is NULL");
  *out = nullptr;
  HORA_CHECK_ARG(nranks >= 1, "nranks must be at least 1, got ", nranks);
  HORA_CHECK_ARG(rank >= 0 && rank < nranks, "rank ", rank, " is outside [0, ", nranks, ")");
  checkConfig(config);
  bootstrap::UniqueId id = bootstrap::decode(commId.internal);
  const bool hostRoot = bootstrap::rootHostedByRankZero() && rank == 0;
  const bool inGroup = api::inGroup();
  if (!api::nonBlockingConfig(config) && !inGroup) {
    *out = makeComm(nranks, id, rank, hostRoot, config);
    return;
  }
  // Non-blocking, or inside a group (where one thread may make every rank,
  // as NCCL allows): the handle exists at once; the rendezvous and the
  // connections are made on a thread of their own (ncclCommGetAsyncError
  // says ncclInProgress meanwhile, and any other call waits for them). A
  // blocking init in a group is then finished by the outermost ncclGroupEnd.
  core::CommunicatorConfig settings;
  settings.hostRoot = hostRoot;
  settings.device = core::Communicator::callingThreadDevice();  // the caller's, not the init thread's
  settings.abortFlag = std::make_shared<std::atomic<bool>>(false);
  auto making = std::async(std::launch::async, [id, nranks, rank, settings] {
                  return std::make_shared<core::Communicator>(id, nranks, rank, settings);
                }).share();
  *out = api::wrapPending(making, api::nonBlockingConfig(config), settings.abortFlag);
  if (inGroup && !api::nonBlockingConfig(config)) api::finishInGroupEnd(making, settings.abortFlag);
}

}  // namespace

HORA_NCCL_API(ncclResult_t, ncclGetVersion, int* version) {
  return api::guarded("ncclGetVersion", [&] {
    HORA_CHECK_ARG(version != nullptr, "version is NULL");
    *version = NCCL_VERSION_CODE;
  });
}

HORA_NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId) {
  return api::guarded("ncclGetUniqueId", [&] {
    HORA_CHECK_ARG(uniqueId != nullptr, "uniqueId is NULL");
    bootstrap::encode(bootstrap::createUniqueId(), uniqueId->internal);
  });
}

HORA_NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId,
              int rank) {
  return api::guardedInGroup("ncclCommInitRank", [&] { initRank(comm, nranks, commId, rank, nullptr); });
}

HORA_NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks,
              ncclUniqueId commId, int rank, ncclConfig_t* config) {
  const ncclResult_t result =
      api::guardedInGroup("ncclCommInitRankConfig", [&] { initRank(comm, nranks, commId, rank, config); });
  return initResult(result, result == ncclSuccess ? *comm : nullptr, config);
}

// NCCL spreads the rendezvous of very large jobs over several roots, one
// per id. hora's rendezvous has one root: every rank meets at the id whose
// bytes sort first (the others' roots, if any were started, see no rank and
// time out unused). Not simply the first id: ranks that were handed the same
// ids in a different order still meet, instead of waiting at different roots
// until the deadline. torch passes one id up to 128 ranks per root by default.
HORA_NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank,
              int nId, ncclUniqueId* commIds, ncclConfig_t* config) {
  const ncclResult_t result = api::guardedInGroup("ncclCommInitRankScalable", [&] {
    HORA_CHECK_ARG(nId >= 1 && nId <= nranks, "nId must be at least 1 and at most nranks (", nranks, "), got ",
                   nId);
    HORA_CHECK_ARG(commIds != nullptr, "commIds is NULL");
    for (int k = 0; k < nId; ++k) (void)bootstrap::decode(commIds[k].internal);  // every id must be valid
    const ncclUniqueId* meetingPlace = std::min_element(
        commIds, commIds + nId, [](const ncclUniqueId& a, const ncclUniqueId& b) {
          return std::memcmp(a.internal, b.internal, sizeof(a.internal)) < 0;
        });
    initRank(newcomm, nranks, *meetingPlace, myrank, config);
  });
  return initResult(result, result == ncclSuccess ? *newcomm : nullptr, config);
}

HORA_NCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  if (comm == nullptr) return ncclSuccess;  // nothing to revoke, as NCCL
  return api::guardedInGroup("ncclCommRevoke", [&] {
    HORA_CHECK_ARG(revokeFlags == NCCL_REVOKE_DEFAULT, "revokeFlags must be NCCL_REVOKE_DEFAULT, got ",
                   revokeFlags);
    // A communicator already made is stopped before anything waits for
    // its work (a non-blocking group or split still running on it): that
    // work is what a revoke is for getting out of. One still being made is
    // waited for first.
    api::CommPtr impl = api::madeComm(comm);
    const bool made = impl != nullptr;
    if (!made) impl = api::checkComm(comm, api::JobFailure::Ignore);
    // As NCCL: a finalized communicator has nothing left to revoke.
    HORA_CHECK_ARG(!comm->finalizeCalled.load(), "the communicator of rank ", impl->rank(),
                   " was finalized (ncclCommFinalize); only ncclCommDestroy may follow");
    // Inside a group too (NCCL runs it at the group's end; here at once: it
    // stops operations, it issues none).
    impl->revoke();
    if (made) api::checkComm(comm, api::JobFailure::Ignore);  // the stopped work ends
  });
}

HORA_NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist) {
  return api::guarded("ncclCommInitAll", [&] {
    HORA_CHECK_ARG(comms != nullptr, "comms is NULL");
    HORA_CHECK_ARG(ndev >= 0, "ndev is negative (", ndev, ")");
    if (ndev == 0) return;  // no communicator to make, as NCCL
    bootstrap::checkCommIdVariable();
    // Rank r is bound to devlist[r] (without a list, device r modulo the
    // number of devices); a device may repeat: several ranks then share one
    // GPU. Without CUDA, no device.
    const int devices = core::Communicator::cudaDeviceCount();
    if (devices > 0 && devlist != nullptr)
      for (int r = 0; r < ndev; ++r)
        HORA_CHECK_ARG(devlist[r] >= 0 && devlist[r] < devices, "devlist[", r, "] is ", devlist[r],
                       ", not a CUDA device of this process (0 to ", devices - 1, ")");
    auto deviceOf = [&](int r) {
      if (devices == 0) return -1;
      return devlist != nullptr ? devlist[r] : r % devices;
    };
    bootstrap::UniqueId id = bootstrap::createLocalUniqueId();
    std::vector<std::thread> threads;
    std::vector<std::exception_ptr> errors(ndev);
    for (int r = 0; r < ndev; ++r) {
      comms[r] = nullptr;
      threads.emplace_back([&, r] {
        try {
          comms[r] = makeComm(ndev, id, r, false, nullptr, deviceOf(r));
        } catch (...) {
          errors[r] = std::current_exception();
        }
      });
    }
    for (auto& thread : threads) thread.join();
    for (int r = 0; r < ndev; ++r) {
      if (!errors[r]) continue;
      for (int k = 0; k < ndev; ++k) {
        if (comms[k] == nullptr) continue;
        api::unregisterComm(comms[k])->abort();
        comms[k] = nullptr;
      }
      std::rethrow_exception(errors[r]);
    }
  });
}

HORA_NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  // As NCCL's: NULL has nothing to finalize, and a communicator is
  // finalized once (ncclCommDestroy comes next).
  if (comm == nullptr) return ncclSuccess;
  return api::guarded("ncclCommFinalize", [&] {
    api::CommPtr impl = api::checkCommNotBroken(comm);
    if (comm->finalizeCalled.exchange(true))
      fail(ErrorKind::InvalidArgument, "the communicator of rank ", impl->rank(),
           " was finalized already (ncclCommDestroy frees it)");
    impl->finalize();
    impl->closeToWork();
  });
}

HORA_NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  return api::guarded("ncclCommDestroy", [&] {
    api::CommPtr impl = api::unregisterComm(comm);
    if (!impl) return;  // its non-blocking init failed: nothing to free
    try {
      impl->finalize();
    } catch (const Error&) {
      // Destroy frees the communicator even if its last work failed.
    }
  });
}

HORA_NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  return api::guarded("ncclCommAbort", [&] {
    if (api::CommPtr impl = api::unregisterComm(comm, /*stopInit=*/true)) impl->abort();
  });
}

HORA_NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  return api::guarded("ncclCommCount", [&] {
    HORA_CHECK_ARG(count != nullptr, "count is NULL");
    *count = api::checkCommNotBroken(comm)->nranks();
  });
}

HORA_NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  return api::guarded("ncclCommUserRank", [&] {
    HORA_CHECK_ARG(rank != nullptr, "rank is NULL");
    *rank = api::checkCommNotBroken(comm)->rank();
  });
}

HORA_NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  return api::guarded("ncclCommCuDevice", [&] {
    HORA_CHECK_ARG(device != nullptr, "device is NULL");
    *device = api::checkCommNotBroken(comm)->cudaDevice();  // -1: bound to none (no CUDA here)
  });
}

HORA_NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  return api::guarded("ncclCommGetAsyncError", [&] {
    HORA_CHECK_ARG(asyncError != nullptr, "asyncError is NULL");
    if (api::inProgress(comm)) {
      *asyncError = ncclInProgress;
      return;
    }
    api::CommPtr held;
    try {
      held = api::checkComm(comm);
    } catch (const Error& failed) {
      // Its non-blocking init failed, or a non-blocking split or shrink of
      // it: that is the communicator's error.
      api::setLastError(strCat("ncclCommGetAsyncError: ", failed.what()));
      *asyncError = api::resultOf(failed.kind());
      return;
    } catch (const std::exception& failed) {
      api::setLastError(strCat("ncclCommGetAsyncError: internal error: ", failed.what()));
      *asyncError = ncclInternalError;
      return;
    }
    auto& impl = *held;
    // As NCCL: once revoked, and so quiet (every operation stopped), the
    // state is ncclSuccess: the communicator is fit to shrink or destroy.
    using Revocation = core::Communicator::Revocation;
    const Revocation revocation = impl.revocation();
    if (revocation == Revocation::Done) *asyncError = ncclSuccess;
    else if (revocation == Revocation::Stopping) *asyncError = ncclInProgress;
    else if (impl.aborted()) *asyncError = ncclInvalidUsage;
    else if (!impl.brokenReason().empty()) {
      // Its text too: a watchdog thread (PyTorch's) asks ncclGetLastError next.
      api::setLastError(strCat("ncclCommGetAsyncError: ", impl.brokenReason()));
      *asyncError = api::resultOf(impl.brokenKind());
    }
    else if (auto failed = impl.deviceFailure()) {
      // A kernel stopped (collectives on device buffers run after their call returned).
      api::setLastError(strCat("ncclCommGetAsyncError: ", failed->what()));
      *asyncError = api::resultOf(failed->kind());
    } else *asyncError = ncclSuccess;
  });
}

HORA_NCCL_API(const char*, ncclGetErrorString, ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the hora developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

HORA_NCCL_API(const char*, ncclGetLastError, ncclComm_t comm) {
  (void)comm;  // the text of the last failed call on this thread
  return api::lastError();
}

HORA_NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar,
              ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm) {
  return api::guarded("ncclRedOpCreatePreMulSum", [&] {
    HORA_CHECK_ARG(op != nullptr, "op is NULL");
    HORA_CHECK_ARG(scalar != nullptr, "scalar is NULL");
    const DataType type = api::checkType(datatype, "datatype");
    HORA_CHECK_ARG(residence == ncclScalarDevice || residence == ncclScalarHostImmediate,
                   "invalid scalar residence ", int(residence));
    const api::CommPtr communicator = api::checkCommNotBroken(comm);
    // ncclScalarDevice: the scalar stays where it is and is read each time
    // a collective with this op runs (on device buffers by the kernel, after
    // the stream's earlier work), as NCCL does; PyTorch passes a tensor's
    // memory, which may be written just before the collective.
    if (residence == ncclScalarDevice) {
      *op = static_cast<ncclRedOp_t>(communicator->createPreMulSum(type, 0, scalar));
      return;
    }
    // ncclScalarHostImmediate: read now.
    std::uint64_t bits = 0;
    core::readScalar(&bits, scalar, dataTypeSize(type));
    *op = static_cast<ncclRedOp_t>(communicator->createPreMulSum(type, bits));
  });
}

HORA_NCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  return api::guarded("ncclRedOpDestroy", [&] {
    HORA_CHECK_ARG(op >= 0, "reduction op ", int(op), " is not a reduction op (negative)");
    HORA_CHECK_ARG(op >= ncclNumOps, "built-in reduction op ", int(op), " cannot be destroyed");
    api::checkComm(comm)->destroyRedOp(op);
  });
}
