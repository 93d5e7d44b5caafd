// Fails the test program if a test left a child process behind (running,
// stopped or unreaped): every forked rank must be killed and reaped by the
// test that started it.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace hora_api_test {
namespace {

// Children of this process, as "pid (state)", from /proc/<pid>/stat.
std::string childrenOfThisProcess() {
  std::string found;
  const std::string self = std::to_string(getpid());
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...: comm may hold spaces, so parse after ')'.
    std::size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state, parent;
    rest >> state >> parent;
    if (parent == self) found += entry.path().filename().string() + " (" + state + ") ";
  }
  return found;
}

class NoLeftoverChildren : public ::testing::Environment {
 public:
  void TearDown() override {
    EXPECT_EQ(childrenOfThisProcess(), "") << "child processes outlived the tests";
  }
};

[[maybe_unused]] ::testing::Environment* const registered =
    ::testing::AddGlobalTestEnvironment(new NoLeftoverChildren);

}  // namespace
}  // namespace hora_api_test
