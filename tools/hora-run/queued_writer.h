// The launcher's own stdout and stderr, written by a thread of their own.
//
// hora-run must keep supervising while nobody reads what it prints: a pipe
// to a reader that stopped (a pager left open, a log shipper that stalled)
// would otherwise block it in write(), and with it the --timeout, the
// reaction to a failed rank and signal forwarding. So the supervisor only
// queues text here, and never waits. Ranks are held back instead: the
// supervisor stops reading a rank's pipe while the text already queued for
// its destination is above kBacklogLimit, so a rank that prints faster
// than the reader reads waits in its own write(), exactly as it would
// writing to that reader directly.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace hora::launcher {

class QueuedWriter {
 public:
  // Above this much unwritten text, output from ranks is no longer read.
  static constexpr std::size_t kBacklogLimit = 1 << 20;

  // Writes to `fd` (not owned). The thread inherits the caller's signal
  // mask: create it after the signals the launcher handles are blocked.
  explicit QueuedWriter(int fd);
  // Gives what is queued kLastWordsGrace to be written, then leaves a thread
  // still blocked in write() behind (the process is about to exit).
  ~QueuedWriter();
  static constexpr std::chrono::seconds kLastWordsGrace{1};
  QueuedWriter(const QueuedWriter&) = delete;
  QueuedWriter& operator=(const QueuedWriter&) = delete;

  // Queues `text` (whole lines) behind what is queued already; never blocks.
  // Once a write failed (the reader went away), text is dropped.
  void write(std::string text);
  // Text queued and not yet written.
  std::size_t backlog() const;
  bool over_backlog_limit() const { return backlog() > kBacklogLimit; }

  // Waits until nothing is left to write: everything queued is written, or
  // the reader is gone. With a `deadline`, false when it passed first;
  // without, waits as long as the reader does.
  bool drain(std::optional<std::chrono::steady_clock::time_point> deadline);
  // A write failed: the reader is gone, and text is dropped.
  bool reader_gone() const;
  // The caller stops waiting for this reader: the destructor will not wait
  // either.
  void give_up() { gave_up_ = true; }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable changed;
    std::deque<std::string> queue;
    std::size_t backlog = 0;  // bytes in queue, including the one being written
    bool broken = false;
    bool stop = false;
  };
  static void run(int fd, const std::shared_ptr<State>& state);

  std::shared_ptr<State> state_;  // shared with the thread, which may outlive this
  std::thread thread_;
  bool gave_up_ = false;  // give_up() was called
};

}  // namespace hora::launcher
