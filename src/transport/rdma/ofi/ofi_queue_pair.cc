#include "transport/rdma/ofi/ofi_queue_pair.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "base/error.h"
#include "base/log.h"
#include "transport/rdma/ofi/ofi_device.h"

namespace hora::transport::rdma::ofi {

namespace {
constexpr std::size_t kMaxDepth = 256;
constexpr std::size_t kReadBatch = 16;
// How long the backlog may keep hearing "try again" before it is an error.
constexpr std::chrono::seconds kBusyLimit{30};

// Errors (positive FI_ codes) that say the peer is gone or unreachable.
// EPIPE and ESHUTDOWN are what the tcp provider gives for a peer that
// closed its end.
bool peerGone(long error) {
  switch (error) {
    case FI_ETIMEDOUT:
    case FI_ECONNRESET:
    case FI_ECONNREFUSED:
    case FI_ECONNABORTED:
    case FI_EHOSTUNREACH:
    case FI_ENOTCONN:
    case EPIPE:  // libfabric defines no FI_EPIPE; providers pass the errno on
    case FI_ESHUTDOWN:
    case FI_EIO: return true;
    default: return false;
  }
}

// How an operation ended, in the terms the protocol tells apart.
Status statusOf(int error) {
  switch (error) {
    case FI_ECANCELED: return Status::Flushed;
    case FI_EACCES:
    case FI_EKEYREJECTED:
    case FI_EPERM: return Status::RemoteAccessError;
    default: return peerGone(error) ? Status::RetryExceeded : Status::LocalError;
  }
}
}  // namespace

OfiQueuePair::OfiQueuePair(std::shared_ptr<OfiDevice> device) : device_(std::move(device)) {
  fi_info* info = const_cast<fi_info*>(&device_->info());
  sendDepth_ = std::min(info->tx_attr->size, kMaxDepth);
  receiveDepth_ = std::min(info->rx_attr->size, kMaxDepth);

  // A completion queue with a file descriptor to sleep on where the
  // provider offers one; without, a waiting rank polls.
  fi_cq_attr cqAttr{};
  cqAttr.size = 2 * (sendDepth_ + receiveDepth_);
  cqAttr.format = FI_CQ_FORMAT_DATA;
  cqAttr.wait_obj = FI_WAIT_FD;
  int rc = fi_cq_open(device_->domain(), &cqAttr, &completions_, nullptr);
  if (rc == 0) {
    if (fi_control(&completions_->fid, FI_GETWAIT, &waitFd_) != 0) waitFd_ = -1;
  } else {
    cqAttr.wait_obj = FI_WAIT_NONE;
    rc = fi_cq_open(device_->domain(), &cqAttr, &completions_, nullptr);
  }
  if (rc != 0) raise("fi_cq_open", rc);

  fi_av_attr avAttr{};
  avAttr.type = info->domain_attr->av_type == FI_AV_UNSPEC ? FI_AV_TABLE : info->domain_attr->av_type;
  avAttr.count = 1;
  rc = fi_av_open(device_->domain(), &avAttr, &addresses_, nullptr);
  if (rc != 0) raise("fi_av_open", rc);

  rc = fi_endpoint(device_->domain(), info, &endpoint_, nullptr);
  if (rc != 0) raise("fi_endpoint", rc);
  rc = fi_ep_bind(endpoint_, &completions_->fid, FI_TRANSMIT | FI_RECV);
  if (rc != 0) raise("fi_ep_bind (completion queue)", rc);
  rc = fi_ep_bind(endpoint_, &addresses_->fid, 0);
  if (rc != 0) raise("fi_ep_bind (address vector)", rc);
  rc = fi_enable(endpoint_);
  if (rc != 0) raise("fi_enable", rc);
  device_->progress().attach(this);
}

OfiQueuePair::~OfiQueuePair() {
  if (endpoint_ != nullptr) device_->progress().detach(this);
  // Registrations shared by the domain outlive the endpoint, so it goes
  // first: nothing may complete into what is closed after it. A provider
  // that binds each registration to an endpoint (FI_MR_ENDPOINT) counts
  // them as the endpoint's users and refuses to close it (-FI_EBUSY) while
  // one is open, so there they go first, as a verbs protection domain
  // outlives its registrations; the peer's writes into them then fail at
  // its NIC instead of landing.
  const bool boundToEndpoint = (device_->info().domain_attr->mr_mode & FI_MR_ENDPOINT) != 0;
  if (boundToEndpoint) releaseAllRegions();
  if (endpoint_ != nullptr) {
    if (const int rc = fi_close(&endpoint_->fid); rc != 0)
      HORA_LOG(Warn, "ofi (", device_->provider(), "): closing an endpoint: ", device_->library().explain("fi_close", rc));
  }
  if (!boundToEndpoint) releaseAllRegions();
  if (addresses_ != nullptr) fi_close(&addresses_->fid);
  if (completions_ != nullptr) fi_close(&completions_->fid);
}

void OfiQueuePair::raise(const char* call, long result, bool posting) const {
  // A post refused because the peer is gone is the peer's failure, not
  // this rank's: a Remote error, which the communicator pins on the peer.
  // Anything else failing (set-up, registration) is this rank's own.
  fail(posting && peerGone(-result) ? ErrorKind::Remote : ErrorKind::System, "ofi (", device_->provider(), "): ",
       device_->library().explain(call, result));
}

RegistrationCache& OfiQueuePair::registrations() {
  return (device_->info().domain_attr->mr_mode & FI_MR_ENDPOINT) != 0 ? ownRegistrations_ : device_->registrations();
}

namespace {
void closeRegistration(void* mr) {
  // A provider may refuse while an operation on it is outstanding (a
  // connection torn down mid-transfer): the registration then stays.
  if (const int rc = fi_close(&static_cast<fid_mr*>(mr)->fid); rc != 0)
    HORA_LOG(Warn, "ofi: closing a memory registration failed (", rc, "): it stays registered");
}
}  // namespace

Region OfiQueuePair::registerMemory(void* base, std::size_t bytes, std::uint64_t owner, Access access) {
  regions_.reserve(regions_.size() + 1);  // so that keeping what was acquired cannot throw
  auto make = [&](char* start, std::size_t length) {
    const std::uint64_t mode = device_->info().domain_attr->mr_mode;
    // A key of our choosing, unless the provider chooses (FI_MR_PROV_KEY).
    const std::uint64_t requestedKey = (mode & FI_MR_PROV_KEY) != 0 ? 0 : device_->nextKey();
    fid_mr* mr = nullptr;
    // FI_WRITE: the source of this side's writes; FI_REMOTE_WRITE: the
    // target of the peer's, with FI_RECV, a local right, because a provider
    // that emulates RDMA writes (efa without them) lands a write by reading
    // from the sender into the target, which needs the target writable
    // here (older efa gave FI_REMOTE_WRITE alone no local write).
    const std::uint64_t rights = access == Access::RemoteWrite ? FI_REMOTE_WRITE | FI_RECV : FI_WRITE;
    int rc = fi_mr_reg(device_->domain(), start, length, rights, 0, requestedKey, 0, &mr, nullptr);
    if (rc != 0) raise("fi_mr_reg", rc);
    if ((mode & FI_MR_ENDPOINT) != 0) {
      // Providers that scope registrations to an endpoint want it bound.
      if ((rc = fi_mr_bind(mr, &endpoint_->fid, 0)) != 0 || (rc = fi_mr_enable(mr)) != 0) {
        fi_close(&mr->fid);
        raise("fi_mr_bind / fi_mr_enable", rc);
      }
    }
    // Peers name the registration by virtual address, or by offset from
    // its start.
    const std::uint64_t remoteAddress = (mode & FI_MR_VIRT_ADDR) != 0 ? reinterpret_cast<std::uint64_t>(start) : 0;
    return Registration{reinterpret_cast<std::uintptr_t>(mr), fi_mr_key(mr), remoteAddress, mr};
  };
  const HeldRegion held = registrations().acquire(owner, base, bytes, access, make, closeRegistration);
  regions_.push_back(held);
  return held.region;
}

void OfiQueuePair::deregisterMemory(const Region& region) {
  const std::optional<HeldRegion> held = takeHeldRegion(regions_, region);
  HORA_ENFORCE(held.has_value(), "ofi: deregistering memory that was not registered");
  releaseRegion(*held);
}

void OfiQueuePair::releaseRegion(const HeldRegion& held) { registrations().release(held, closeRegistration); }

void OfiQueuePair::releaseAllRegions() {
  for (const HeldRegion& held : regions_) releaseRegion(held);
  regions_.clear();
}

OfiQueuePair::Request* OfiQueuePair::take(Operation operation, std::uint64_t id, bool signaled) {
  if (free_.empty()) {
    requests_.push_back(std::make_unique<Request>());
    free_.push_back(requests_.back().get());
  }
  Request* request = free_.back();
  free_.pop_back();
  request->id = id;
  request->operation = operation;
  request->signaled = signaled;
  if (operation != Operation::Receive) request->sendSequence = sendOrder_.next();
  return request;
}

ssize_t OfiQueuePair::tryPost(const Posting& posting) {
  void* context = &posting.request->context;
  switch (posting.request->operation) {
    case Operation::Write:
      return fi_write(endpoint_, posting.source, posting.bytes, posting.descriptor, peer_, posting.to.address,
                      posting.to.key, context);
    case Operation::WriteWithImmediate:
      return fi_senddata(endpoint_, nullptr, 0, nullptr, posting.immediate, peer_, context);
    case Operation::Receive:
      return fi_recv(endpoint_, nullptr, 0, nullptr, FI_ADDR_UNSPEC, context);
  }
  return -FI_EINVAL;
}

void OfiQueuePair::flush() {
  while (!backlog_.empty()) {
    const Posting& posting = backlog_.front();
    const ssize_t rc = tryPost(posting);
    if (rc == -FI_EAGAIN) {
      if (std::chrono::steady_clock::now() - refusedSince_ > kBusyLimit)
        raise(posting.request->operation == Operation::Receive ? "fi_recv (still refused)" : "fi_write (still refused)", rc,
              /*posting=*/true);
      return;
    }
    if (rc != 0) {
      raise(posting.request->operation == Operation::Write                ? "fi_write"
            : posting.request->operation == Operation::WriteWithImmediate ? "fi_senddata"
                                                                           : "fi_recv",
            rc, /*posting=*/true);
    }
    backlog_.pop_front();
    refusedSince_ = std::chrono::steady_clock::now();
  }
}

void OfiQueuePair::post(const Posting& posting) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (backlog_.empty()) refusedSince_ = std::chrono::steady_clock::now();
  backlog_.push_back(posting);
  flush();
}

