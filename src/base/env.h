// Reading configuration from environment variables. Every hora variable has
// an HORA_ name; where NCCL has an equivalent its NCCL_ name is read too
// (the HORA_ one wins).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace hora::env {

// The value of the first of `names` that is set and non-empty.
std::optional<std::string> get(std::initializer_list<const char*> names);

// The same, with the name that was set: for messages that must quote the
// variable the user wrote (HORA_X or NCCL_X), not just the first name.
struct Variable {
  const char* name;
  std::string value;
};
std::optional<Variable> find(std::initializer_list<const char*> names);

// A comma-separated list ("a,b,c"), empty items dropped; nullopt when unset.
std::optional<std::vector<std::string>> getList(std::initializer_list<const char*> names);

// Integer value; a malformed value is an InvalidArgument error naming the variable.
long long getInt(std::initializer_list<const char*> names, long long fallback);

// Seconds as a decimal number ("2.5"); fallback when unset. Rounded up to
// whole milliseconds; values above kLongestSeconds (ten years) count as it.
inline constexpr double kLongestSeconds = 10.0 * 365 * 24 * 3600;
std::chrono::milliseconds getSeconds(std::initializer_list<const char*> names,
                                     std::chrono::milliseconds fallback);

// A byte size ("512K", "4M"; see parseBytes); fallback when unset. A
// malformed value is an InvalidArgument error naming the variable.
unsigned long long getBytes(std::initializer_list<const char*> names, unsigned long long fallback);

// Parses a byte size with an optional K/M/G suffix (powers of 2): "4M" -> 4194304.
unsigned long long parseBytes(const std::string& text, const char* what);

// Sets `name` to `value` unless it is set already (setenv without
// overwriting), for a library hora loads that reads its settings from the
// environment. setenv may move the process's environment while another
// thread reads it: hora's own reads (the functions above) wait for it.
void setUnlessSet(const char* name, const char* value);

// The deadline for init and for each wait on a peer: HORA_TIMEOUT seconds (default 300).
std::chrono::milliseconds defaultTimeout();

}  // namespace hora::env
