#include "output_forwarder.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hora::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Records each batch the forwarder passes on.
struct RecordingSink {
  std::vector<std::string> batches;
  LineSink sink() {
    return [this](std::string_view text) { batches.emplace_back(text); };
  }
};

TEST(LineForwarderTest, PrefixesEveryCompleteLineInOneBatch) {
  RecordingSink recorded;
  LineForwarder forwarder("[rank 3] ", recorded.sink());
  forwarder.append("one\ntwo\n\nthree\n");
  EXPECT_THAT(recorded.batches, ElementsAre("[rank 3] one\n[rank 3] two\n[rank 3] \n[rank 3] three\n"));
}

TEST(LineForwarderTest, HoldsAPartialLineUntilItsNewlineArrives) {
  RecordingSink recorded;
  LineForwarder forwarder("[p] ", recorded.sink());
  forwarder.append("hel");
  EXPECT_THAT(recorded.batches, IsEmpty());
  forwarder.append("lo wor");
  EXPECT_THAT(recorded.batches, IsEmpty());
  forwarder.append("ld\nnext");
  EXPECT_THAT(recorded.batches, ElementsAre("[p] hello world\n"));
  forwarder.append("\n");
  EXPECT_THAT(recorded.batches, ElementsAre("[p] hello world\n", "[p] next\n"));
}

TEST(LineForwarderTest, FinishEndsAnUnterminatedLastLine) {
  RecordingSink recorded;
  LineForwarder forwarder("[p] ", recorded.sink());
  forwarder.append("a\nlast words");
  forwarder.finish();
  EXPECT_THAT(recorded.batches, ElementsAre("[p] a\n", "[p] last words\n"));
  forwarder.finish();
  EXPECT_EQ(recorded.batches.size(), 2u) << "nothing pending: finish passes nothing on";
}

TEST(LineForwarderTest, SplitsLinesLongerThanTheLimit) {
  RecordingSink recorded;
  LineForwarder forwarder("> ", recorded.sink());
  const std::size_t limit = LineForwarder::kMaxLineBytes;
  forwarder.append(std::string(limit + 10, 'x'));
  ASSERT_EQ(recorded.batches.size(), 1u);
  EXPECT_EQ(recorded.batches[0], "> " + std::string(limit, 'x') + "\n");
  forwarder.append("y\n");
  EXPECT_EQ(recorded.batches.back(), "> " + std::string(10, 'x') + "y\n");
}

TEST(ForwardedStreamTest, ForwardsPipeContentAndClosesAtEndOfStream) {
  RecordingSink recorded;
  Pipe pipe = make_pipe("test");
  ForwardedStream stream(std::move(pipe.read_end), "[rank 0] ", recorded.sink());
  ASSERT_TRUE(write_all(pipe.write_end.get(), "x\ny"));
  stream.read_available();
  EXPECT_THAT(recorded.batches, ElementsAre("[rank 0] x\n"));
  stream.read_available();  // nothing there: the pipe is non-blocking, so this returns at once
  EXPECT_TRUE(stream.open());
  pipe.write_end.reset();
  stream.read_available();
  EXPECT_FALSE(stream.open());
  EXPECT_THAT(recorded.batches, ElementsAre("[rank 0] x\n", "[rank 0] y\n"));
}

TEST(ForwardedStreamTest, CloseNowForwardsWhatIsBufferedWhileWritersRemain) {
  RecordingSink recorded;
  Pipe pipe = make_pipe("test");
  ForwardedStream stream(std::move(pipe.read_end), "", recorded.sink());
  ASSERT_TRUE(write_all(pipe.write_end.get(), "left\nbehind"));
  stream.close_now();  // the write end is still open: must not wait for end-of-file
  EXPECT_FALSE(stream.open());
  EXPECT_THAT(recorded.batches, ElementsAre("left\n", "behind\n"));
}

}  // namespace
}  // namespace hora::launcher
