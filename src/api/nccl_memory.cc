// Memory and registration entry points of nccl.h.
//
//   ncclMemAlloc / ncclMemFree       memory on the calling thread's CUDA
//                                    device, as NCCL's, where there is one
//                                    (device/device_memory.h); otherwise host
//                                    memory other ranks of this host can map
//                                    (transport/shm/shared_memory.h)
//   ncclCommWindowRegister / ...     collective; all-reduces whose buffers
//                                    lie in windows on every rank run without
//                                    FIFOs (core/zero_copy.cc)
//   ncclCommRegister / ...           local; RDMA connections send from
//                                    registered buffers without a copy
//                                    (transport/user_registrations.h)
//
// Handles are checked against the live ones before use, so a stale or
// foreign handle is an error, not a crash.
#include <mutex>
#include <unordered_set>

#include "api/group.h"
#include "api/nccl_api.h"
#include "hora_config.h"
#include "transport/peer_memory.h"
#if HORA_HAVE_CUDA
#include "device/device_memory.h"
#endif

using namespace hora;

// The objects behind ncclWindow_t and ncclCommRegister's handles.
struct ncclWindow_vidmem {
  ncclComm_t comm;
  int window;
};

namespace {

struct Registration {
  ncclComm_t comm;
  std::uint64_t id;  // the communicator's (core::Communicator::registerBuffer)
};

std::mutex handlesMutex;
// The live handles of one kind: a window handle is no registration handle,
// and the reverse, though both name a communicator and a number.
template <typename Handle>
std::unordered_set<const Handle*>& liveHandles() {
  static auto* live = new std::unordered_set<const Handle*>();  // never destroyed: used at exit
  return *live;
}

template <typename Handle>
void remember(const Handle* handle) {
  std::lock_guard<std::mutex> lock(handlesMutex);
  liveHandles<Handle>().insert(handle);
}

// Throws unless `handle` is a live handle of its kind whose communicator is
// `comm`; a copy of what it holds.
template <typename Handle>
Handle checkLive(const Handle* handle, ncclComm_t comm, const char* what) {
  std::lock_guard<std::mutex> lock(handlesMutex);
  HORA_CHECK_ARG(handle != nullptr, "the ", what, " is NULL");
  // ncclInvalidUsage, as NCCL's for a handle it cannot find.
  if (liveHandles<Handle>().count(handle) == 0)
    fail(ErrorKind::InvalidUsage, "the ", what, " ", static_cast<const void*>(handle),
         " is not live (deregistered already, never registered, or a handle of another kind)");
  if (handle->comm != comm)
    fail(ErrorKind::InvalidUsage, "the ", what, " was registered with another communicator");
  return *handle;
}

// Forgets a handle checkLive accepted, and frees it. Only one caller wins
// where two threads deregister it at once: the other's call has failed.
template <typename Handle>
void release(Handle* handle) {
  std::lock_guard<std::mutex> lock(handlesMutex);
  if (liveHandles<Handle>().erase(handle) == 1) delete handle;
}

}  // namespace

HORA_NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  return api::guarded("ncclMemAlloc", [&] {
    HORA_CHECK_ARG(ptr != nullptr, "ptr is NULL");
    // As NVIDIA's (whose zero-byte request ends in cudaMalloc's): success,
    // and no memory.
    if (size == 0) {
      *ptr = nullptr;
      return;
    }
#if HORA_HAVE_CUDA
    if (device::currentDevice() >= 0) {
      *ptr = device::allocateDeviceMemory(size);
      return;
    }
#endif
    *ptr = transport::hostPeerMemory().allocate(size);
  });
}

HORA_NCCL_API(ncclResult_t, ncclMemFree, void* ptr) {
  return api::guarded("ncclMemFree", [&] {
    if (ptr == nullptr) return;
#if HORA_HAVE_CUDA
    if (device::isDeviceMemory(ptr)) return device::freeDeviceMemory(ptr);
#endif
    transport::hostPeerMemory().free(ptr);
  });
}

HORA_NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size,
              void** handle) {
  return api::guarded("ncclCommRegister", [&] {
    api::CommPtr c = api::checkComm(comm);
    HORA_CHECK_ARG(buff != nullptr, "buff is NULL");
    HORA_CHECK_ARG(size > 0, "size is 0");
    HORA_CHECK_ARG(handle != nullptr, "handle is NULL");
    auto* registration = new Registration{comm, c->registerBuffer(buff, size)};
    remember(registration);
    *handle = registration;
  });
}

HORA_NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  return api::guarded("ncclCommDeregister", [&] {
    api::CommPtr c = api::checkComm(comm);
    // NULL is what NCCL's ncclCommRegister gives where it skips a buffer,
    // and NCCL takes it back as a no-op: so does hora.
    if (handle == nullptr) return;
    auto* registration = static_cast<Registration*>(handle);
    const Registration live = checkLive(registration, comm, "registration handle");  // a stranger throws
    c->deregisterBuffer(live.id);
    release(registration);
  });
}

HORA_NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size,
              ncclWindow_t* win, int winFlags) {
  return api::guardedInGroup("ncclCommWindowRegister", [&] {
    HORA_CHECK_ARG(win != nullptr, "win is NULL");
    HORA_CHECK_ARG((winFlags & ~NCCL_WIN_COLL_SYMMETRIC) == 0, "invalid winFlags ", winFlags,
                   " (valid: NCCL_WIN_DEFAULT, NCCL_WIN_COLL_SYMMETRIC)");
    HORA_CHECK_ARG(buff != nullptr, "the window's buffer is NULL");
    HORA_CHECK_ARG(size > 0, "the window's size is 0");
    auto registration = [comm, buff, size, win] {
      auto* window = new ncclWindow_vidmem{comm, api::checkComm(comm)->registerWindow(buff, size)};
      remember(window);
      *win = window;
    };
    if (!api::inGroup()) {
      registration();
      return;
    }
    // Collective: inside a group (one thread may register every rank's
    // buffer, as nccl-tests does) the outermost ncclGroupEnd makes it, after
    // the group's inits, and fills *win then, as NCCL says it may. A
    // communicator still being made is checked then, not waited for.
    if (!api::inProgress(comm)) api::checkComm(comm)->checkUsable();  // also refuses a stranger
    *win = nullptr;
    api::deferToGroupEnd(comm, std::move(registration));
  });
}

HORA_NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  return api::guarded("ncclCommWindowDeregister", [&] {
    if (win == nullptr) return;  // a no-op, as in NCCL (whatever the communicator)
    api::CommPtr c = api::checkComm(comm);
    const ncclWindow_vidmem live = checkLive(win, comm, "window");
    // Freed once the window is: a call that fails leaves the handle live,
    // to be deregistered again.
    c->deregisterWindow(live.window);
    release(win);
  });
}
