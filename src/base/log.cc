#include "base/log.h"

#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <string>
#include <utility>

#include "base/env.h"

namespace hora::log {

namespace {
thread_local int tlsRank = -1;

Level parseLevel() {
  auto text = env::get({"HORA_DEBUG", "NCCL_DEBUG"});
  if (!text) return Level::None;
  std::string value;
  for (char c : *text) value += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (value == "WARN") return Level::Warn;
  if (value == "INFO") return Level::Info;
  if (value == "TRACE") return Level::Trace;
  return Level::None;
}

struct Sink {
  std::mutex mutex;
  FILE* file = stderr;
  std::string host;
  Sink() {
    char name[256] = {0};
    gethostname(name, sizeof(name) - 1);
    host = name;
    if (auto pattern = env::get({"HORA_DEBUG_FILE", "NCCL_DEBUG_FILE"})) {
      const std::string path = expandDebugFilePath(*pattern, host, static_cast<long>(getpid()));
      if (FILE* f = std::fopen(path.c_str(), "a")) file = f;
    }
  }
};

Sink& sink() {
  static Sink instance;
  return instance;
}

const char* levelName(Level level) {
  switch (level) {
    case Level::Warn: return "WARN";
    case Level::Info: return "INFO";
    case Level::Trace: return "TRACE";
    default: return "";
  }
}
}  // namespace

std::string expandDebugFilePath(const std::string& pattern, const std::string& host, long pid) {
  std::string path;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      path += pattern[i];
      continue;
    }
    const char next = pattern[++i];
    if (next == 'h') path += host;
    else if (next == 'p') path += std::to_string(pid);
    else if (next == '%') path += '%';
    else path += std::string{'%', next};  // as NCCL: anything else stays as written
  }
  return path;
}

Level threshold() {
  static const Level level = parseLevel();
  return level;
}

void write(Level level, const std::string& message) {
  Sink& out = sink();
  std::string rank = tlsRank >= 0 ? strCat("[rank ", tlsRank, "] ") : std::string();
  std::lock_guard<std::mutex> lock(out.mutex);
  std::fprintf(out.file, "%s:%d:%shora %s %s\n", out.host.c_str(), static_cast<int>(getpid()),
               rank.c_str(), levelName(level), message.c_str());
  std::fflush(out.file);
}

void setThreadRank(int rank) { tlsRank = rank; }
int threadRank() { return tlsRank; }
int exchangeThreadRank(int rank) { return std::exchange(tlsRank, rank); }

}  // namespace hora::log
