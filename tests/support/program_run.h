// Runs a built program the way a user would: its own environment, stdout and
// stderr captured, and a deadline after which it is killed, so a hang fails
// the test instead of stalling the suite.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace hora::test_support {

struct ProgramResult {
  int exitCode = -1;  // -1: killed by a signal (the deadline, or a crash)
  std::string out;
  std::string err;
  std::vector<std::string> outLines() const;
};

struct ProgramRun {
  std::vector<std::string> arguments;  // arguments[0] is the program's path
  // Variables to set ("NAME", "value") and to remove from the inherited
  // environment.
  std::vector<std::pair<std::string, std::string>> set;
  std::vector<std::string> unset;
  int timeoutSeconds = 60;
};

ProgramResult runProgram(const ProgramRun& run);

// The path in environment variable `name`; fails the test when unset.
std::string programFromEnvironment(const char* name);

}  // namespace hora::test_support
