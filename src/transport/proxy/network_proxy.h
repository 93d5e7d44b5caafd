// The thread that drives a rank's device network relays (fifo_relay.h):
// it moves slots between the FIFOs the rank's kernels use and its
// connections to ring neighbours on other hosts, for as long as the
// communicator lives. Kernels wait on the FIFOs, not on the proxy, so a
// proxy that stops (a connection failed) tells the rank through
// `onFailure`, which raises the flags the kernels' waits poll: they stop
// and the rank reports the proxy's error, naming the peer.
//
// Waiting: the proxy polls while slots move, then yields, then sleeps in
// short slices (a kernel that waits on it is a GPU waiting on a CPU, so
// it never sleeps long), and stops within a slice of stop(). While idle it
// asks its relays every 100 ms whether their peers still live (an RDMA
// connection learns of a gone peer only so).
//
// Ending: finish() relays what the kernels have published, sends the
// end-of-stream frame and stops, so that the peer's relay ends quietly
// (a communicator's destroy); stop() just stops (an abort).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "base/error.h"
#include "transport/proxy/fifo_relay.h"

namespace hora::transport::proxy {

class NetworkProxy {
 public:
  // Either relay may be null (a rank whose only link off the host is one
  // way). Starts the thread.
  NetworkProxy(std::unique_ptr<FifoSendRelay> send, std::unique_ptr<FifoRecvRelay> recv,
               std::function<void(const Error&)> onFailure);
  ~NetworkProxy();  // stop()
  NetworkProxy(const NetworkProxy&) = delete;
  NetworkProxy& operator=(const NetworkProxy&) = delete;

  // Ends the thread (and waits for it).
  void stop();
  // Ends the thread once every slot the kernels published has gone and
  // the end of the stream with it, or `timeout` has passed; then stop().
  void finish(std::chrono::milliseconds timeout);
  // Whether the thread has ended on a failure (onFailure was called).
  bool failed() const { return failed_.load(std::memory_order_acquire); }

 private:
  void run();

  std::unique_ptr<FifoSendRelay> send_;
  std::unique_ptr<FifoRecvRelay> recv_;
  std::function<void(const Error&)> onFailure_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> finishing_{false};
  std::chrono::steady_clock::time_point finishBy_;  // written before finishing_
  std::atomic<bool> failed_{false};
  std::thread thread_;  // last: started once the rest is in place
};

}  // namespace hora::transport::proxy
