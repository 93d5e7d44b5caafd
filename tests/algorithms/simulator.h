// Plays the recorded steps of every rank and channel of one collective
// against each other, as the transports would: messages go through
// unbounded first-in first-out queues, one per (sender, receiver, channel),
// so the i-th send from A to B on a channel meets B's i-th receive from A on
// that channel. Tags are computed as the messages flow (a forwarded message
// carries what was received plus what was added), which is how the checks
// see whether each output element holds the right reduction.
//
// A schedule's calls do not depend on the data, so recording first and
// playing afterwards sees exactly what a run would do. Playing is causal:
// a step that needs a message waits until its sender has sent it, and when
// no process can move before all have finished, the schedule deadlocks.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "algorithms/primitives.h"
#include "recording_primitives.h"

namespace hora::schedule_test {

// The buffers every rank's schedule is played against.
struct Layout {
  int nranks = 1;    // at most 16: a Tag's mask has a bit per rank
  int channels = 1;
  std::size_t inputSize = 0;   // elements of each rank's input
  std::size_t outputSize = 0;  // elements of each rank's output
};

// A run of output elements written by one step, and what it holds.
struct Write {
  std::size_t out;
  std::size_t size;
  Tag tag;
  int channel;
};

// A message as it passed this rank: sent to, or received from, `peer`.
struct Event {
  bool send;
  int peer;
  int channel;
  std::size_t size;
  Tag tag;
};

struct RankTrace {
  std::vector<Event> events;  // in the order its steps ran, channels interleaved
  std::vector<Write> writes;  // in the order written
};

struct Outcome {
  std::vector<RankTrace> ranks;
  // Deadlocks, unmatched or mismatched messages, reads and writes outside
  // the buffers, and reductions that combine the wrong elements; empty when
  // the schedules are consistent with each other.
  std::vector<std::string> errors;
  std::size_t steps = 0;  // steps played, all ranks and channels
};

// recordings[rank * channels + channel] holds that channel's steps on that
// rank.
Outcome simulate(const Layout& layout, const std::vector<std::vector<Step>>& recordings);

// Calls schedule(primitives, rank, channel) once for every rank and channel,
// each with its own recorder, then plays the recordings.
template <typename Schedule>
Outcome recordAndSimulate(const Layout& layout, Schedule&& schedule) {
  std::vector<std::vector<Step>> recordings;
  recordings.reserve(static_cast<std::size_t>(layout.nranks) * layout.channels);
  for (int rank = 0; rank < layout.nranks; ++rank)
    for (int channel = 0; channel < layout.channels; ++channel) {
      RecordingPrimitives primitives(rank, channel);
      schedule(primitives, rank, algorithms::Channel{channel, layout.channels});
      recordings.push_back(primitives.takeSteps());
    }
  return simulate(layout, recordings);
}

// "{0,2,5}": the ranks of a mask, for messages.
std::string ranksText(unsigned mask);

}  // namespace hora::schedule_test
