// Logging, controlled by HORA_DEBUG (or NCCL_DEBUG): NONE (default), WARN,
// INFO, TRACE. Lines go to stderr (or HORA_DEBUG_FILE), prefixed with host,
// pid and the rank the calling thread works for:
//   vm:1234:[rank 2] hora INFO ring 0: 1 -> 2 -> 3 -> 0
#pragma once

#include "base/error.h"

namespace hora::log {

enum class Level : int { None = 0, Warn = 1, Info = 2, Trace = 3 };

Level threshold();
inline bool enabled(Level level) { return static_cast<int>(level) <= static_cast<int>(threshold()); }
void write(Level level, const std::string& message);
// HORA_DEBUG_FILE / NCCL_DEBUG_FILE as NCCL reads it: %h becomes the host
// name, %p the process id, %% a percent sign (so that each process of a
// job writes a file of its own).
std::string expandDebugFilePath(const std::string& pattern, const std::string& host, long pid);

// The rank named in this thread's log lines (-1: none). Set by whoever
// drives a communicator on this thread.
void setThreadRank(int rank);
int threadRank();
// setThreadRank, returning the rank it replaces: one look-up of the
// thread-local slot instead of two, on the path of every call.
int exchangeThreadRank(int rank);

class ScopedThreadRank {
 public:
  explicit ScopedThreadRank(int rank) : previous_(exchangeThreadRank(rank)) {}
  ~ScopedThreadRank() { setThreadRank(previous_); }

 private:
  int previous_;
};

}  // namespace hora::log

#define HORA_LOG(level, ...)                                                        \
  do {                                                                              \
    if (::hora::log::enabled(::hora::log::Level::level))                            \
      ::hora::log::write(::hora::log::Level::level, ::hora::strCat(__VA_ARGS__));   \
  } while (0)