void OfiQueuePair::postWrite(const Region& from, std::size_t offset, std::size_t bytes, RemoteMemory to,
                             std::uint64_t id, bool signaled) {
  Posting posting;
  posting.request = take(Operation::Write, id, signaled);
  posting.source = from.base + offset;
  posting.bytes = bytes;
  posting.descriptor = fi_mr_desc(reinterpret_cast<fid_mr*>(from.localKey));
  posting.to = to;
  post(posting);
}

void OfiQueuePair::postWriteWithImmediate(std::uint32_t immediate, std::uint64_t id) {
  Posting posting;
  posting.request = take(Operation::WriteWithImmediate, id, true);
  posting.immediate = immediate;
  post(posting);
}

void OfiQueuePair::postReceive(std::uint64_t id) {
  Posting posting;
  posting.request = take(Operation::Receive, id, true);
  post(posting);
}

void OfiQueuePair::drain() {
  fi_cq_data_entry entries[kReadBatch];
  for (;;) {
    const ssize_t n = fi_cq_read(completions_, entries, kReadBatch);
    if (n == -FI_EAGAIN) return;
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry error{};
      const ssize_t read = fi_cq_readerr(completions_, &error, 0);
      if (read == -FI_EAGAIN) return;  // not readable yet: the next poll reads it
      if (read != 1) raise("fi_cq_readerr", read < 0 ? read : -FI_EOTHER);
      auto* request = static_cast<Request*>(error.op_context);
      Completion completion;
      completion.status = statusOf(error.err);
      if (request == nullptr) {
        pending_.push_back(completion);
        continue;
      }
      completion.id = request->id;
      completion.operation = request->operation;
      free_.push_back(request);
      pending_.push_back(completion);  // failures surface at once, signaled or not
      if (request->operation != Operation::Receive) sendOrder_.completed(request->sendSequence, nullptr, pending_);
      continue;
    }
    if (n < 0) raise("fi_cq_read", n);
    for (ssize_t i = 0; i < n; ++i) {
      auto* request = static_cast<Request*>(entries[i].op_context);
      const Completion completion{request->id, request->operation, Status::Success,
                                  static_cast<std::uint32_t>(entries[i].data)};
      free_.push_back(request);
      if (request->operation == Operation::Receive) {
        pending_.push_back(completion);
      } else {
        sendOrder_.completed(request->sendSequence, request->signaled ? &completion : nullptr, pending_);
      }
    }
    if (static_cast<std::size_t>(n) < kReadBatch) return;
  }
}

