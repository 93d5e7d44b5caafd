// The buffers posted to one connection, in order, and the byte counters the
// executor watches. Every transport's connection keeps one and feeds it to
// its own move function (a socket call, a FIFO copy).
//
// A piece may also be "in place" (transports that expose their buffer,
// connection.h): it has no buffer of its own, the executor reads or writes
// the transport's memory and reports the bytes it moved with advance().
#pragma once

#include <cstddef>
#include <cstdint>

#include "transport/reused_queue.h"

namespace hora::transport {

template <typename Pointer>  // const char* for sends, char* for receives
class PostedQueue {
 public:
  void post(Pointer data, std::size_t bytes) {
    if (bytes == 0) return;
    pieces_.push_back({data, bytes, false});
    posted_ += bytes;
  }
  void postInPlace(std::size_t bytes) {
    if (bytes == 0) return;
    pieces_.push_back({nullptr, bytes, true});
    posted_ += bytes;
  }
  // Bytes that were posted and moved in one go (an in-place send).
  void countMoved(std::size_t bytes) {
    posted_ += bytes;
    completed_ += bytes;
  }

  // Calls move(pointer, bytes) -> bytes moved, front to back, until it
  // moves nothing, the queue is empty or an in-place piece is next. True if
  // anything moved.
  template <typename Move>
  bool drain(Move&& move) {
    bool moved = false;
    while (!pieces_.empty() && !pieces_.front().inPlace) {
      std::size_t n = move(pieces_.front().data, pieces_.front().left);
      if (n == 0) break;
      moved = true;
      advance(n);
    }
    return moved;
  }

  // The unmoved part of the oldest piece (the queue must not be empty).
  Pointer frontData() const { return pieces_.front().data; }
  std::size_t frontBytes() const { return pieces_.front().left; }
  bool frontInPlace() const { return !pieces_.empty() && pieces_.front().inPlace; }
  // Marks `bytes` of the oldest piece as moved.
  void advance(std::size_t bytes) {
    Piece& piece = pieces_.front();
    if (!piece.inPlace) piece.data += bytes;
    piece.left -= bytes;
    completed_ += bytes;
    if (piece.left == 0) pieces_.pop_front();
  }

  bool empty() const { return pieces_.empty(); }
  std::uint64_t posted() const { return posted_; }
  std::uint64_t completed() const { return completed_; }

 private:
  struct Piece {
    Pointer data;
    std::size_t left;
    bool inPlace;
  };
  ReusedQueue<Piece> pieces_;
  std::uint64_t posted_ = 0;
  std::uint64_t completed_ = 0;
};

}  // namespace hora::transport
