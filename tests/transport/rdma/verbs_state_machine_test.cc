// The verbs queue pair driven through a fake libibverbs table (there is no
// RDMA NIC here): the ibv_modify_qp steps that bring a reliable connection
// up (their order, masks and attributes, with the NCCL_IB_* settings in
// them), errors that name the call and errno, the work requests posted,
// and completions mapped back to the protocol's ids and statuses. Also:
// the table loads from the installed libibverbs.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "transport/rdma/verbs/qp_address.h"
#include "transport/rdma/verbs/qp_transitions.h"
#include "transport/rdma/verbs/verbs_api.h"
#include "transport/rdma/verbs/verbs_device.h"
#include "transport/rdma/verbs/verbs_queue_pair.h"

namespace hora::transport::rdma::verbs {
namespace {

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// ---------------------------------------------------------------- the fake

// What the fake library records and how it is told to fail. One at a time
// (the table holds plain function pointers, so its functions reach it
// through `current`).
struct FakeVerbs {
  static inline FakeVerbs* current = nullptr;

  struct Modify {
    ibv_qp_attr attributes;
    int mask;
  };
  std::vector<Modify> modifies;
  std::vector<ibv_send_wr> sends;
  std::vector<ibv_sge> sendPieces;
  std::vector<ibv_recv_wr> receives;
  std::deque<ibv_wc> completions;  // what ibv_poll_cq hands out
  std::vector<std::string> destroyed;
  std::vector<std::pair<void*, std::size_t>> registered;  // ibv_reg_mr's ranges
  std::vector<int> registeredAccess;                      // and their access flags
  int pendingEvents = 0;
  unsigned acknowledgedEvents = 0;
  int notifyRequests = 0;

  int failModifyAt = -1;  // the index of the ibv_modify_qp call that fails
  int modifyError = EINVAL;
  bool failCreateQp = false;

  ibv_comp_channel channel{};
  ibv_cq cq{};
  ibv_qp qp{};
  ibv_mr region{};
  std::deque<ibv_mr> moreRegions;
  VerbsApi api;

  FakeVerbs() {
    current = this;
    channel.fd = ::eventfd(0, 0);
    qp.qp_num = 0x1a2;
    region.lkey = 0x11;
    region.rkey = 0x22;
    api.createCompChannel = [](ibv_context*) { return &current->channel; };
    api.destroyCompChannel = [](ibv_comp_channel*) { return current->destroyed.push_back("channel"), 0; };
    api.createCq = [](ibv_context*, int, void*, ibv_comp_channel*, int) { return &current->cq; };
    api.destroyCq = [](ibv_cq*) { return current->destroyed.push_back("cq"), 0; };
    api.createQp = [](ibv_pd*, ibv_qp_init_attr*) -> ibv_qp* {
      if (current->failCreateQp) return errno = ENOMEM, nullptr;
      return &current->qp;
    };
    api.destroyQp = [](ibv_qp*) { return current->destroyed.push_back("qp"), 0; };
    api.modifyQp = [](ibv_qp*, ibv_qp_attr* attributes, int mask) {
      const int index = static_cast<int>(current->modifies.size());
      current->modifies.push_back({*attributes, mask});
      return index == current->failModifyAt ? current->modifyError : 0;
    };
    api.regMr = [](ibv_pd*, void* start, std::size_t bytes, int access) {
      // The first registration is `region`; later ones get keys of their own.
      current->registered.push_back({start, bytes});
      current->registeredAccess.push_back(access);
      if (current->registered.size() == 1) return &current->region;
      ibv_mr& more = current->moreRegions.emplace_back(current->region);
      more.lkey += static_cast<std::uint32_t>(0x100 * current->moreRegions.size());
      more.rkey += static_cast<std::uint32_t>(0x100 * current->moreRegions.size());
      return &more;
    };
    api.deregMr = [](ibv_mr*) { return current->destroyed.push_back("mr"), 0; };
    api.deallocPd = [](ibv_pd*) { return current->destroyed.push_back("pd"), 0; };
    api.closeDevice = [](ibv_context*) { return current->destroyed.push_back("context"), 0; };
    api.postSend = [](ibv_qp*, ibv_send_wr* request, ibv_send_wr**) {
      current->sends.push_back(*request);
      current->sendPieces.push_back(request->num_sge > 0 ? *request->sg_list : ibv_sge{});
      return 0;
    };
    api.postRecv = [](ibv_qp*, ibv_recv_wr* request, ibv_recv_wr**) {
      current->receives.push_back(*request);
      return 0;
    };
    api.pollCq = [](ibv_cq*, int entries, ibv_wc* out) {
      int n = 0;
      for (; n < entries && !current->completions.empty(); ++n) {
        out[n] = current->completions.front();
        current->completions.pop_front();
      }
      return n;
    };
    api.getCqEvent = [](ibv_comp_channel*, ibv_cq** cq, void**) {
      if (current->pendingEvents == 0) return errno = EAGAIN, -1;
      --current->pendingEvents;
      *cq = &current->cq;
      return 0;
    };
    api.ackCqEvents = [](ibv_cq*, unsigned events) { current->acknowledgedEvents += events; };
    api.reqNotifyCq = [](ibv_cq*, int) { return ++current->notifyRequests, 0; };
  }
  ~FakeVerbs() {
    ::close(channel.fd);
    current = nullptr;
  }

