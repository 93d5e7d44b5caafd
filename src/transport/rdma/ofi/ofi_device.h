// The `ofi` transport's device: one libfabric provider's fabric and domain,
// shared by every queue pair (ofi_queue_pair.h) of the process.
//
// Which provider: the first that libfabric lists for what the credit
// protocol needs (reliable datagram endpoints, RMA writes, messages with
// remote CQ data, sends ordered after writes), narrowed by FI_PROVIDER or
// HORA_OFI_PROVIDER. A hardware provider (efa, cxi, verbs, psm3, opx) is
// used on its own; a software one (tcp, sockets, shm, udp) only when
// HORA_TRANSPORT=ofi asks for ofi, since hora's own tcp transport is faster
// than libfabric's tcp provider on the same sockets.
#pragma once

#include <rdma/fabric.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "transport/rdma/device.h"
#include "transport/rdma/ofi/fabric_library.h"
#include "transport/rdma/registration_cache.h"

namespace hora::transport::rdma::ofi {

// efa, cxi, verbs (and verbs;ofi_rxm), psm2, psm3, opx: providers that drive
// a NIC; the rest move bytes through the kernel's sockets or memory.
bool isHardwareProvider(std::string_view provider);

class OfiQueuePair;

// Keeps a manual-progress provider moving while its ranks are elsewhere.
// With FI_PROGRESS_MANUAL (tcp, efa) a provider moves bytes only inside
// calls into it: a rank that posted its last writes of a collective and
// then waits on something else (a new connection, its next call) would
// leave them unsent, and its peer waiting for them. Sockets do not have
// this problem (the kernel moves their bytes), nor do verbs NICs. Every
// millisecond this thread gives each queue pair its rank has not polled
// for a millisecond a progress call (a completion-queue read of no
// entries), as NCCL's proxy thread does for its network transports.
class ProgressThread {
 public:
  ProgressThread();
  ~ProgressThread();
  void attach(OfiQueuePair* queuePair);
  void detach(OfiQueuePair* queuePair);
  // Stops the thread for good (at exit, before libfabric's own teardown).
  void stop();

 private:
  void run();
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<OfiQueuePair*> queuePairs_;
  bool stopping_ = false;
  std::thread thread_;
};

class OfiDevice final : public Device, public std::enable_shared_from_this<OfiDevice> {
 public:
  // Takes `info` (the provider's answer) and opens its fabric and domain.
  OfiDevice(const FabricLibrary& library, fi_info* info);
  ~OfiDevice() override;
  OfiDevice(const OfiDevice&) = delete;
  OfiDevice& operator=(const OfiDevice&) = delete;

  std::string name() const override;
  std::unique_ptr<QueuePair> createQueuePair() override;

  const FabricLibrary& library() const { return library_; }
  const fi_info& info() const { return *info_; }
  fid_domain* domain() const { return domain_; }
  fid_fabric* fabric() const { return fabric_; }
  std::string provider() const { return info_->fabric_attr->prov_name; }
  // Registration needs a key from us unless the provider picks its own.
  std::uint64_t nextKey();
  ProgressThread& progress() { return progress_; }
  // The domain's registrations, shared by its endpoints (unless the
  // provider binds each to one endpoint: FI_MR_ENDPOINT).
  RegistrationCache& registrations() { return registrations_; }

 private:
  const FabricLibrary& library_;
  fi_info* info_;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  std::atomic<std::uint64_t> nextKey_{1};  // keys are the domain's
  RegistrationCache registrations_;          // empty before the domain closes
  ProgressThread progress_;  // last: stopped before the domain closes
};

struct OfiOpening {
  std::shared_ptr<OfiDevice> device;  // null: none usable
  std::string why;                    // what was found, or why nothing was
  // Further domains of the same provider (NICs) that carry a connection's
  // queue pairs in turn with `device` (multi-rail, rdma/multi_rail.h).
  std::vector<std::shared_ptr<OfiDevice>> moreRails;
};

// Finds a provider (as above; `allowSoftware`: tcp and the like too) and
// opens it. A provider may offer one domain per NIC or network interface:
// the one HORA_OFI_DOMAIN names, else the one named `interfaceName` (the
// interface hora's bootstrap chose, after which tcp names its domains),
// else the one on the first of `nearestNics` it offers (the topology's
// RDMA NICs, nearest this rank first), then any but loopback, so that
// peers on other hosts can reach the address (domain_choice.h). Never
// throws for "nothing here": says why.
//
// Rails: the domains HORA_OFI_RAILS lists (comma-separated domain names,
// taken as given), or else those on `railNics` (the topology's NICs as
// near this rank as its nearest) on the first domain's fabric, are opened
// as further rails. A rail that does not open is left out, said at INFO.
OfiOpening openOfiDevice(bool allowSoftware, const std::string& interfaceName = "",
                         const std::vector<std::string>& railNics = {},
                         const std::vector<std::string>& nearestNics = {});

// Installs the ofi device for this process (rdma::useDevice) unless one is
// installed already or ofi is disabled, said once at INFO: called at every
// communicator's init, and acts on the first. `forced`: HORA_TRANSPORT=ofi.
// With further rails (above), the device is their combination.
void prepareOfi(bool forced, bool disabled, const std::string& interfaceName,
                const std::vector<std::string>& railNics = {}, const std::vector<std::string>& nearestNics = {});

}  // namespace hora::transport::rdma::ofi
