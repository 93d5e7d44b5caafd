// The Work that hora_torch's collectives return, and the queue that runs
// them. torch expects a backend's calls to return at once and complete in
// the background, in the order they were issued; hora's communicator may
// be used by one thread at a time. So each process group owns one thread
// that takes Works from a queue and runs them one after the other; a Work
// completes (wait(), is_completed(), its future) when its body returned.
//
// The completion, which runs the future's callbacks, is not the queue
// thread's: a callback may issue a collective and wait for it (DDP's
// PowerSGD hook does), and that collective's body runs on the queue thread.
// Completions run on threads of their own (Completions), a new one
// whenever those there are all still inside a callback, as Gloo's several
// worker threads let such a callback wait.
#pragma once

#include <ATen/core/ivalue.h>

#include <condition_variable>
#include <deque>
#include <exception>
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

  // Runs the body on the calling (queue) thread, keeping its error.
  void run();
  // Completes the future (running its callbacks), then the Work, with the
  // body's result or error. After run(), on a completion thread.
  void complete();

 private:
  std::vector<at::Tensor> outputs_;
  std::function<void()> body_;
  std::exception_ptr error_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// Threads that run completions in the order they come: as many as it takes
// for every posted completion to have a thread that is not inside another
// (whose callback may wait for a later Work): so one, while callbacks do
// not wait. Stopping finishes what was posted.
class Completions {
 public:
  Completions() = default;
  ~Completions();
  Completions(const Completions&) = delete;
  Completions& operator=(const Completions&) = delete;

  void post(std::function<void()> completion);

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> pending_;
  std::size_t running_ = 0;  // threads inside a completion
  bool stopping_ = false;
  std::vector<std::thread> threads_;
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
  Completions completions_;  // outlives the queue thread, which posts to it
  std::thread thread_;
};

}  // namespace hora_torch
