#include "loopback_verbs.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>

#include "base/error.h"

namespace hora::transport::rdma::testing {

namespace {
struct Channel {
  ibv_comp_channel verbs{};
  ibv_cq* cq = nullptr;
};
struct Cq {
  ibv_cq verbs{};
  Channel* channel = nullptr;
  std::deque<ibv_wc> done;
  bool armed = false;
};
struct Qp {
  ibv_qp verbs{};
  Cq* sendCq = nullptr;
  Cq* recvCq = nullptr;
  std::deque<std::uint64_t> receives;
  std::uint32_t peer = 0;
};
struct Mr {
  ibv_mr verbs{};
  int access = 0;  // ibv_reg_mr's flags
};
}  // namespace

struct LoopbackVerbs::State {
  LoopbackVerbs* owner = nullptr;
  mutable std::mutex mutex;
  std::map<const ibv_comp_channel*, std::unique_ptr<Channel>> channels;
  std::map<const ibv_cq*, std::unique_ptr<Cq>> cqs;
  std::map<const ibv_qp*, std::unique_ptr<Qp>> qps;
  std::map<std::uint32_t, Qp*> qpByNumber;
  std::map<std::uint32_t, std::unique_ptr<Mr>> mrByKey;  // lkey == rkey here
  std::uint32_t nextQpNumber = 0x100;
  std::uint32_t nextKey = 0x1000;

  static inline State* current = nullptr;

  void complete(Cq& cq, const ibv_wc& completion) {
    cq.done.push_back(completion);
    if (!cq.armed) return;
    cq.armed = false;
    const std::uint64_t one = 1;
    if (::write(cq.channel->verbs.fd, &one, sizeof(one)) == sizeof(one)) ++owner->wakeUps_;
  }

  // The registration `key` names, if it covers [address, address + bytes).
  const Mr* covering(std::uint32_t key, std::uint64_t address, std::size_t bytes) const {
    const auto found = mrByKey.find(key);
    if (found == mrByKey.end()) return nullptr;
    const auto start = reinterpret_cast<std::uint64_t>(found->second->verbs.addr);
    if (address < start || address + bytes > start + found->second->verbs.length) return nullptr;
    return found->second.get();
  }

  ibv_wc_status write(const ibv_send_wr& request) {
    if (request.num_sge == 0) return IBV_WC_SUCCESS;
    const ibv_sge& piece = *request.sg_list;
    if (covering(piece.lkey, piece.addr, piece.length) == nullptr) return IBV_WC_LOC_PROT_ERR;
    const Mr* target = covering(request.wr.rdma.rkey, request.wr.rdma.remote_addr, piece.length);
    if (target == nullptr || (target->access & IBV_ACCESS_REMOTE_WRITE) == 0) return IBV_WC_REM_ACCESS_ERR;
    auto* into = reinterpret_cast<char*>(request.wr.rdma.remote_addr);
    const auto* from = reinterpret_cast<const char*>(piece.addr);
    const std::size_t bytes = piece.length;
    // Ascending addresses, the last eight bytes last, as a release: what the
    // credit records rely on (their sequence is last).
    if (bytes >= 8 && request.wr.rdma.remote_addr % 8 == 0 && bytes % 8 == 0) {
      std::memcpy(into, from, bytes - 8);
      std::uint64_t last;
      std::memcpy(&last, from + bytes - 8, 8);
      std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(into + bytes - 8))
          .store(last, std::memory_order_release);
    } else {
      std::memcpy(into, from, bytes);
    }
    owner->bytesWritten_ += bytes;
    return IBV_WC_SUCCESS;
  }

  // A write with immediate's arrival: the peer's oldest receive completes.
  ibv_wc_status deliver(Qp& peer, const ibv_send_wr& request) {
    if (peer.receives.empty()) return IBV_WC_RNR_RETRY_EXC_ERR;
    ibv_wc arrived{};
    arrived.wr_id = peer.receives.front();
    arrived.status = IBV_WC_SUCCESS;
    arrived.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
    arrived.imm_data = request.imm_data;  // network byte order, as sent
    arrived.wc_flags = IBV_WC_WITH_IMM;
    arrived.qp_num = peer.verbs.qp_num;
    peer.receives.pop_front();
    complete(*peer.recvCq, arrived);
    ++owner->immediates_;
    return IBV_WC_SUCCESS;
  }

