// A FIFO queue whose storage is kept: a connection's queues (posted
// buffers, stamps) usually hold an item or two, pushed and popped once per
// operation, so they must not allocate per operation as std::deque does
// every few blocks. Items live in a vector between head_ and tail_; an
// emptied queue starts again at the front, and one that never empties
// moves its items to the front once the consumed ones are most of it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace hora::transport {

template <typename T>
class ReusedQueue {
 public:
  bool empty() const { return head_ == tail_; }
  std::size_t size() const { return tail_ - head_; }
  T& front() { return items_[head_]; }
  const T& front() const { return items_[head_]; }
  T& back() { return items_[tail_ - 1]; }
  const T& back() const { return items_[tail_ - 1]; }

  void push_back(const T& item) {
    if (tail_ == items_.size()) [[unlikely]]
      append(item);
    else
      items_[tail_] = item;
    ++tail_;
  }
  void pop_front() {
    if (++head_ == tail_) {
      head_ = tail_ = 0;
    } else if (head_ >= kCompactAfter && head_ * 2 >= tail_) {
      std::move(items_.begin() + static_cast<std::ptrdiff_t>(head_),
                items_.begin() + static_cast<std::ptrdiff_t>(tail_), items_.begin());
      tail_ -= head_;
      head_ = 0;
    }
  }

 private:
  static constexpr std::size_t kCompactAfter = 64;
  // Out of line: growing is rare, and inlined it would give every caller of
  // push_back a stack frame.
  [[gnu::noinline]] void append(const T& item) { items_.push_back(item); }

  std::vector<T> items_;  // [head_, tail_) in use; the rest kept for reuse
  std::size_t head_ = 0, tail_ = 0;
};

}  // namespace hora::transport
