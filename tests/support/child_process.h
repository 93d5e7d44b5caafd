// Ranks as forked processes, for tests where a rank must be killed, stopped
// or given its own environment, or must run in a process of its own. A child
// runs a function, reports facts to the parent as "key value" lines over a
// pipe (a value may span lines), and never outlives the test:
// it dies with its parent (PR_SET_PDEATHSIG), at the end of its lifetime
// (alarm), and when the ChildProcess object is destroyed (SIGKILL, reaped).
//
// Fork before the parent process starts any thread: the child inherits only
// the forking thread, and a lock another thread held would stay locked.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace hora::test_support {

// The child's end of the report pipe.
class Reporter {
 public:
  explicit Reporter(int fd) : fd_(fd) {}
  // Sends "key value"; the value may hold newlines.
  void report(const std::string& key, const std::string& value);

 private:
  int fd_;
};

struct ChildExit {
  bool timedOut = false;  // still running at the deadline (then killed)
  bool exited = false;    // false: killed by a signal
  int code = -1;        // exit status when exited
  int signal = 0;       // terminating signal otherwise
  std::string describe() const;
};

class ChildProcess {
 public:
  // Forks a child that runs body(reporter) and exits with its result.
  explicit ChildProcess(std::function<int(Reporter&)> body,
                        std::chrono::seconds lifetime = std::chrono::seconds(30));
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int number);

  // Waits until the child reported `key` (its value), or returns nullopt
  // when `timeout` passed or the child closed its pipe first.
  std::optional<std::string> waitFor(const std::string& key, std::chrono::milliseconds timeout);
  // The last value reported for `key` so far, or "" (reads what is pending).
  std::string value(const std::string& key);
  // Waits up to `timeout` for the child to exit; kills it (SIGKILL) if it
  // did not, and says so in the result.
  ChildExit waitExit(std::chrono::milliseconds timeout);
  // Reads what the child reported so far and, if it has exited, reaps it
  // and says how it ended; nullopt while it runs. Never waits.
  std::optional<ChildExit> pollExit();

 private:
  // Reads what the pipe holds within `timeout`; false at end of file.
  bool readSome(std::chrono::milliseconds timeout);

  pid_t pid_ = -1;
  int fd_ = -1;
  bool reaped_ = false;
  ChildExit exit_;  // once reaped
  std::string pending_;
  std::map<std::string, std::string> values_;
};

// Sets an environment variable in this process (for use in a child).
void setEnvironment(const std::string& name, const std::string& value);

}  // namespace hora::test_support
