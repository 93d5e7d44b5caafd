// The stop note that abort lines and abort flags carry between the ranks'
// kernels (device/device_work.h): the rank whose stop came first and why,
// so that a mismatch one rank finds is reported as a mismatch by the
// ranks its stop reaches.
#include <gtest/gtest.h>

#include "device/device_work.h"

namespace hora::device {
namespace {

using protocols::Status;

TEST(StopNote, CarriesTheFirstRankAndWhyItStopped) {
  for (const int origin : {0, 1, 7, 4095, (1 << 24) - 2}) {
    for (const Status cause : {Status::Ok, Status::Aborted, Status::TimedOut, Status::Overflow,
                               Status::OtherProtocol, Status::PeerStopped}) {
      const std::uint32_t note = stopNote(origin, cause);
      EXPECT_NE(note, 0u) << origin;  // a raised flag or a written line is never 0
      EXPECT_EQ(stopNoteOrigin(note), origin);
      EXPECT_EQ(stopNoteCause(note), cause);
    }
  }
}

TEST(StopNote, AFlagTheHostRaisedNamesItsRankWithoutACause) {
  // The host raises flags with the rank + 1 alone (an abort, an exited
  // peer process, a failed host call).
  const std::uint32_t raised = 5 + 1;
  EXPECT_EQ(raised, stopNote(5, Status::Ok));
  EXPECT_EQ(stopNoteOrigin(raised), 5);
  EXPECT_EQ(stopNoteCause(raised), Status::Ok);
  EXPECT_EQ(stopNoteOrigin(0), -1);  // nothing stopped
}

TEST(StopNote, ACauseNoStatusHasReadsAsNotKnown) {
  // A line in memory a peer freed and reused can hold anything.
  EXPECT_EQ(stopNoteCause(0xff000001u), Status::Ok);
  EXPECT_EQ(stopNoteOrigin(0xff000001u), 0);
}

}  // namespace
}  // namespace hora::device
