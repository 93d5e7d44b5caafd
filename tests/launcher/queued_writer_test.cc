#include "queued_writer.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "posix_io.h"

namespace hora::launcher {
namespace {

using namespace std::chrono_literals;

// Reads `fd` to its end, returning how many bytes came.
std::size_t read_to_end(int fd) {
  std::size_t received = 0;
  char buffer[4096];
  ssize_t count;
  while ((count = ::read(fd, buffer, sizeof(buffer))) > 0) received += static_cast<std::size_t>(count);
  return received;
}

// With SIGPIPE at its default a write to a closed pipe would kill the test:
// hora-run ignores it.
class IgnoringSigpipe {
 public:
  IgnoringSigpipe() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &previous_);
  }
  ~IgnoringSigpipe() { ::sigaction(SIGPIPE, &previous_, nullptr); }

 private:
  struct sigaction previous_ {};
};

TEST(QueuedWriterTest, WritesEverythingInOrder) {
  Pipe pipe = make_pipe("test");
  std::string expected;
  {
    QueuedWriter writer(pipe.write_end.get());
    for (int i = 0; i < 1000; ++i) {
      std::string line = "line " + std::to_string(i) + "\n";
      expected += line;
      writer.write(line);
    }
    std::string received;
    char buffer[4096];
    while (received.size() < expected.size()) {
      ssize_t count = ::read(pipe.read_end.get(), buffer, sizeof(buffer));
      ASSERT_GT(count, 0);
      received.append(buffer, static_cast<std::size_t>(count));
    }
    EXPECT_EQ(received, expected);
    EXPECT_TRUE(writer.drain(std::nullopt));
    EXPECT_EQ(writer.backlog(), 0u);
  }
}

// The point of the writer: a reader that takes nothing never makes the
// caller wait. The text stays queued, the backlog says how much, and a
// drain with a deadline gives up at it.
TEST(QueuedWriterTest, AReaderThatTakesNothingNeverBlocksTheCaller) {
  Pipe pipe = make_pipe("test");
  const std::string chunk(64 * 1024, 'x');
  constexpr int kChunks = 64;  // 4 MiB, far more than a pipe holds
  {
    QueuedWriter writer(pipe.write_end.get());
    const auto started = std::chrono::steady_clock::now();
    for (int i = 0; i < kChunks; ++i) writer.write(chunk);
    EXPECT_LT(std::chrono::steady_clock::now() - started, 2s) << "write() waited for the reader";
    std::this_thread::sleep_for(50ms);  // the pipe fills
    EXPECT_GT(writer.backlog(), QueuedWriter::kBacklogLimit);
    EXPECT_TRUE(writer.over_backlog_limit());
    const auto drain_started = std::chrono::steady_clock::now();
    EXPECT_FALSE(writer.drain(std::chrono::steady_clock::now() + 200ms));
    const auto drain_took = std::chrono::steady_clock::now() - drain_started;
    EXPECT_GE(drain_took, 150ms);
    EXPECT_LT(drain_took, 2s);
    // Now the reader reads: nothing was lost.
    std::size_t received = 0;
    std::thread reader([&] { received = read_to_end(pipe.read_end.get()); });
    EXPECT_TRUE(writer.drain(std::nullopt));
    EXPECT_EQ(writer.backlog(), 0u);
    pipe.write_end.reset();
    reader.join();
    EXPECT_EQ(received, chunk.size() * kChunks);
  }
}

TEST(QueuedWriterTest, DropsOutputOnceTheReaderIsGone) {
  IgnoringSigpipe ignoring;
  Pipe pipe = make_pipe("test");
  QueuedWriter writer(pipe.write_end.get());
  writer.write("kept\n");
  EXPECT_TRUE(writer.drain(std::nullopt));
  char buffer[16] = {};
  ASSERT_EQ(::read(pipe.read_end.get(), buffer, sizeof(buffer)), 5);
  EXPECT_STREQ(buffer, "kept\n");
  pipe.read_end.reset();
  EXPECT_FALSE(write_all(pipe.write_end.get(), "refused\n")) << "EPIPE must be reported, not retried";
  writer.write("lost\n");
  EXPECT_TRUE(writer.drain(std::chrono::steady_clock::now() + 5s)) << "waited for a reader that is gone";
  EXPECT_TRUE(writer.reader_gone());
  writer.write("lost again\n");
  EXPECT_EQ(writer.backlog(), 0u) << "text kept for a reader that is gone";
}

// A descriptor inherited non-blocking (a pipe to a slow reader) takes
// output a piece at a time: nothing may be dropped.
TEST(QueuedWriterTest, WaitsForASlowReaderOfANonBlockingDescriptor) {
  Pipe pipe = make_pipe("test");
  ASSERT_EQ(::fcntl(pipe.write_end.get(), F_SETFL, O_NONBLOCK), 0);
  const std::string text(1 << 20, 'x');  // far more than a pipe holds
  std::size_t received = 0;
  std::thread reader([&] {
    std::this_thread::sleep_for(50ms);  // the pipe fills first
    received = read_to_end(pipe.read_end.get());
  });
  {
    QueuedWriter writer(pipe.write_end.get());
    writer.write(text);
    EXPECT_TRUE(writer.drain(std::nullopt));
  }
  pipe.write_end.reset();
  reader.join();
  EXPECT_EQ(received, text.size());
}

}  // namespace
}  // namespace hora::launcher
