// hora's libnccl.so.2 as torch meets it under LD_PRELOAD: the library is
// then loaded into every process a job starts (shells, compilers, data
// loader workers), so loading it must do nothing at all; and a job's
// environment carries NCCL_* settings meant for NVIDIA's library, which
// hora must ignore quietly when it does not know them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string runShell(const std::string& command) {
  std::string output;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  std::array<char, 256> chunk{};
  while (std::fgets(chunk.data(), chunk.size(), pipe) != nullptr) output += chunk.data();
  ::pclose(pipe);
  return output;
}

// A preloaded library that started a thread, printed, or opened a socket
// at load time would show in the process it was loaded into: here `grep`
// reading its own status, with hora's most talkative log level on.
TEST(Preload, LoadingTheLibraryStartsNoThreadAndPrintsNothing) {
  const char* library = std::getenv("HORA_LIBNCCL");
  ASSERT_NE(library, nullptr) << "HORA_LIBNCCL names the library under test";
  const std::string output =
      runShell(std::string("LD_PRELOAD=") + library +
               " NCCL_DEBUG=TRACE HORA_DEBUG=TRACE NCCL_IB_HCA=mlx5_0 grep -E '^Threads:' "
               "/proc/self/status 2>&1");
  EXPECT_EQ(output, "Threads:\t1\n");
}

// Captures what this process writes to stderr while it lives.
class StderrCapture {
 public:
  StderrCapture() : path_(::testing::TempDir() + "hora_preload_stderr.txt") {
    std::fflush(stderr);
    saved_ = ::dup(2);
    std::FILE* file = std::fopen(path_.c_str(), "w");
    ::dup2(::fileno(file), 2);
    std::fclose(file);
  }
  std::string finish() {
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    std::ifstream in(path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  std::string path_;
  int saved_;
};

TEST(Preload, UnknownNcclVariablesAreIgnoredQuietly) {
  ::setenv("NCCL_DEBUG", "WARN", 1);
  ::setenv("NCCL_NOT_A_SETTING_HORA_KNOWS", "42", 1);
  ::setenv("NCCL_IB_HCA", "=mlx5_0:1", 1);
  ::setenv("NCCL_P2P_LEVEL", "NVL", 1);
  ::setenv("NCCL_ALGO", "Ring", 1);
  StderrCapture capture;
  ncclComm_t comms[2];
  const int devices[2] = {0, 1};
  const ncclResult_t result = ncclCommInitAll(comms, 2, devices);
  if (result == ncclSuccess)
    for (ncclComm_t comm : comms) ncclCommDestroy(comm);
  const std::string warnings = capture.finish();
  EXPECT_EQ(result, ncclSuccess) << ncclGetErrorString(result);
  EXPECT_THAT(warnings, Not(HasSubstr("NCCL_NOT_A_SETTING_HORA_KNOWS")));
  EXPECT_THAT(warnings, Not(HasSubstr("WARN"))) << warnings;
}

}  // namespace
