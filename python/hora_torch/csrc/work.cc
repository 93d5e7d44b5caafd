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
  std::exception_ptr error;
  try {
    body_();
  } catch (...) {
    error = std::current_exception();
  }
  body_ = nullptr;  // releases the tensors the body captured
  // The future first, so that a caller woken by wait() finds the future
  // completed too (DDP waits on one and reads the other).
  if (error)
    future_->setError(error);
  else
    future_->markCompleted(c10::IValue(outputs_));
  finish(error);
}

WorkQueue::WorkQueue() : thread_([this] { loop(); }) {}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_one();
  // A process group dropped from Python is destroyed holding the
  // interpreter lock, and the queue thread may need that lock to finish:
  // releasing a Work releases its future, which can hold Python callbacks.
  // Waiting for the thread with the lock held would wait forever.
  if (Py_IsInitialized() && PyGILState_Check()) {
    PyThreadState* state = PyEval_SaveThread();
    thread_.join();
    PyEval_RestoreThread(state);
  } else {
    thread_.join();
  }
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
  }
}

}  // namespace hora_torch
