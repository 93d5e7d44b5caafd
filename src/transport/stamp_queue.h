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

#include "transport/reused_queue.h"

namespace hora::transport {

template <typename T>  // T has a std::uint64_t `from`
class StampQueue {
 public:
  static constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();

  bool empty() const { return items_.empty(); }
  std::size_t size() const { return items_.size(); }
  // Where the oldest stamp's operation begins; kNone when there is none.
  std::uint64_t frontFrom() const { return frontFrom_; }
  T& front() { return items_.front(); }
  const T& front() const { return items_.front(); }
  T& back() { return items_.back(); }
  const T& back() const { return items_.back(); }

  void push_back(const T& item) {
    if (items_.empty()) frontFrom_ = item.from;
    items_.push_back(item);
  }
  void pop_front() {
    items_.pop_front();
    frontFrom_ = items_.empty() ? kNone : items_.front().from;
  }

 private:
  ReusedQueue<T> items_;
  std::uint64_t frontFrom_ = kNone;
};

}  // namespace hora::transport
