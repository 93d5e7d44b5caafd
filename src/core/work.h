// Completion state of an asynchronous operation (hora::Work).
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>

#include "hora/communicator.h"

namespace hora::core {

class WorkState final : public Work {
 public:
  bool test() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_;
  }
  void wait() override {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return done_; });
    if (error_) std::rethrow_exception(error_);
  }
  std::exception_ptr error() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }
  void complete(std::exception_ptr error) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
      error_ = error;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

}  // namespace hora::core
