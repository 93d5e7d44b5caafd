// The stamps a connection holds in stream order (op_stamp.h), each with
// the stream position `from` where its operation begins: usually one at a
// time, pushed and popped once per operation, and asked on every poll
// whether the oldest is due. So the storage is reused (no allocation per
// operation) and the oldest one's position is kept in one word: the check
// a poll makes is a load and a compare.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace hora::transport {

template <typename T>  // T has a std::uint64_t `from`
class StampQueue {
 public:
  static constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();

  bool empty() const { return head_ == tail_; }
  std::size_t size() const { return tail_ - head_; }
  // Where the oldest stamp's operation begins; kNone when there is none.
  std::uint64_t frontFrom() const { return frontFrom_; }
  T& front() { return items_[head_]; }
  const T& front() const { return items_[head_]; }
  T& back() { return items_[tail_ - 1]; }
  const T& back() const { return items_[tail_ - 1]; }

  void push_back(const T& item) {
    if (tail_ == capacity_) [[unlikely]]
      append(item);
    else
      items_[tail_] = item;
    if (tail_++ == head_) frontFrom_ = item.from;
  }
  void pop_front() {
    if (++head_ == tail_) {
      head_ = tail_ = 0;
      frontFrom_ = kNone;
    } else {
      frontFrom_ = items_[head_].from;
    }
  }

 private:
  // Out of line: growing is rare, and inlined it would give every caller
  // of push_back a stack frame.
  [[gnu::noinline]] void append(const T& item) {
    items_.push_back(item);
    capacity_ = items_.size();
  }

  std::vector<T> items_;
  std::size_t capacity_ = 0;  // items_.size(), without a division
  std::size_t head_ = 0, tail_ = 0;
  std::uint64_t frontFrom_ = kNone;
};

}  // namespace hora::transport
