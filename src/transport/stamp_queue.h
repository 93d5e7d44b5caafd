// The stamps a connection holds in stream order (op_stamp.h), each with
// the stream position `from` where its operation begins. A collective
// holds at most one per connection (pushed when the operation begins,
// popped when its first bytes leave or arrive), and every poll asks
// whether it is due; only a group of several messages to one peer queues
// more. So the oldest lives in the queue object itself and the rest in
// reused storage: pushing and popping the one stamp of a collective
// copies it once and touches no index, and the check a poll makes is a
// load and a compare of the oldest one's position.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "transport/reused_queue.h"

namespace hora::transport {

template <typename T>  // T has a std::uint64_t `from`, never kNone
class StampQueue {
 public:
  static constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();

  bool empty() const { return frontFrom_ == kNone; }
  std::size_t size() const { return empty() ? 0 : 1 + rest_.size(); }
  // Where the oldest stamp's operation begins; kNone when there is none.
  std::uint64_t frontFrom() const { return frontFrom_; }
  // Where the second oldest's operation begins; kNone when there is none.
  std::uint64_t nextFrom() const { return rest_.empty() ? kNone : rest_.front().from; }
  T& front() { return front_; }
  const T& front() const { return front_; }
  T& back() { return rest_.empty() ? front_ : rest_.back(); }
  const T& back() const { return rest_.empty() ? front_ : rest_.back(); }

  void push_back(const T& item) {
    if (empty()) {
      front_ = item;
      frontFrom_ = item.from;
      return;
    }
    rest_.push_back(item);
  }
  void pop_front() {
    if (rest_.empty()) {
      frontFrom_ = kNone;
      return;
    }
    front_ = rest_.front();
    rest_.pop_front();
    frontFrom_ = front_.from;
  }

 private:
  T front_{};
  std::uint64_t frontFrom_ = kNone;
  ReusedQueue<T> rest_;
};

}  // namespace hora::transport
