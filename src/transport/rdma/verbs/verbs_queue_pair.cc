#include "transport/rdma/verbs/verbs_queue_pair.h"

#include <arpa/inet.h>
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <random>

#include "base/error.h"
#include "transport/rdma/verbs/fabric.h"
#include "transport/rdma/verbs/qp_transitions.h"

namespace hora::transport::rdma::verbs {

namespace {

// Receive work requests carry this bit in their verbs id, so a completion
// says which queue it came from even when it failed.
constexpr std::uint64_t kReceiveBit = std::uint64_t{1} << 63;

std::uint32_t randomPsn() {
  std::random_device random;
  return random() & 0xffffff;  // 24 bits
}

int verbsAccessFlags(Access access) {
  // Local reads need no flag; remote writes need local writes too.
  return access == Access::RemoteWrite ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE : 0;
}

}  // namespace

Status statusOf(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS: return Status::Success;
    case IBV_WC_REM_ACCESS_ERR: return Status::RemoteAccessError;
    case IBV_WC_RNR_RETRY_EXC_ERR: return Status::ReceiverNotReady;
    case IBV_WC_WR_FLUSH_ERR: return Status::Flushed;
    case IBV_WC_RETRY_EXC_ERR: return Status::RetryExceeded;
    default: return Status::LocalError;
  }
}

VerbsQueuePair::VerbsQueuePair(std::shared_ptr<VerbsPort> port, std::size_t sendDepth, std::size_t receiveDepth)
    : port_(std::move(port)), api_(*port_->api), sendDepth_(sendDepth), receiveDepth_(receiveDepth) {
  try {
    errno = 0;
    channel_ = api_.createCompChannel(port_->context);
    if (channel_ == nullptr) fail(ErrorKind::System, "verbs: ibv_create_comp_channel failed for ", what(), ": ", errnoText(errno));
    // Non-blocking, so arm() can drain its events without waiting.
    const int flags = ::fcntl(channel_->fd, F_GETFL);
    if (flags < 0 || ::fcntl(channel_->fd, F_SETFL, flags | O_NONBLOCK) != 0)
      fail(ErrorKind::System, "verbs: fcntl(O_NONBLOCK) on the completion channel failed for ", what(), ": ", errnoText(errno));

    errno = 0;
    cq_ = api_.createCq(port_->context, static_cast<int>(sendDepth_ + receiveDepth_), this, channel_, 0);
    if (cq_ == nullptr) fail(ErrorKind::System, "verbs: ibv_create_cq failed for ", what(), ": ", errnoText(errno));

    ibv_qp_init_attr init{};
    init.send_cq = cq_;
    init.recv_cq = cq_;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = static_cast<std::uint32_t>(sendDepth_);
    init.cap.max_recv_wr = static_cast<std::uint32_t>(receiveDepth_);
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    init.sq_sig_all = 0;  // each write says whether it is signaled
    errno = 0;
    qp_ = api_.createQp(port_->pd, &init);
    if (qp_ == nullptr) fail(ErrorKind::System, "verbs: ibv_create_qp failed for ", what(), ": ", errnoText(errno));

    psn_ = randomPsn();
    applyTransition(api_, qp_, toInit(port_->path.port), what());
  } catch (...) {
    release();
    throw;
  }
}

VerbsQueuePair::~VerbsQueuePair() { release(); }

void VerbsQueuePair::release() {
  // The queue pair before its completion queue, that before its channel.
  if (qp_ != nullptr) api_.destroyQp(qp_), qp_ = nullptr;
  if (cq_ != nullptr) api_.destroyCq(cq_), cq_ = nullptr;
  if (channel_ != nullptr) api_.destroyCompChannel(channel_), channel_ = nullptr;
  for (const HeldRegion& held : regions_) releaseRegion(held);
  regions_.clear();
}

std::string VerbsQueuePair::what() const {
  return qp_ != nullptr ? strCat(port_->name, " qp ", qp_->qp_num) : port_->name;
}

Region VerbsQueuePair::registerMemory(void* base, std::size_t bytes, std::uint64_t owner, Access access) {
  regions_.reserve(regions_.size() + 1);  // so that keeping what was acquired cannot throw
  auto make = [&](char* start, std::size_t length) {
    errno = 0;
    ibv_mr* mr = api_.regMr(port_->pd, start, length, verbsAccessFlags(access));
    if (mr == nullptr)
      fail(ErrorKind::System, "verbs: ibv_reg_mr of ", length, " bytes failed for ", what(), ": ", errnoText(errno));
    // Verbs names registered memory by virtual address.
    return Registration{mr->lkey, mr->rkey, reinterpret_cast<std::uintptr_t>(start), mr};
  };
  const HeldRegion held = port_->registrations.acquire(owner, base, bytes, access, make, endRegistration());
  regions_.push_back(held);
  return held.region;
}

void VerbsQueuePair::deregisterMemory(const Region& region) {
  const std::optional<HeldRegion> held = takeHeldRegion(regions_, region);
  HORA_ENFORCE(held.has_value(), "verbs: deregistering memory that ", what(), " never registered");
  releaseRegion(*held);
}

void VerbsQueuePair::releaseRegion(const HeldRegion& held) { port_->registrations.release(held, endRegistration()); }

void VerbsQueuePair::postSend(ibv_send_wr& request, std::uint64_t id, Operation operation, bool signaled) {
  const std::uint64_t sequence = nextSequence_++;
  request.wr_id = sequence;
  request.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
  ibv_send_wr* bad = nullptr;
  if (const int result = api_.postSend(qp_, &request, &bad); result != 0)
    fail(ErrorKind::System, "verbs: ibv_post_send failed for ", what(), ": ", errnoText(result));
  sends_.push_back({sequence, id, operation, signaled});
}

