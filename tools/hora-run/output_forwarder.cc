#include "output_forwarder.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace hora::launcher {

LineForwarder::LineForwarder(std::string prefix, LineSink sink) : prefix_(std::move(prefix)), sink_(std::move(sink)) {}

void LineForwarder::emit_line(std::string& batch, std::string_view line) const {
  batch += prefix_;
  batch += line;
  batch += '\n';
}

void LineForwarder::append(std::string_view bytes) {
  std::string batch;
  while (!bytes.empty()) {
    std::size_t newline = bytes.find('\n');
    if (newline == std::string_view::npos) {
      pending_ += bytes;
      break;
    }
    if (pending_.empty()) {
      emit_line(batch, bytes.substr(0, newline));
    } else {
      pending_ += bytes.substr(0, newline);
      emit_line(batch, pending_);
      pending_.clear();
    }
    bytes.remove_prefix(newline + 1);
  }
  while (pending_.size() >= kMaxLineBytes) {
    emit_line(batch, std::string_view(pending_).substr(0, kMaxLineBytes));
    pending_.erase(0, kMaxLineBytes);
  }
  if (!batch.empty()) sink_(batch);
}

void LineForwarder::finish() {
  if (pending_.empty()) return;
  std::string batch;
  emit_line(batch, pending_);
  pending_.clear();
  sink_(batch);
}

ForwardedStream::ForwardedStream(UniqueFd read_end, std::string prefix, LineSink sink)
    : read_end_(std::move(read_end)), lines_(std::move(prefix), std::move(sink)) {
  // Non-blocking: one readable event must never make the launcher wait for
  // more bytes while other ranks (or signals) need attention.
  int flags = ::fcntl(read_end_.get(), F_GETFL);
  if (flags < 0 || ::fcntl(read_end_.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
    throw_errno("cannot make an output pipe non-blocking");
  }
}

void ForwardedStream::read_available() {
  if (!open()) return;
  char buffer[64 * 1024];
  ssize_t count = ::read(read_end_.get(), buffer, sizeof(buffer));
  if (count > 0) {
    lines_.append(std::string_view(buffer, static_cast<std::size_t>(count)));
    return;
  }
  if (count < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return;
  close_now();  // end of stream, or an error no retry would fix
}

void ForwardedStream::close_now() {
  if (!open()) return;
  // Forward what is already in the pipe before giving up on it; a bounded
  // number of reads, since a writer that keeps writing would never let the
  // pipe run dry.
  char buffer[64 * 1024];
  for (int reads = 0; reads < 16; ++reads) {
    ssize_t count = ::read(read_end_.get(), buffer, sizeof(buffer));
    if (count <= 0) break;
    lines_.append(std::string_view(buffer, static_cast<std::size_t>(count)));
  }
  lines_.finish();
  read_end_.reset();
}

}  // namespace hora::launcher
