#include "program_run.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace hora::test_support {
namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A file in the temporary directory that is removed again on destruction.
struct TempFile {
  TempFile() {
    path = (std::filesystem::temp_directory_path() / "hora-program-XXXXXX").string();
    const int fd = mkstemp(path.data());
    if (fd >= 0) close(fd);
  }
  ~TempFile() { unlink(path.c_str()); }
  std::string path;
};

std::vector<std::string> environmentFor(const ProgramRun& run) {
  std::vector<std::string> entries;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text(*entry);
    const std::string name = text.substr(0, text.find('='));
    bool replaced = false;
    for (const auto& removed : run.unset) replaced |= name == removed;
    for (const auto& [setName, value] : run.set) replaced |= name == setName;
    if (!replaced) entries.push_back(text);
  }
  for (const auto& [name, value] : run.set) entries.push_back(name + "=" + value);
  return entries;
}

}  // namespace

std::vector<std::string> ProgramResult::outLines() const {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string programFromEnvironment(const char* name) {
  const char* path = std::getenv(name);
  if (path == nullptr || path[0] == '\0') {
    ADD_FAILURE() << name << " is not set; run this test through meson test";
    return "/nonexistent";
  }
  return path;
}

ProgramResult runProgram(const ProgramRun& run) {
  TempFile outFile;
  TempFile errFile;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, outFile.path.c_str(), O_WRONLY | O_TRUNC, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, errFile.path.c_str(), O_WRONLY | O_TRUNC, 0);
  // Its own process group, so the deadline kills everything it started.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);

  std::vector<char*> argv;
  for (const std::string& argument : run.arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> environment = environmentFor(run);
  std::vector<char*> envp;
  for (std::string& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);

  ProgramResult result;
  pid_t pid = -1;
  const int spawnError = posix_spawn(&pid, argv[0], &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawnError != 0) {
    ADD_FAILURE() << "cannot start " << run.arguments[0] << ": " << std::strerror(spawnError);
    return result;
  }

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(run.timeoutSeconds);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << run.arguments[0] << " ran past " << run.timeoutSeconds << " s and was killed";
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(-pid, SIGKILL);  // anything it left behind in its group
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = readFile(outFile.path);
  result.err = readFile(errFile.path);
  return result;
}

}  // namespace hora::test_support
