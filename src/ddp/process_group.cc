#include "hora/ddp/process_group.h"

namespace hora::ddp {

namespace {

class CommunicatorGroup final : public ProcessGroup {
 public:
  explicit CommunicatorGroup(Communicator& communicator) : communicator_(communicator) {}

  int rank() const override { return communicator_.rank(); }
  int size() const override { return communicator_.size(); }

  WorkPtr allReduce(void* buffer, std::size_t count, DataType type, RedOp op) override {
    return communicator_.allReduceAsync(buffer, buffer, count, type, op);
  }
  WorkPtr broadcast(void* buffer, std::size_t count, DataType type, int root) override {
    return communicator_.broadcastAsync(buffer, buffer, count, type, root);
  }
  WorkPtr allGather(const void* send, void* recv, std::size_t count, DataType type) override {
    return communicator_.allGatherAsync(send, recv, count, type);
  }
  void revoke() override { communicator_.revoke(); }

 private:
  Communicator& communicator_;
};

}  // namespace

std::shared_ptr<ProcessGroup> wrapCommunicator(Communicator& communicator) {
  return std::make_shared<CommunicatorGroup>(communicator);
}

}  // namespace hora::ddp
