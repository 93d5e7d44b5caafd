#include "transport/rdma/completion_wait.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "base/error.h"

namespace hora::transport::rdma {

CompletionWait::CompletionWait(const std::vector<std::unique_ptr<QueuePair>>& queuePairs) {
  if (queuePairs.size() < 2) return;
  for (const auto& qp : queuePairs)
    if (qp->eventFd() < 0) return;
  epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_ < 0) fail(ErrorKind::System, "RDMA: epoll_create1 failed: ", errnoText(errno));
  for (const auto& qp : queuePairs) {
    // Level-triggered: the set reads ready for as long as a member does,
    // and arm() empties a member before each sleep.
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = qp->eventFd();
    // Queue pairs may share one fd (one completion channel): it is in the
    // set once.
    if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, qp->eventFd(), &event) != 0 && errno != EEXIST) {
      const int error = errno;
      ::close(epoll_);
      epoll_ = -1;
      fail(ErrorKind::System, "RDMA: adding a completion fd to an epoll set failed: ", errnoText(error));
    }
  }
}

CompletionWait::~CompletionWait() {
  if (epoll_ >= 0) ::close(epoll_);
}

CompletionWait::CompletionWait(CompletionWait&& other) noexcept : epoll_(std::exchange(other.epoll_, -1)) {}

CompletionWait& CompletionWait::operator=(CompletionWait&& other) noexcept {
  if (this != &other) {
    if (epoll_ >= 0) ::close(epoll_);
    epoll_ = std::exchange(other.epoll_, -1);
  }
  return *this;
}

pollfd CompletionWait::entry(const std::vector<std::unique_ptr<QueuePair>>& queuePairs) const {
  constexpr pollfd kLookAgain{-1, POLLIN, 0};
  if (queuePairs.size() == 1) {
    QueuePair& qp = *queuePairs.front();
    if (qp.eventFd() < 0 || !qp.arm()) return kLookAgain;
    return {qp.eventFd(), POLLIN, 0};
  }
  if (epoll_ < 0) return kLookAgain;
  for (const auto& qp : queuePairs)
    if (!qp->arm()) return kLookAgain;
  return {epoll_, POLLIN, 0};
}

}  // namespace hora::transport::rdma