void OfiQueuePair::progressIfUnattended() {
  const std::uint64_t polls = polls_.load(std::memory_order_relaxed);
  if (polls != pollsSeen_) {
    pollsSeen_ = polls;  // the rank is at it
    return;
  }
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;  // the rank is at it
  // What the rank left refused for now, then a read of no entries: the
  // provider's progress, and none of the rank's completions taken.
  try {
    if (!backlog_.empty() && deferred_ == nullptr) flush();
  } catch (const Error&) {
    deferred_ = std::current_exception();  // for the rank's next poll
  }
  fi_cq_data_entry none;
  (void)fi_cq_read(completions_, &none, 0);
  unattendedCalls_.fetch_add(1, std::memory_order_relaxed);
}

std::size_t OfiQueuePair::poll(Completion* out, std::size_t max) {
  polls_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  if (deferred_ != nullptr) std::rethrow_exception(deferred_);
  drain();
  flush();
  std::size_t n = 0;
  while (n < max && !pending_.empty()) {
    out[n++] = pending_.front();
    pending_.pop_front();
  }
  return n;
}

bool OfiQueuePair::arm() {
  // Sleeping is safe only when nothing is waiting in the queue, nothing is
  // left to post, and the provider has no progress of its own to make.
  std::lock_guard<std::mutex> lock(mutex_);
  if (!pending_.empty() || !backlog_.empty()) return false;
  fid* queue = &completions_->fid;
  return fi_trywait(device_->fabric(), &queue, 1) == 0;
}

std::vector<char> OfiQueuePair::address() const {
  std::vector<char> name(256);
  std::size_t length = name.size();
  const int rc = fi_getname(&endpoint_->fid, name.data(), &length);
  if (rc != 0) raise("fi_getname", rc);
  name.resize(length);
  return name;
}

void OfiQueuePair::connect(const std::vector<char>& peerAddress) {
  const int inserted = fi_av_insert(addresses_, peerAddress.data(), 1, &peer_, 0, nullptr);
  if (inserted != 1) raise("fi_av_insert", inserted < 0 ? inserted : -FI_EINVAL);
}

}  // namespace hora::transport::rdma::ofi
