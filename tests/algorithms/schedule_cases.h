// One collective with its parameters (a Case), how its schedule from
// algorithms/ is recorded on every rank and channel and played, and the
// lists of cases the tests sweep.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "algorithms/ring.h"
#include "simulator.h"

namespace hora::schedule_test {

enum class Collective {
  AllReduce,
  ReduceScatter,
  AllGather,
  Broadcast,
  Reduce,
  DirectAllReduce,
  AllToAll,
  Gather,
  Scatter,
};
static_assert(static_cast<int>(Collective::AllReduce) == static_cast<int>(algorithms::RingCollective::AllReduce) &&
              static_cast<int>(Collective::ReduceScatter) ==
                  static_cast<int>(algorithms::RingCollective::ReduceScatter) &&
              static_cast<int>(Collective::AllGather) == static_cast<int>(algorithms::RingCollective::AllGather) &&
              static_cast<int>(Collective::Broadcast) == static_cast<int>(algorithms::RingCollective::Broadcast) &&
              static_cast<int>(Collective::Reduce) == static_cast<int>(algorithms::RingCollective::Reduce));
// The direct schedules (algorithms/direct.h): no chunk, no ring order.
bool isDirect(Collective collective);
// The collectives with a root.
bool hasRoot(Collective collective);
const char* collectiveName(Collective collective);

struct Case {
  Collective collective = Collective::AllReduce;
  // The ring: order[p] is the rank at position p. For the direct schedule
  // the ranks in reduction order. Its size is the number of ranks.
  std::vector<int> order;
  int channels = 1;
  // Elements: of the buffer (all-reduce, broadcast, reduce), of each rank's
  // block (reduce-scatter's input, all-gather's output, both buffers of
  // all-to-all, gather's output and scatter's input hold nranks).
  std::size_t count = 0;
  std::size_t chunk = 1;  // ring schedules only
  std::size_t align = 1;
  int root = 0;  // broadcast, reduce, gather, scatter

  int nranks() const { return static_cast<int>(order.size()); }
  std::string describe() const;
};

// Each rank's input and output sizes for the case.
Layout layoutOf(const Case& c);

// Records c's schedule on every rank and channel and plays the recordings.
Outcome runCase(const Case& c);

// Ring orders to try with n ranks: the identity, reversed, and shuffled
// (distinct ones only).
std::vector<std::vector<int>> ringOrders(int n);

// The sweep for one ring collective on n ranks: 1 to 4 channels, counts from
// 0 to 65537, small and large chunks, align 1 and 16, several ring orders
// and roots; thinned where a full cross product would cost time and find
// nothing new.
std::vector<Case> ringCases(Collective collective, int n);
// Counts beyond 2^32 elements, with chunks large enough to keep the number
// of calls small.
std::vector<Case> hugeCases(Collective collective, int n);
// A direct schedule on n ranks (no chunk, no ring order), every root for
// small n.
std::vector<Case> directCases(int n, Collective collective = Collective::DirectAllReduce);

}  // namespace hora::schedule_test
