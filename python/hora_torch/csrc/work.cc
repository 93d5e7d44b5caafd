#include "work.h"

#include <Python.h>

#include <exception>

namespace hora_torch {

HoraWork::HoraWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
                   std::function<void()> body)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      body_(std::move(body)),
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get()))) {}

void HoraWork::run() {
  try {
    body_();
  } catch (...) {
    error_ = std::current_exception();
  }
  body_ = nullptr;  // releases the tensors the body captured
}

void HoraWork::complete() {
  // The future first, so that a caller woken by wait() finds the future
  // completed too (DDP waits on one and reads the other).
  if (error_)
    future_->setError(error_);
  else
    future_->markCompleted(c10::IValue(outputs_));
  finish(error_);
}

namespace {
// Joins `threads` without holding the interpreter lock: a thread may need
// it to finish (releasing a Work releases its future, which can hold
// Python callbacks), and an object dropped from Python is destroyed
// holding it.
void joinReleasingThePythonLock(std::vector<std::thread*> threads) {
  PyThreadState* state = nullptr;
  if (Py_IsInitialized() && PyGILState_Check()) state = PyEval_SaveThread();
  for (std::thread* thread : threads)
    if (thread->joinable()) thread->join();
  if (state != nullptr) PyEval_RestoreThread(state);
}
}  // namespace

Completions::~Completions() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  std::vector<std::thread*> all;
  for (std::thread& thread : threads_) all.push_back(&thread);
  joinReleasingThePythonLock(all);
}

void Completions::post(std::function<void()> completion) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back(std::move(completion));
    // Every completion waiting has a free thread to run it (one started or
    // woken and not yet inside a completion counts as free): a callback
    // may wait for any later Work, whose completion must then not wait
    // behind it. So a burst of completions starts threads only as far as
    // the ones before it are still busy.
    if (pending_.size() > threads_.size() - running_) threads_.emplace_back([this] { loop(); });
  }
  ready_.notify_one();
}

void Completions::loop() {
  for (;;) {
    std::function<void()> completion;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping, and nothing left to run
      completion = std::move(pending_.front());
      pending_.pop_front();
      ++running_;
    }
    completion();
    std::lock_guard<std::mutex> lock(mutex_);
    --running_;
  }
}

WorkQueue::WorkQueue() : thread_([this] { loop(); }) {}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_one();
  joinReleasingThePythonLock({&thread_});
}

void WorkQueue::push(c10::intrusive_ptr<HoraWork> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(work));
  }
  ready_.notify_one();
}

void WorkQueue::loop() {
  for (;;) {
    c10::intrusive_ptr<HoraWork> work;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to run
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work->run();
    completions_.post([work] { work->complete(); });
  }
}

}  // namespace hora_torch
