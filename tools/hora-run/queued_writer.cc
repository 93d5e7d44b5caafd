#include "queued_writer.h"

#include "posix_io.h"

namespace hora::launcher {

QueuedWriter::QueuedWriter(int fd) : state_(std::make_shared<State>()) {
  thread_ = std::thread([fd, state = state_] { run(fd, state); });
}

QueuedWriter::~QueuedWriter() {
  // What is queued still gets a moment (a launcher ending on an error has
  // just queued its message), unless the caller gave up on this reader.
  const bool drained = !gave_up_ && drain(std::chrono::steady_clock::now() + kLastWordsGrace);
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stop = true;
  }
  state_->changed.notify_all();
  // A thread blocked in write() to a reader that never reads cannot be
  // joined; it holds its own reference to the state and ends with the
  // process.
  if (drained || backlog() == 0 || reader_gone()) {
    thread_.join();
  } else {
    thread_.detach();
  }
}

void QueuedWriter::write(std::string text) {
  if (text.empty()) return;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->broken) return;
    state_->backlog += text.size();
    state_->queue.push_back(std::move(text));
  }
  state_->changed.notify_all();
}

std::size_t QueuedWriter::backlog() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->backlog;
}

bool QueuedWriter::drain(std::optional<std::chrono::steady_clock::time_point> deadline) {
  std::unique_lock<std::mutex> lock(state_->mutex);
  auto done = [&] { return state_->backlog == 0 || state_->broken; };
  if (!deadline) {
    state_->changed.wait(lock, done);
  } else if (!state_->changed.wait_until(lock, *deadline, done)) {
    return false;
  }
  return true;
}

bool QueuedWriter::reader_gone() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->broken;
}

void QueuedWriter::run(int fd, const std::shared_ptr<State>& state) {
  std::unique_lock<std::mutex> lock(state->mutex);
  while (true) {
    state->changed.wait(lock, [&] { return state->stop || !state->queue.empty(); });
    if (state->queue.empty()) return;  // stopped, and nothing left
    std::string text = std::move(state->queue.front());
    state->queue.pop_front();
    lock.unlock();
    const bool written = write_all(fd, text);
    lock.lock();
    state->backlog -= text.size();
    if (!written) {
      // The reader is gone: what is queued and what comes later is dropped,
      // so a closed pipe downstream never stops the ranks.
      state->broken = true;
      for (const std::string& dropped : state->queue) state->backlog -= dropped.size();
      state->queue.clear();
    }
    state->changed.notify_all();
  }
}

}  // namespace hora::launcher