  int postSend(ibv_qp* qp, ibv_send_wr* request, ibv_send_wr** bad) {
    std::lock_guard<std::mutex> lock(mutex);
    Qp& self = *qps.at(qp);
    for (; request != nullptr; request = request->next) {
      const bool known = request->opcode == IBV_WR_RDMA_WRITE || request->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
      if (self.verbs.state != IBV_QPS_RTS || !known) {
        *bad = request;
        return EINVAL;
      }
      const auto peer = qpByNumber.find(self.peer);
      ibv_wc_status status = peer == qpByNumber.end() ? IBV_WC_RETRY_EXC_ERR : write(*request);
      if (status == IBV_WC_SUCCESS && request->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
        status = deliver(*peer->second, *request);
      if ((request->send_flags & IBV_SEND_SIGNALED) != 0 || status != IBV_WC_SUCCESS) {
        ibv_wc done{};
        done.wr_id = request->wr_id;
        done.status = status;
        done.opcode = IBV_WC_RDMA_WRITE;
        done.qp_num = self.verbs.qp_num;
        complete(*self.sendCq, done);
      }
    }
    return 0;
  }
};

LoopbackVerbs::LoopbackVerbs() : state_(std::make_unique<State>()) {
  HORA_ENFORCE(State::current == nullptr, "one LoopbackVerbs at a time");
  state_->owner = this;
  State::current = state_.get();
  using S = State;
  api_.allocPd = [](ibv_context*) { return reinterpret_cast<ibv_pd*>(0x2000); };
  api_.deallocPd = [](ibv_pd*) { return 0; };
  api_.closeDevice = [](ibv_context*) { return 0; };
  api_.regMr = [](ibv_pd*, void* address, std::size_t bytes, int access) -> ibv_mr* {
    std::lock_guard<std::mutex> lock(S::current->mutex);
    auto mr = std::make_unique<Mr>();
    mr->access = access;
    mr->verbs.addr = address;
    mr->verbs.length = bytes;
    mr->verbs.lkey = mr->verbs.rkey = S::current->nextKey++;
    ibv_mr* out = &mr->verbs;
    S::current->mrByKey[out->lkey] = std::move(mr);
    return out;
  };
  api_.deregMr = [](ibv_mr* mr) {
    std::lock_guard<std::mutex> lock(S::current->mutex);
    return S::current->mrByKey.erase(mr->lkey) == 1 ? 0 : EINVAL;
  };
  api_.createCompChannel = [](ibv_context*) -> ibv_comp_channel* {
    std::lock_guard<std::mutex> lock(S::current->mutex);
    auto channel = std::make_unique<Channel>();
    channel->verbs.fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    ibv_comp_channel* out = &channel->verbs;
    S::current->channels[out] = std::move(channel);
    return out;
  };
  api_.destroyCompChannel = [](ibv_comp_channel* channel) {
    std::lock_guard<std::mutex> lock(S::current->mutex);
    ::close(channel->fd);
    return S::current->channels.erase(channel) == 1 ? 0 : EINVAL;
  };
  api_.createCq = [](ibv_context*, int entries, void* userContext, ibv_comp_channel* channel, int) -> ibv_cq* {
    std::lock_guard<std::mutex> lock(S::current->mutex);
    auto cq = std::make_unique<Cq>();
    cq->verbs.cqe = entries;
    cq->verbs.cq_context = userContext;
    cq->channel = S::current->channels.at(channel).get();
    cq->channel->cq = &cq->verbs;
    ibv_cq* out = &cq->verbs;
    S::current->cqs[out] = std::move(cq);
    return out;
  };
  api_.destroyCq = [](ibv_cq* cq) {
    std::lock_guard<std::mutex> lock(S::current->mutex);
    return S::current->cqs.erase(cq) == 1 ? 0 : EINVAL;
  };
  api_.getCqEvent = [](ibv_comp_channel* channel, ibv_cq** cq, void** userContext) {
    std::uint64_t events = 0;
    if (::read(channel->fd, &events, sizeof(events)) != sizeof(events)) return errno = EAGAIN, -1;
    std::lock_guard<std::mutex> lock(S::current->mutex);
    *cq = S::current->channels.at(channel)->cq;
    *userContext = (*cq)->cq_context;
    return 0;
  };
  api_.ackCqEvents = [](ibv_cq*, unsigned) {};
  api_.reqNotifyCq = [](ibv_cq* cq, int) {
    std::lock_guard<std::mutex> lock(S::current->mutex);
    S::current->cqs.at(cq)->armed = true;
    return 0;
  };
  api_.createQp = [](ibv_pd*, ibv_qp_init_attr* attributes) -> ibv_qp* {
    std::lock_guard<std::mutex> lock(S::current->mutex);
    auto qp = std::make_unique<Qp>();
    qp->verbs.qp_num = S::current->nextQpNumber++;
    qp->verbs.state = IBV_QPS_RESET;
    qp->sendCq = S::current->cqs.at(attributes->send_cq).get();
    qp->recvCq = S::current->cqs.at(attributes->recv_cq).get();
    ibv_qp* out = &qp->verbs;
    S::current->qpByNumber[out->qp_num] = qp.get();
    S::current->qps[out] = std::move(qp);
    ++S::current->owner->queuePairsMade_;
    return out;
  };
  api_.destroyQp = [](ibv_qp* qp) {
    std::lock_guard<std::mutex> lock(S::current->mutex);
    S::current->qpByNumber.erase(qp->qp_num);
    return S::current->qps.erase(qp) == 1 ? 0 : EINVAL;
  };
  api_.modifyQp = [](ibv_qp* qp, ibv_qp_attr* attributes, int mask) {
    std::lock_guard<std::mutex> lock(S::current->mutex);
    Qp& self = *S::current->qps.at(qp);
    if ((mask & IBV_QP_STATE) != 0) self.verbs.state = attributes->qp_state;
    if ((mask & IBV_QP_DEST_QPN) != 0) self.peer = attributes->dest_qp_num;
    return 0;
  };
  api_.postSend = [](ibv_qp* qp, ibv_send_wr* request, ibv_send_wr** bad) {
    return S::current->postSend(qp, request, bad);
  };
  api_.postRecv = [](ibv_qp* qp, ibv_recv_wr* request, ibv_recv_wr**) {
    std::lock_guard<std::mutex> lock(S::current->mutex);
    for (; request != nullptr; request = request->next) S::current->qps.at(qp)->receives.push_back(request->wr_id);
    return 0;
  };
  api_.pollCq = [](ibv_cq* cq, int entries, ibv_wc* out) {
    std::lock_guard<std::mutex> lock(S::current->mutex);
    Cq& self = *S::current->cqs.at(cq);
    int n = 0;
    for (; n < entries && !self.done.empty(); ++n) {
      out[n] = self.done.front();
      self.done.pop_front();
    }
    return n;
  };
}

LoopbackVerbs::~LoopbackVerbs() { State::current = nullptr; }

std::shared_ptr<verbs::VerbsPort> LoopbackVerbs::port(const verbs::IbSettings& settings) {
  auto port = std::make_shared<verbs::VerbsPort>();
  port->api = &api_;
  port->context = reinterpret_cast<ibv_context*>(0x1000);  // never dereferenced here
  port->pd = api_.allocPd(port->context);
  port->name = "loopback0:1";
  port->lid = 1;
  port->settings = settings;
  port->path.port = 1;
  port->path.linkLayer = verbs::LinkLayer::InfiniBand;
  port->path.activeMtu = IBV_MTU_4096;
  port->path.gidIndex = 0;
  port->path.gid = verbs::Gid{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  return port;
}

std::size_t LoopbackVerbs::registrationsInForce() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->mrByKey.size();
}

std::size_t LoopbackVerbs::queuePairsInForce() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->qps.size();
}

}  // namespace hora::transport::rdma::testing
