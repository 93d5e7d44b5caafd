// Small hora::Work implementations the data-parallel layer composes.
#pragma once

#include <exception>
#include <functional>
#include <utility>

#include "hora/communicator.h"

namespace hora::ddp {

// A Work with nothing to do (e.g. an empty bucket).
class CompletedWork final : public Work {
 public:
  bool test() override { return true; }
  void wait() override {}
  std::exception_ptr error() override { return nullptr; }
};

// A Work that already failed: lets a launch that threw report its error
// where the caller waits, like any other collective failure.
class FailedWork final : public Work {
 public:
  explicit FailedWork(std::exception_ptr error) : error_(std::move(error)) {}
  bool test() override { return true; }
  void wait() override { std::rethrow_exception(error_); }
  std::exception_ptr error() override { return error_; }

 private:
  std::exception_ptr error_;
};

// Runs `then` once, on the waiting thread, after `inner` succeeded (e.g. to
// decompress a result). If `then` throws, that becomes this Work's error.
class ContinuationWork final : public Work {
 public:
  ContinuationWork(WorkPtr inner, std::function<void()> then)
      : inner_(std::move(inner)), then_(std::move(then)) {}

  bool test() override {
    if (!inner_->test()) return false;
    if (!inner_->error()) runThenOnce();
    return true;
  }
  void wait() override {
    inner_->wait();
    runThenOnce();
    if (thenError_) std::rethrow_exception(thenError_);
  }
  std::exception_ptr error() override {
    return inner_->error() ? inner_->error() : thenError_;
  }

 private:
  void runThenOnce() {
    if (!then_) return;
    auto then = std::exchange(then_, nullptr);
    try {
      then();
    } catch (...) {
      thenError_ = std::current_exception();
    }
  }

  WorkPtr inner_;
  std::function<void()> then_;
  std::exception_ptr thenError_;
};

}  // namespace hora::ddp