  // A port as openVerbsPort would leave it.
  std::shared_ptr<VerbsPort> port(LinkLayer layer, const IbSettings& settings = {}) {
    auto port = std::make_shared<VerbsPort>();
    port->api = &api;
    port->context = reinterpret_cast<ibv_context*>(0x1000);  // never dereferenced by the fake
    port->pd = reinterpret_cast<ibv_pd*>(0x2000);
    port->name = "mlx5_0:1";
    port->lid = 7;
    port->settings = settings;
    port->path.port = 1;
    port->path.linkLayer = layer;
    port->path.activeMtu = IBV_MTU_4096;
    port->path.gidIndex = layer == LinkLayer::Ethernet ? 3 : 0;
    port->path.gid = layer == LinkLayer::Ethernet ? Gid{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1}
                                                  : Gid{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return port;
  }
};

QpAddress peer(LinkLayer layer) {
  QpAddress address;
  address.linkLayer = layer;
  address.mtu = IBV_MTU_2048;
  address.lid = 9;
  address.qpNumber = 0x3b4;
  address.psn = 0x123456;
  address.gid = layer == LinkLayer::Ethernet ? Gid{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2}
                                             : Gid{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  return address;
}

constexpr int kInitMask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                         IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kRtsMask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                         IBV_QP_MAX_QP_RD_ATOMIC;

// Every variable readIbSettings reads, cleared for the test and restored.
class IbEnvironment {
 public:
  IbEnvironment() {
    for (const char* name : kNames) {
      if (const char* value = std::getenv(name)) saved_[name] = value;
      ::unsetenv(name);
    }
  }
  ~IbEnvironment() {
    for (const char* name : kNames) ::unsetenv(name);
    for (const auto& [name, value] : saved_) ::setenv(name.c_str(), value.c_str(), 1);
  }

 private:
  static constexpr const char* kNames[] = {"HORA_IB_TIMEOUT", "NCCL_IB_TIMEOUT", "HORA_IB_RETRY_CNT",
                                           "NCCL_IB_RETRY_CNT", "HORA_IB_TC", "NCCL_IB_TC", "HORA_IB_SL",
                                           "NCCL_IB_SL", "HORA_IB_GID_INDEX", "NCCL_IB_GID_INDEX"};
  std::map<std::string, std::string> saved_;
};

// ------------------------------------------------------- the state machine

TEST(VerbsStateMachine, CreationMovesTheQueuePairToInit) {
  FakeVerbs fake;
  VerbsQueuePair qp(fake.port(LinkLayer::InfiniBand), 16, 8);
  ASSERT_EQ(fake.modifies.size(), 1u);
  const auto& init = fake.modifies[0];
  EXPECT_EQ(init.attributes.qp_state, IBV_QPS_INIT);
  EXPECT_EQ(init.mask, kInitMask);
  EXPECT_EQ(init.attributes.port_num, 1);
  EXPECT_EQ(init.attributes.pkey_index, 0);
  EXPECT_EQ(init.attributes.qp_access_flags, static_cast<unsigned>(IBV_ACCESS_REMOTE_WRITE));
}

TEST(VerbsStateMachine, ConnectGoesThroughRtrThenRts) {
  FakeVerbs fake;
  VerbsQueuePair qp(fake.port(LinkLayer::InfiniBand), 16, 8);
  const QpAddress mine = parseQpAddress(qp.address());
  qp.connect(serialize(peer(LinkLayer::InfiniBand)));

  ASSERT_EQ(fake.modifies.size(), 3u);
  EXPECT_EQ(fake.modifies[0].attributes.qp_state, IBV_QPS_INIT);
  const auto& rtr = fake.modifies[1];
  EXPECT_EQ(rtr.attributes.qp_state, IBV_QPS_RTR);
  EXPECT_EQ(rtr.mask, kRtrMask);
  EXPECT_EQ(rtr.attributes.dest_qp_num, 0x3b4u);
  EXPECT_EQ(rtr.attributes.rq_psn, 0x123456u);               // the peer's first PSN
  EXPECT_EQ(rtr.attributes.path_mtu, IBV_MTU_2048);          // the smaller of the two
  EXPECT_EQ(rtr.attributes.min_rnr_timer, kMinRnrTimer);
  EXPECT_EQ(rtr.attributes.ah_attr.is_global, 0);            // InfiniBand: the LID routes
  EXPECT_EQ(rtr.attributes.ah_attr.dlid, 9);
  EXPECT_EQ(rtr.attributes.ah_attr.port_num, 1);
  const auto& rts = fake.modifies[2];
  EXPECT_EQ(rts.attributes.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(rts.mask, kRtsMask);
  EXPECT_EQ(rts.attributes.sq_psn, mine.psn);                // our first PSN, as we told the peer
  EXPECT_EQ(rts.attributes.timeout, 20);                     // NCCL's defaults
  EXPECT_EQ(rts.attributes.retry_cnt, 7);
  EXPECT_EQ(rts.attributes.rnr_retry, kRnrRetryForever);
}

TEST(VerbsStateMachine, RoceAddressesThePeerByGidFromTheChosenIndex) {
  FakeVerbs fake;
  VerbsQueuePair qp(fake.port(LinkLayer::Ethernet), 16, 8);
  const QpAddress remote = peer(LinkLayer::Ethernet);
  qp.connect(serialize(remote));
  ASSERT_EQ(fake.modifies.size(), 3u);
  const ibv_ah_attr& path = fake.modifies[1].attributes.ah_attr;
  EXPECT_EQ(path.is_global, 1);
  EXPECT_EQ(path.grh.sgid_index, 3);
  EXPECT_EQ(path.grh.hop_limit, 255);
  EXPECT_EQ(Gid(std::to_array(path.grh.dgid.raw)), remote.gid);
}

TEST(VerbsStateMachine, SettingsFromTheEnvironmentReachTheAttributes) {
  IbEnvironment clean;
  ::setenv("NCCL_IB_TIMEOUT", "14", 1);
  ::setenv("NCCL_IB_RETRY_CNT", "5", 1);
  ::setenv("NCCL_IB_TC", "106", 1);
  ::setenv("HORA_IB_SL", "3", 1);
  FakeVerbs fake;
  VerbsQueuePair qp(fake.port(LinkLayer::Ethernet, readIbSettings()), 16, 8);
  qp.connect(serialize(peer(LinkLayer::Ethernet)));
  ASSERT_EQ(fake.modifies.size(), 3u);
  EXPECT_EQ(fake.modifies[1].attributes.ah_attr.grh.traffic_class, 106);
  EXPECT_EQ(fake.modifies[1].attributes.ah_attr.sl, 3);
  EXPECT_EQ(fake.modifies[2].attributes.timeout, 14);
  EXPECT_EQ(fake.modifies[2].attributes.retry_cnt, 5);
}

TEST(VerbsStateMachine, AFailingTransitionNamesTheCallTheStateAndErrno) {
  FakeVerbs fake;
  fake.failModifyAt = 1;  // RTR
  fake.modifyError = EINVAL;
  VerbsQueuePair qp(fake.port(LinkLayer::InfiniBand), 16, 8);
  try {
    qp.connect(serialize(peer(LinkLayer::InfiniBand)));
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::System);
    EXPECT_CONTAINS(error.what(), "ibv_modify_qp to RTR");
    EXPECT_CONTAINS(error.what(), "EINVAL");
    EXPECT_CONTAINS(error.what(), "mlx5_0:1 qp 418");  // 0x1a2
  }
  EXPECT_EQ(fake.modifies.size(), 2u) << "no RTS after a failed RTR";
}

TEST(VerbsStateMachine, AFailingInitDuringCreationCleansUp) {
  FakeVerbs fake;
  fake.failModifyAt = 0;
  fake.modifyError = EPERM;
  try {
    VerbsQueuePair qp(fake.port(LinkLayer::InfiniBand), 16, 8);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_CONTAINS(error.what(), "ibv_modify_qp to INIT");
    EXPECT_CONTAINS(error.what(), "EPERM");
  }
  EXPECT_EQ(fake.destroyed, (std::vector<std::string>{"qp", "cq", "channel", "pd", "context"}));
}

TEST(VerbsStateMachine, AFailingCreateNamesTheCallAndErrno) {
  FakeVerbs fake;
  fake.failCreateQp = true;
  try {
    VerbsQueuePair qp(fake.port(LinkLayer::InfiniBand), 16, 8);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_CONTAINS(error.what(), "ibv_create_qp");
    EXPECT_CONTAINS(error.what(), "ENOMEM");
  }
  EXPECT_TRUE(fake.modifies.empty());
  EXPECT_EQ(fake.destroyed, (std::vector<std::string>{"cq", "channel", "pd", "context"}));
}

TEST(VerbsStateMachine, PortsOnDifferentFabricsDoNotConnect) {
  FakeVerbs fake;
  VerbsQueuePair qp(fake.port(LinkLayer::InfiniBand), 16, 8);
  QpAddress other = peer(LinkLayer::InfiniBand);
  other.gid[7] = 1;  // another subnet prefix
  EXPECT_THROW(qp.connect(serialize(other)), Error);
  EXPECT_THROW(qp.connect(serialize(peer(LinkLayer::Ethernet))), Error);
  EXPECT_EQ(fake.modifies.size(), 1u) << "only INIT";
}

TEST(VerbsStateMachine, TransitionsInIsolation) {
  // The builders alone, for what the queue pair tests do not vary.
  LocalPath local;
  local.activeMtu = IBV_MTU_1024;
  QpAddress remote = peer(LinkLayer::InfiniBand);
  remote.mtu = IBV_MTU_4096;
  EXPECT_EQ(toReadyToReceive(local, remote, {}).attributes.path_mtu, IBV_MTU_1024);
  EXPECT_STREQ(toInit(2).name, "INIT");
  EXPECT_EQ(toInit(2).attributes.port_num, 2);
  EXPECT_EQ(toReadyToSend(0xabcdef, {}).attributes.sq_psn, 0xabcdefu);
}

// ------------------------------------------------------------ the data path

TEST(VerbsQueuePairDataPath, WritesAndReceivesArePostedAsVerbsRequests) {
  FakeVerbs fake;
  VerbsQueuePair qp(fake.port(LinkLayer::InfiniBand), 16, 8);
  char buffer[64];
  const Region region = qp.registerMemory(buffer, sizeof(buffer), 0, Access::LocalRead);
  EXPECT_EQ(region.localKey, 0x11u);
  EXPECT_EQ(region.remoteKey, 0x22u);
  EXPECT_EQ(region.remoteAddress, reinterpret_cast<std::uintptr_t>(buffer));

  qp.postWrite(region, 8, 16, RemoteMemory{0x5000, 0x77}, 1, false);
  qp.postWriteWithImmediate(0xdeadbeef, 2);
  qp.postReceive(3);
  ASSERT_EQ(fake.sends.size(), 2u);
  EXPECT_EQ(fake.sends[0].opcode, IBV_WR_RDMA_WRITE);
  EXPECT_EQ(fake.sends[0].send_flags, 0u);
  EXPECT_EQ(fake.sends[0].wr.rdma.remote_addr, 0x5000u);
  EXPECT_EQ(fake.sends[0].wr.rdma.rkey, 0x77u);
  EXPECT_EQ(fake.sendPieces[0].addr, reinterpret_cast<std::uintptr_t>(buffer + 8));
  EXPECT_EQ(fake.sendPieces[0].length, 16u);
  EXPECT_EQ(fake.sendPieces[0].lkey, 0x11u);
  EXPECT_EQ(fake.sends[1].opcode, IBV_WR_RDMA_WRITE_WITH_IMM);
  EXPECT_EQ(fake.sends[1].send_flags, static_cast<unsigned>(IBV_SEND_SIGNALED));
  EXPECT_EQ(fake.sends[1].num_sge, 0);
  EXPECT_EQ(fake.sends[1].imm_data, htonl(0xdeadbeef));
  ASSERT_EQ(fake.receives.size(), 1u);
  EXPECT_EQ(fake.receives[0].num_sge, 0);
}

TEST(VerbsQueuePairDataPath, CompletionsMapBackToTheProtocolsIdsAndOperations) {
  FakeVerbs fake;
  VerbsQueuePair qp(fake.port(LinkLayer::InfiniBand), 16, 8);
  char buffer[64];
  const Region region = qp.registerMemory(buffer, sizeof(buffer), 0, Access::LocalRead);
  qp.postWrite(region, 0, 8, RemoteMemory{0x5000, 0x77}, 100, false);  // completes silently
  qp.postWrite(region, 8, 8, RemoteMemory{0x5008, 0x77}, 101, true);
  qp.postWriteWithImmediate(7, 102);
  qp.postReceive(200);
  qp.postReceive(201);

  // Completions name the verbs work request ids the fake saw posted; a
  // receive's opcode is what verbs reports, a failed one's is not read.
  ibv_wc write{};
  write.wr_id = fake.sends[1].wr_id;
  write.status = IBV_WC_SUCCESS;
  ibv_wc received{};
  received.wr_id = fake.receives[0].wr_id;
  received.status = IBV_WC_SUCCESS;
  received.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
  received.wc_flags = IBV_WC_WITH_IMM;
  received.imm_data = htonl(0x01020304);
  ibv_wc flushed{};
  flushed.wr_id = fake.receives[1].wr_id;
  flushed.status = IBV_WC_WR_FLUSH_ERR;
  flushed.opcode = static_cast<ibv_wc_opcode>(0x7f);  // undefined on error
  ibv_wc failedImmediate{};
  failedImmediate.wr_id = fake.sends[2].wr_id;
  failedImmediate.status = IBV_WC_REM_ACCESS_ERR;
  fake.completions = {write, received, flushed, failedImmediate};

  Completion out[8];
  ASSERT_EQ(qp.poll(out, 8), 4u);
  EXPECT_EQ(out[0].id, 101u);
  EXPECT_EQ(out[0].operation, Operation::Write);
  EXPECT_EQ(out[0].status, Status::Success);
  EXPECT_EQ(out[1].id, 200u);
  EXPECT_EQ(out[1].operation, Operation::Receive);
  EXPECT_EQ(out[1].immediate, 0x01020304u);
  EXPECT_EQ(out[2].id, 201u);
  EXPECT_EQ(out[2].operation, Operation::Receive);
  EXPECT_EQ(out[2].status, Status::Flushed);
  EXPECT_EQ(out[3].id, 102u);
  EXPECT_EQ(out[3].operation, Operation::WriteWithImmediate);
  EXPECT_EQ(out[3].status, Status::RemoteAccessError);
  EXPECT_EQ(qp.poll(out, 8), 0u);
}

TEST(VerbsQueuePairDataPath, PollStopsAtMax) {
  FakeVerbs fake;
  VerbsQueuePair qp(fake.port(LinkLayer::InfiniBand), 16, 8);
  for (std::uint64_t id = 0; id < 3; ++id) qp.postReceive(id);
  for (const auto& request : fake.receives) {
    ibv_wc done{};
    done.wr_id = request.wr_id;
    fake.completions.push_back(done);
  }
  Completion out[2];
  ASSERT_EQ(qp.poll(out, 2), 2u);
  EXPECT_EQ(out[1].id, 1u);
  ASSERT_EQ(qp.poll(out, 2), 1u);
  EXPECT_EQ(out[0].id, 2u);
}

TEST(VerbsQueuePairDataPath, StatusesMapAsTheSeamNamesThem) {
  EXPECT_EQ(statusOf(IBV_WC_SUCCESS), Status::Success);
  EXPECT_EQ(statusOf(IBV_WC_REM_ACCESS_ERR), Status::RemoteAccessError);
  EXPECT_EQ(statusOf(IBV_WC_RNR_RETRY_EXC_ERR), Status::ReceiverNotReady);
  EXPECT_EQ(statusOf(IBV_WC_WR_FLUSH_ERR), Status::Flushed);
  EXPECT_EQ(statusOf(IBV_WC_RETRY_EXC_ERR), Status::RetryExceeded);
  EXPECT_EQ(statusOf(IBV_WC_LOC_PROT_ERR), Status::LocalError);
  EXPECT_EQ(statusOf(IBV_WC_LOC_LEN_ERR), Status::LocalError);
}

TEST(VerbsQueuePairDataPath, ArmTakesAndAcknowledgesEventsThenRequestsANotification) {
  FakeVerbs fake;
  VerbsQueuePair qp(fake.port(LinkLayer::InfiniBand), 16, 8);
  EXPECT_EQ(qp.eventFd(), fake.channel.fd);
  fake.pendingEvents = 2;
  EXPECT_TRUE(qp.arm()) << "nothing waits in the queue: the caller may sleep";
  EXPECT_EQ(fake.pendingEvents, 0);
  EXPECT_EQ(fake.acknowledgedEvents, 2u);
  EXPECT_EQ(fake.notifyRequests, 1);
}

// A completion that arrived before the notification was requested raises
// no event: arm() finds it, says not to sleep, and the next poll hands it
// out.
TEST(VerbsQueuePairDataPath, ArmFindsACompletionThatCameBeforeTheRequest) {
  FakeVerbs fake;
  VerbsQueuePair qp(fake.port(LinkLayer::InfiniBand), 16, 8);
  qp.postReceive(41);
  ibv_wc done{};
  done.wr_id = fake.receives.front().wr_id;
  fake.completions.push_back(done);
  EXPECT_FALSE(qp.arm());
  EXPECT_FALSE(qp.arm()) << "still not handed out";
  Completion out[4];
  ASSERT_EQ(qp.poll(out, 4), 1u);
  EXPECT_EQ(out[0].id, 41u);
  EXPECT_EQ(out[0].operation, Operation::Receive);
  EXPECT_TRUE(qp.arm());
}

TEST(VerbsQueuePairDataPath, DestructionReleasesInOrder) {
  FakeVerbs fake;
  {
    VerbsQueuePair qp(fake.port(LinkLayer::InfiniBand), 16, 8);
    char buffer[8];
    qp.registerMemory(buffer, sizeof(buffer), 0, Access::LocalRead);
  }
  EXPECT_EQ(fake.destroyed, (std::vector<std::string>{"qp", "cq", "channel", "mr", "pd", "context"}));
}

// The queue pairs of one port share its registrations: a buffer two queue
// pairs register for the same owner (a connection's staging over two queue
// pairs, a program buffer sent to two peers) is registered once, and
// deregistered when the last of them lets go; another owner of the same
// address (memory freed and allocated again) gets its own.
TEST(VerbsQueuePairDataPath, QueuePairsOfOnePortRegisterABufferOnce) {
  FakeVerbs fake;
  auto port = fake.port(LinkLayer::InfiniBand);
  VerbsQueuePair first(port, 16, 8);
  VerbsQueuePair second(port, 16, 8);
  static char buffer[3 * 4096];
  const Region a = first.registerMemory(buffer + 10, 5000, 7, Access::LocalRead);
  const Region b = second.registerMemory(buffer + 10, 5000, 7, Access::LocalRead);
  ASSERT_EQ(fake.registered.size(), 1u);
  EXPECT_EQ(fake.registered[0].first, static_cast<void*>(buffer + 10));
  EXPECT_EQ(fake.registered[0].second, 5000u);
  const Region other = second.registerMemory(buffer + 10, 5000, 8, Access::LocalRead);
  EXPECT_EQ(fake.registered.size(), 2u) << "another owner's memory at the same address";
  second.deregisterMemory(other);
  fake.destroyed.clear();
  EXPECT_EQ(a.localKey, 0x11u);
  EXPECT_EQ(b.remoteKey, 0x22u);
  EXPECT_EQ(b.remoteAddress, reinterpret_cast<std::uintptr_t>(buffer + 10)) << "verbs names memory by address";
  first.deregisterMemory(a);
  EXPECT_TRUE(fake.destroyed.empty()) << "the second queue pair still uses it";
  EXPECT_THROW(first.deregisterMemory(a), Error) << "the first no longer holds it";
  second.deregisterMemory(b);
  EXPECT_EQ(fake.destroyed, (std::vector<std::string>{"mr"}));
}

// Least privilege: a write's source is registered with no access flag
// (local reads need none), so no peer can write into it; memory peers
// write into gets local and remote write. The same memory of the same
// owner needed both ways is two registrations, never one widened.
TEST(VerbsQueuePairDataPath, OnlyMemoryPeersWriteIntoIsRegisteredForRemoteWrites) {
  FakeVerbs fake;
  VerbsQueuePair qp(fake.port(LinkLayer::InfiniBand), 16, 8);
  static char buffer[256];
  const Region source = qp.registerMemory(buffer, sizeof(buffer), 9, Access::LocalRead);
  const Region target = qp.registerMemory(buffer, sizeof(buffer), 9, Access::RemoteWrite);
  ASSERT_EQ(fake.registeredAccess.size(), 2u);
  EXPECT_EQ(fake.registeredAccess[0], 0);
  EXPECT_EQ(fake.registeredAccess[1], IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  EXPECT_NE(source.localKey, target.localKey);
  qp.deregisterMemory(source);
  qp.deregisterMemory(target);
}

// GPUDirect RDMA by dma-buf: whether the NIC's driver registers one is
// asked as NCCL asks it, with a trial registration of descriptor -1, which
// a driver with dma-buf support refuses for the descriptor and one without
// refuses for the operation.
TEST(VerbsDmabuf, ATrialRegistrationAsksTheDriver) {
  FakeVerbs fake;
  auto port = fake.port(LinkLayer::InfiniBand);
  static int trialFd = 0;
  static int refusal = 0;
  fake.api.regDmabufMr = [](ibv_pd*, std::uint64_t, std::size_t bytes, std::uint64_t, int fd, int) -> ibv_mr* {
    trialFd = fd;
    EXPECT_EQ(bytes, 0u) << "the trial registers no memory";
    errno = refusal;
    return nullptr;
  };
  refusal = EBADF;
  EXPECT_TRUE(driverRegistersDmabuf(fake.api, port->pd));
  EXPECT_EQ(trialFd, -1);
  EXPECT_EQ(VerbsDevice(port).acceptsDmabuf(), std::optional<bool>(true));
  for (int unsupported : {EOPNOTSUPP, EPROTONOSUPPORT}) {
    refusal = unsupported;
    EXPECT_FALSE(driverRegistersDmabuf(fake.api, port->pd)) << unsupported;
  }
  fake.api.regDmabufMr = nullptr;  // a libibverbs older than rdma-core 34
  EXPECT_FALSE(driverRegistersDmabuf(fake.api, port->pd));
  EXPECT_EQ(VerbsDevice(port).acceptsDmabuf(), std::optional<bool>(false));
}

// --------------------------------------------------------- opening a port

// A device with one port, as the fake library reports it.
struct FakePort {
  static inline FakePort* current = nullptr;
  ibv_port_attr attributes{};
  std::vector<ibv_gid_entry> gids;
  bool pdFails = false;

  explicit FakePort(FakeVerbs& fake) {
    current = this;
    attributes.state = IBV_PORT_ACTIVE;
    attributes.active_mtu = IBV_MTU_4096;
    attributes.lid = 12;
    fake.api.getDeviceName = [](ibv_device*) { return "mlx5_2"; };
    fake.api.openDevice = [](ibv_device*) { return reinterpret_cast<ibv_context*>(0x1000); };
    fake.api.queryPort = [](ibv_context*, std::uint8_t, ibv_port_attr* out) {
      *out = current->attributes;
      return 0;
    };
    fake.api.queryGidEntry = [](ibv_context*, std::uint32_t, std::uint32_t index, ibv_gid_entry* out, std::uint32_t,
                                std::size_t) {
      if (index >= current->gids.size()) return ENODATA;
      *out = current->gids[index];
      return 0;
    };
    fake.api.allocPd = [](ibv_context*) -> ibv_pd* {
      if (current->pdFails) return errno = ENOMEM, nullptr;
      return reinterpret_cast<ibv_pd*>(0x2000);
    };
  }
  ~FakePort() { current = nullptr; }

  void addGid(const Gid& gid, ibv_gid_type type) {
    ibv_gid_entry entry{};
    std::copy(gid.begin(), gid.end(), entry.gid.raw);
    entry.gid_index = static_cast<std::uint32_t>(gids.size());
    entry.gid_type = type;
    gids.push_back(entry);
    attributes.gid_tbl_len = static_cast<int>(gids.size());
  }
};

const Gid kLinkLocal{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x1b, 0, 0, 0, 0, 0, 1};
const Gid kIpv4{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 5};

TEST(VerbsPortOpening, RoceGetsTheGidTheRulesChooseAndItsQueuePairsAdvertiseIt) {
  FakeVerbs fake;
  FakePort device(fake);
  device.attributes.link_layer = IBV_LINK_LAYER_ETHERNET;
  device.addGid(kLinkLocal, IBV_GID_TYPE_ROCE_V1);
  device.addGid(kLinkLocal, IBV_GID_TYPE_ROCE_V2);
  device.addGid(kIpv4, IBV_GID_TYPE_ROCE_V1);
  device.addGid(kIpv4, IBV_GID_TYPE_ROCE_V2);
  const auto port = openVerbsPort(fake.api, nullptr, 1, {});
  EXPECT_EQ(port->name, "mlx5_2:1");
  EXPECT_EQ(port->path.linkLayer, LinkLayer::Ethernet);
  EXPECT_EQ(port->path.gidIndex, 3);
  EXPECT_EQ(port->path.gid, kIpv4);
  EXPECT_EQ(port->lid, 12);

  VerbsQueuePair qp(port, 16, 8);
  const QpAddress mine = parseQpAddress(qp.address());
  EXPECT_EQ(mine.gid, kIpv4);
  EXPECT_EQ(mine.linkLayer, LinkLayer::Ethernet);
  EXPECT_EQ(mine.mtu, IBV_MTU_4096);
  EXPECT_EQ(mine.qpNumber, 0x1a2u);
  EXPECT_LT(mine.psn, 1u << 24);
}

TEST(VerbsPortOpening, TheGidIndexSettingReachesThePort) {
  FakeVerbs fake;
  FakePort device(fake);
  device.attributes.link_layer = IBV_LINK_LAYER_ETHERNET;
  device.addGid(kLinkLocal, IBV_GID_TYPE_ROCE_V1);
  device.addGid(kIpv4, IBV_GID_TYPE_ROCE_V2);
  IbSettings settings;
  settings.gidIndex = 0;
  EXPECT_EQ(openVerbsPort(fake.api, nullptr, 1, settings)->path.gidIndex, 0);
  settings.gidIndex = 5;
  EXPECT_THROW(openVerbsPort(fake.api, nullptr, 1, settings), Error);
}

TEST(VerbsPortOpening, InfinibandUsesGidZeroAndTheLid) {
  FakeVerbs fake;
  FakePort device(fake);
  device.attributes.link_layer = IBV_LINK_LAYER_INFINIBAND;
  device.addGid(kLinkLocal, IBV_GID_TYPE_IB);
  const auto port = openVerbsPort(fake.api, nullptr, 1, {});
  EXPECT_EQ(port->path.linkLayer, LinkLayer::InfiniBand);
  EXPECT_EQ(port->path.gidIndex, 0);
  EXPECT_EQ(port->path.gid, kLinkLocal);
}

TEST(VerbsPortOpening, AnInactivePortIsAnErrorNamingIt) {
  FakeVerbs fake;
  FakePort device(fake);
  device.attributes.state = IBV_PORT_DOWN;
  device.addGid(kLinkLocal, IBV_GID_TYPE_IB);
  try {
    openVerbsPort(fake.api, nullptr, 1, {});
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_CONTAINS(error.what(), "mlx5_2:1 is not active");
  }
  EXPECT_EQ(fake.destroyed, (std::vector<std::string>{"context"})) << "the device is closed again";
}

TEST(VerbsPortOpening, AFailingAllocationNamesTheCallAndErrno) {
  FakeVerbs fake;
  FakePort device(fake);
  device.addGid(kLinkLocal, IBV_GID_TYPE_IB);
  device.pdFails = true;
  try {
    openVerbsPort(fake.api, nullptr, 1, {});
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_CONTAINS(error.what(), "ibv_alloc_pd(mlx5_2:1)");
    EXPECT_CONTAINS(error.what(), "ENOMEM");
  }
}

// ------------------------------------------------------------- the address

TEST(QpAddress, RoundTrips) {
  const QpAddress address = peer(LinkLayer::Ethernet);
  const QpAddress back = parseQpAddress(serialize(address));
  EXPECT_EQ(back.linkLayer, address.linkLayer);
  EXPECT_EQ(back.mtu, address.mtu);
  EXPECT_EQ(back.lid, address.lid);
  EXPECT_EQ(back.qpNumber, address.qpNumber);
  EXPECT_EQ(back.psn, address.psn);
  EXPECT_EQ(back.gid, address.gid);
}

TEST(QpAddress, MalformedBytesAreARemoteError) {
  std::vector<char> bytes = serialize(peer(LinkLayer::InfiniBand));
  bytes.pop_back();
  try {
    parseQpAddress(bytes, "rank 3");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Remote);
    EXPECT_CONTAINS(error.what(), "rank 3");
  }
  bytes = serialize(peer(LinkLayer::InfiniBand));
  bytes[0] = 9;  // another format
  EXPECT_THROW(parseQpAddress(bytes), Error);
  bytes = serialize(peer(LinkLayer::InfiniBand));
  bytes[2] = 6;  // no such MTU
  EXPECT_THROW(parseQpAddress(bytes), Error);
}

// ----------------------------------------------------------- the real table

TEST(VerbsApi, TheInstalledLibraryFillsTheTable) {
  void* library = ::dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << "libibverbs is a build dependency";
  VerbsApi api;
  std::string why;
  ASSERT_TRUE(fillVerbsApi(library, api, why)) << why;
  for (const void* entry : {(void*)api.getDeviceList, (void*)api.freeDeviceList, (void*)api.getDeviceName,
                            (void*)api.openDevice, (void*)api.closeDevice, (void*)api.queryDevice,
                            (void*)api.queryPort, (void*)api.queryGid, (void*)api.allocPd, (void*)api.deallocPd,
                            (void*)api.regMr, (void*)api.deregMr, (void*)api.createCompChannel,
                            (void*)api.destroyCompChannel, (void*)api.createCq, (void*)api.destroyCq,
                            (void*)api.getCqEvent, (void*)api.ackCqEvents, (void*)api.createQp,
                            (void*)api.destroyQp, (void*)api.modifyQp, (void*)api.postSend, (void*)api.postRecv,
                            (void*)api.pollCq, (void*)api.reqNotifyCq})
    EXPECT_NE(entry, nullptr);
  // The versioned symbol, not whatever dlsym would find first.
  EXPECT_EQ((void*)api.modifyQp, ::dlvsym(library, "ibv_modify_qp", "IBVERBS_1.1"));
  EXPECT_NE((void*)api.modifyQp, ::dlvsym(library, "ibv_modify_qp", "IBVERBS_1.0"));
  // Optional: dma-buf registration where the library has it (Debian 12's does).
  EXPECT_EQ((void*)api.regDmabufMr, ::dlvsym(library, "ibv_reg_dmabuf_mr", "IBVERBS_1.12"));
  // Without a kernel RDMA stack the device list fails (ENOSYS) or is empty,
  // but the call goes through.
  int count = -1;
  ibv_device** devices = api.getDeviceList(&count);
  if (devices != nullptr) api.freeDeviceList(devices);
  ::dlclose(library);
}

TEST(VerbsApi, ALibraryWithoutTheSymbolsIsRefusedNamingThem) {
  void* library = ::dlopen("libc.so.6", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr);
  VerbsApi api;
  std::string why;
  EXPECT_FALSE(fillVerbsApi(library, api, why));
  EXPECT_CONTAINS(why, "ibv_get_device_list");
  EXPECT_CONTAINS(why, "ibv_modify_qp");
  ::dlclose(library);
}

TEST(VerbsApi, LoadsOncePerProcess) {
  std::string why;
  const VerbsApi* api = loadVerbsApi(&why);
  ASSERT_NE(api, nullptr) << why;
  EXPECT_EQ(loadVerbsApi(), api);
}

}  // namespace
}  // namespace hora::transport::rdma::verbs
