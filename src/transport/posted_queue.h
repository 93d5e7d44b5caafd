// The buffers posted to one connection, in order, and the byte counters the
// executor watches. Every transport's connection keeps one and feeds it to
// its own move function (a socket call, a FIFO copy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

namespace hora::transport {

template <typename Pointer>  // const char* for sends, char* for receives
class PostedQueue {
 public:
  void post(Pointer data, std::size_t bytes) {
    if (bytes == 0) return;
    pieces_.push_back({data, bytes});
    posted_ += bytes;
  }

  // Calls move(pointer, bytes) -> bytes moved, front to back, until it
  // moves nothing or the queue is empty. True if anything moved.
  template <typename Move>
  bool drain(Move&& move) {
    bool moved = false;
    while (!pieces_.empty()) {
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
  // Marks `bytes` of the oldest piece as moved.
  void advance(std::size_t bytes) {
    Piece& piece = pieces_.front();
    piece.data += bytes;
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
  };
  std::deque<Piece> pieces_;
  std::uint64_t posted_ = 0;
  std::uint64_t completed_ = 0;
};

}  // namespace hora::transport
