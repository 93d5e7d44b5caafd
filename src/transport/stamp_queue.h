// The stamps a connection holds in stream order (op_stamp.h): usually one
// at a time, pushed and popped once per operation. A vector emptied in
// place keeps its storage, so that this costs no allocation per operation
// (a deque frees and allocates a block every few operations).
#pragma once

#include <cstddef>
#include <vector>

namespace hora::transport {

template <typename T>
class StampQueue {
 public:
  bool empty() const { return head_ == items_.size(); }
  std::size_t size() const { return items_.size() - head_; }
  T& front() { return items_[head_]; }
  const T& front() const { return items_[head_]; }
  T& back() { return items_.back(); }
  const T& back() const { return items_.back(); }
  void push_back(const T& item) { items_.push_back(item); }
  void pop_front() {
    if (++head_ == items_.size()) {
      items_.clear();
      head_ = 0;
    }
  }

 private:
  std::vector<T> items_;
  std::size_t head_ = 0;
};

}  // namespace hora::transport
