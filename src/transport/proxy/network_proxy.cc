#include "transport/proxy/network_proxy.h"

#include <sched.h>

#include <chrono>
#include <exception>

namespace hora::transport::proxy {

namespace {
// Polls without a pause while slots keep coming, then yields the core a
// while, then sleeps this long between looks.
constexpr int kBusyPolls = 1000;
constexpr int kYields = 1000;
constexpr auto kSleepSlice = std::chrono::microseconds(20);
constexpr auto kLivenessPeriod = std::chrono::milliseconds(100);
}  // namespace

NetworkProxy::NetworkProxy(std::unique_ptr<FifoSendRelay> send, std::unique_ptr<FifoRecvRelay> recv,
                           std::function<void(const Error&)> onFailure)
    : send_(std::move(send)), recv_(std::move(recv)), onFailure_(std::move(onFailure)) {
  thread_ = std::thread([this] { run(); });
}

NetworkProxy::~NetworkProxy() { stop(); }

void NetworkProxy::stop() {
  stopping_.store(true, std::memory_order_release);
  if (thread_.joinable()) thread_.join();
}

void NetworkProxy::finish(std::chrono::milliseconds timeout) {
  finishBy_ = std::chrono::steady_clock::now() + timeout;
  finishing_.store(true, std::memory_order_release);
  if (thread_.joinable()) thread_.join();  // it ends itself once finished
}

void NetworkProxy::run() {
  int idle = 0;
  auto lastLivenessCheck = std::chrono::steady_clock::now();
  try {
    while (!stopping_.load(std::memory_order_acquire)) {
      bool moved = false;
      if (send_) moved |= send_->progress();
      if (recv_) moved |= recv_->progress();
      if (finishing_.load(std::memory_order_acquire)) {
        if (!send_ || std::chrono::steady_clock::now() > finishBy_) return;
        if (send_->drained()) send_->sendEnd();
        if (send_->ended()) return;
      }
      if (moved) {
        idle = 0;
        continue;
      }
      if (++idle > kBusyPolls + kYields) {
        std::this_thread::sleep_for(kSleepSlice);
      } else if (idle > kBusyPolls) {
        sched_yield();
      }
      if (idle > kBusyPolls && std::chrono::steady_clock::now() - lastLivenessCheck > kLivenessPeriod) {
        lastLivenessCheck = std::chrono::steady_clock::now();
        if (send_) send_->checkAlive();
        if (recv_) recv_->checkAlive();
      }
    }
  } catch (const Error& error) {
    failed_.store(true, std::memory_order_release);
    onFailure_(error);
  } catch (const std::exception& error) {
    failed_.store(true, std::memory_order_release);
    onFailure_(Error(ErrorKind::Internal, strCat("the device network proxy failed: ", error.what())));
  }
}

}  // namespace hora::transport::proxy
