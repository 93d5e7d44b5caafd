// --tag-output: the ranks' stdout and stderr come to hora-run through pipes
// and leave it as whole lines, each prefixed with "[rank R] ". Because the
// launcher is one thread and writes every batch of whole lines with one
// write loop, lines of different ranks never mix, however the ranks' own
// writes were split.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "posix_io.h"

namespace hora::launcher {

// Receives text made only of whole, prefixed lines.
using LineSink = std::function<void(std::string_view)>;

// Splits one byte stream into lines and passes them on with a prefix.
class LineForwarder {
 public:
  // A line longer than this is passed on in pieces of this size, each ended
  // with a newline, so a rank that never prints one cannot grow our memory.
  static constexpr std::size_t kMaxLineBytes = 64 * 1024;

  LineForwarder(std::string prefix, LineSink sink);

  // Passes on every line `bytes` completes; keeps the unfinished rest.
  void append(std::string_view bytes);
  // End of stream: passes on an unfinished last line, adding its newline.
  void finish();

 private:
  void emit_line(std::string& batch, std::string_view line) const;

  std::string prefix_;
  LineSink sink_;
  std::string pending_;  // the start of a line whose newline has not come yet
};

// One pipe from a rank (its stdout or its stderr) and the forwarder its
// bytes go through.
class ForwardedStream {
 public:
  ForwardedStream(UniqueFd read_end, std::string prefix, LineSink sink);

  int fd() const { return read_end_.get(); }
  bool open() const { return read_end_.valid(); }
  // Reads what the pipe holds now (call when poll() reported it readable).
  // At end of stream, or if the pipe fails, flushes and closes it.
  void read_available();
  // Stops reading even if writers remain (a rank's leftover child may keep
  // the pipe open forever): forwards what is buffered and closes the pipe.
  void close_now();

 private:
  UniqueFd read_end_;
  LineForwarder lines_;
};

}  // namespace hora::launcher