void VerbsQueuePair::postWrite(const Region& from, std::size_t offset, std::size_t bytes, RemoteMemory to,
                               std::uint64_t id, bool signaled) {
  ibv_sge piece{};
  piece.addr = reinterpret_cast<std::uintptr_t>(from.base + offset);
  piece.length = static_cast<std::uint32_t>(bytes);
  piece.lkey = static_cast<std::uint32_t>(from.localKey);
  ibv_send_wr request{};
  request.opcode = IBV_WR_RDMA_WRITE;
  request.sg_list = &piece;
  request.num_sge = bytes > 0 ? 1 : 0;
  request.wr.rdma.remote_addr = to.address;
  request.wr.rdma.rkey = static_cast<std::uint32_t>(to.key);
  postSend(request, id, Operation::Write, signaled);
}

void VerbsQueuePair::postWriteWithImmediate(std::uint32_t immediate, std::uint64_t id) {
  ibv_send_wr request{};
  request.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  request.num_sge = 0;  // no bytes: no remote address or key is checked
  request.imm_data = htonl(immediate);
  postSend(request, id, Operation::WriteWithImmediate, true);
}

void VerbsQueuePair::postReceive(std::uint64_t id) {
  const std::uint64_t sequence = nextSequence_++;
  ibv_recv_wr request{};
  request.wr_id = sequence | kReceiveBit;
  request.num_sge = 0;
  ibv_recv_wr* bad = nullptr;
  if (const int result = api_.postRecv(qp_, &request, &bad); result != 0)
    fail(ErrorKind::System, "verbs: ibv_post_recv failed for ", what(), ": ", errnoText(result));
  receives_.push_back({sequence, id, Operation::Receive, true});
}

Completion VerbsQueuePair::retire(const ibv_wc& completion) {
  const bool receive = (completion.wr_id & kReceiveBit) != 0;
  const std::uint64_t sequence = completion.wr_id & ~kReceiveBit;
  auto& queue = receive ? receives_ : sends_;
  // Requests before it on its queue are done: unsignaled writes complete
  // silently, with a later signaled one.
  while (!queue.empty() && queue.front().sequence < sequence) queue.pop_front();
  HORA_ENFORCE(!queue.empty() && queue.front().sequence == sequence, "verbs: ", what(),
               " completed work request ", completion.wr_id, ", which it did not post");
  const Posted posted = queue.front();
  queue.pop_front();
  Completion out;
  out.id = posted.id;
  out.operation = posted.operation;
  out.status = statusOf(completion.status);
  if (receive && out.status == Status::Success && (completion.wc_flags & IBV_WC_WITH_IMM) != 0)
    out.immediate = ntohl(completion.imm_data);
  return out;
}

std::size_t VerbsQueuePair::poll(Completion* out, std::size_t max) {
  constexpr std::size_t kBatch = 32;
  ibv_wc completions[kBatch];
  std::size_t done = 0;
  // Those arm() found first.
  while (done < max && !early_.empty()) {
    out[done++] = early_.front();
    early_.pop_front();
  }
  while (done < max) {
    const int want = static_cast<int>(std::min(kBatch, max - done));
    const int got = api_.pollCq(cq_, want, completions);
    if (got < 0) fail(ErrorKind::System, "verbs: ibv_poll_cq failed for ", what(), " (", got, ")");
    for (int i = 0; i < got; ++i) out[done++] = retire(completions[i]);
    if (got < want) break;
  }
  return done;
}

int VerbsQueuePair::eventFd() const { return channel_->fd; }

bool VerbsQueuePair::arm() {
  // Take the events that woke us, so the fd reads empty again: every event
  // taken must be acknowledged before the CQ can be destroyed.
  unsigned int events = 0;
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  while (api_.getCqEvent(channel_, &cq, &context) == 0) ++events;
  if (events > 0) api_.ackCqEvents(cq_, events);
  if (const int result = api_.reqNotifyCq(cq_, 0); result != 0)
    fail(ErrorKind::System, "verbs: ibv_req_notify_cq failed for ", what(), ": ", errnoText(result));
  // A completion that came after the last poll but before the request for
  // notification raises no event: look once more, and keep what is found
  // for the next poll instead of sleeping past it.
  if (!early_.empty()) return false;
  Completion found[8];
  const std::size_t n = poll(found, 8);
  early_.insert(early_.end(), found, found + n);
  return n == 0;
}

std::vector<char> VerbsQueuePair::address() const {
  QpAddress address;
  address.linkLayer = port_->path.linkLayer;
  address.mtu = port_->path.activeMtu;
  address.lid = port_->lid;
  address.qpNumber = qp_->qp_num;
  address.psn = psn_;
  address.gid = port_->path.gid;
  return serialize(address);
}

void VerbsQueuePair::connect(const std::vector<char>& peerAddress) {
  const QpAddress remote = parseQpAddress(peerAddress);
  const LocalPath& local = port_->path;
  if (!shareFabric({local.linkLayer, local.gid}, {remote.linkLayer, remote.gid}))
    fail(ErrorKind::InvalidUsage, "verbs: ", port_->name, " (", linkLayerName(local.linkLayer), ", GID ",
         gidText(local.gid), ") cannot reach the peer's port (", linkLayerName(remote.linkLayer), ", GID ",
         gidText(remote.gid), "): different link layers or InfiniBand subnets; choose ports with NCCL_IB_HCA");
  applyTransition(api_, qp_, toReadyToReceive(local, remote, port_->settings), what());
  applyTransition(api_, qp_, toReadyToSend(psn_, port_->settings), what());
}

}  // namespace hora::transport::rdma::verbs
