// The Work that hora_torch's collectives return, and the queue that runs
// them. torch expects a backend's calls to return at once and complete in
// the background, in the order they were issued; hora's communicator may
// be used by one thread at a time. So each process group owns one thread
// that takes Works from a queue and runs them one after the other; a Work
// completes (wait(), is_completed(), its future) when its body returned.
#pragma once

#include <ATen/core/ivalue.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "torch_compat.h"

namespace hora_torch {

class HoraWork : public c10d::Work {
 public:
  // `outputs` are the tensors the call writes (the future's value, as in
  // torch's own backends); `body` does the work on the queue's thread.
  HoraWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
           std::function<void()> body);

  std::vector<at::Tensor> result() override { return outputs_; }
  // DDP's reducer chains its bucket handling on this future.
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  // Runs the body on the calling (queue) thread; completes the Work and its
  // future with the result or the body's error.
  void run();

 private:
  std::vector<at::Tensor> outputs_;
  std::function<void()> body_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

class WorkQueue {
 public:
  WorkQueue();
  // Lets every queued Work finish (each is bounded by the communicator's
  // timeout), then stops the thread.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void push(c10::intrusive_ptr<HoraWork> work);

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<c10::intrusive_ptr<HoraWork>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace hora_torch
