// Errors inside hora are exceptions (hora::Error, declared in the public
// header hora/error.h); the C API turns them into ncclResult_t at its boundary.
//
// Two families:
//  - recoverable failures (a syscall, a peer, a timeout, a bad argument):
//    throw hora::Error with a kind and a message naming rank, peer, call, errno;
//  - invariant violations (bugs): HORA_ENFORCE, which adds file:line and the
//    failed condition.
#pragma once

#include <sstream>
#include <string>
#include <utility>

#include "hora/error.h"

namespace hora {

// Concatenates anything streamable: strCat("rank ", 3, ": ", what).
template <typename... Parts>
std::string strCat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

// "ECONNREFUSED (Connection refused)" for an errno value.
std::string errnoText(int err);

// Cold and out of line, so that a check on a hot path costs a compare and
// a branch: building the message (a string stream) inline would give every
// function that checks something a large stack frame and saved registers.
template <typename... Parts>
[[noreturn, gnu::cold, gnu::noinline]] void fail(ErrorKind kind, const Parts&... parts) {
  throw Error(kind, strCat(parts...));
}

[[noreturn]] void failInternal(const char* file, int line, const char* condition,
                               const std::string& detail);

// HORA_ENFORCE's failure, out of line like fail().
template <typename... Parts>
[[noreturn, gnu::cold, gnu::noinline]] void failEnforced(const char* file, int line, const char* condition,
                                                        const Parts&... parts) {
  failInternal(file, line, condition, strCat(parts...));
}

}  // namespace hora

#define HORA_ENFORCE(condition, ...)                                                    \
  do {                                                                                  \
    if (!(condition)) [[unlikely]]                                                      \
      ::hora::failEnforced(__FILE__, __LINE__, #condition __VA_OPT__(, ) __VA_ARGS__);    \
  } while (0)

// Argument checks at API entry: InvalidArgument with the caller's message.
#define HORA_CHECK_ARG(condition, ...)                                       \
  do {                                                                       \
    if (!(condition)) [[unlikely]] ::hora::fail(::hora::ErrorKind::InvalidArgument, __VA_ARGS__); \
  } while (0)
