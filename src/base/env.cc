#include "base/env.h"

#include <algorithm>
#include <cerrno>

#include <cmath>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include "base/error.h"

namespace hora::env {

namespace {
std::shared_mutex& environmentLock() {
  static auto* lock = new std::shared_mutex();  // never destroyed: read at exit too
  return *lock;
}
}  // namespace

void setUnlessSet(const char* name, const char* value) {
  std::unique_lock<std::shared_mutex> lock(environmentLock());
  ::setenv(name, value, /*overwrite=*/0);
}

std::optional<Variable> find(std::initializer_list<const char*> names) {
  std::shared_lock<std::shared_mutex> lock(environmentLock());
  for (const char* name : names) {
    const char* value = std::getenv(name);
    if (value != nullptr && value[0] != '\0') return Variable{name, value};
  }
  return std::nullopt;
}

std::optional<std::string> get(std::initializer_list<const char*> names) {
  auto variable = find(names);
  if (!variable) return std::nullopt;
  return std::move(variable->value);
}

std::optional<std::vector<std::string>> getList(std::initializer_list<const char*> names) {
  const std::optional<std::string> text = get(names);
  if (!text) return std::nullopt;
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start <= text->size()) {
    const std::size_t end = std::min(text->find(',', start), text->size());
    if (end > start) items.push_back(text->substr(start, end - start));
    start = end + 1;
  }
  return items;
}

namespace {
const char* firstSetName(std::initializer_list<const char*> names) {
  auto variable = find(names);
  return variable ? variable->name : *names.begin();
}
}  // namespace

long long getInt(std::initializer_list<const char*> names, long long fallback) {
  auto text = get(names);
  if (!text) return fallback;
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(text->c_str(), &end, 0);
  if (end == text->c_str() || *end != '\0')
    fail(ErrorKind::InvalidArgument, firstSetName(names), "='", *text, "' is not an integer");
  if (errno == ERANGE) fail(ErrorKind::InvalidArgument, firstSetName(names), "='", *text, "' is out of range");
  return value;
}

unsigned long long getBytes(std::initializer_list<const char*> names, unsigned long long fallback) {
  auto text = get(names);
  return text ? parseBytes(*text, firstSetName(names)) : fallback;
}

std::chrono::milliseconds getSeconds(std::initializer_list<const char*> names,
                                     std::chrono::milliseconds fallback) {
  auto text = get(names);
  if (!text) return fallback;
  char* end = nullptr;
  double seconds = std::strtod(text->c_str(), &end);
  if (end == text->c_str() || *end != '\0' || !std::isfinite(seconds) || seconds <= 0)
    fail(ErrorKind::InvalidArgument, firstSetName(names), "='", *text,
         "' is not a positive number of seconds");
  // At least a millisecond (a positive value never means "no time at all"),
  // and at most kLongestSeconds: a huge value means "practically never",
  // and a deadline that far stays representable.
  const double milliseconds = std::ceil(std::min(seconds, kLongestSeconds) * 1000.0);
  return std::chrono::milliseconds(static_cast<long long>(milliseconds));
}

unsigned long long parseBytes(const std::string& text, const char* what) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(value) || value < 0)
    fail(ErrorKind::InvalidArgument, what, ": '", text, "' is not a size");
  std::string suffix(end);
  double scale = 1;
  if (suffix == "K" || suffix == "k" || suffix == "KB" || suffix == "KiB") scale = 1ull << 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MB" || suffix == "MiB") scale = 1ull << 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GB" || suffix == "GiB") scale = 1ull << 30;
  else if (!suffix.empty() && suffix != "B")
    fail(ErrorKind::InvalidArgument, what, ": '", text, "' has an unknown suffix (use K, M or G)");
  // Far beyond any memory, and where the conversion would be undefined.
  constexpr double kLargest = 0x1p62;
  if (value * scale >= kLargest) fail(ErrorKind::InvalidArgument, what, ": '", text, "' is too large a size");
  return static_cast<unsigned long long>(value * scale);
}

std::chrono::milliseconds defaultTimeout() {
  return getSeconds({"HORA_TIMEOUT"}, std::chrono::seconds(300));
}

}  // namespace hora::env
