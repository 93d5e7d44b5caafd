#include "schedule_cases.h"

#include <algorithm>
#include <cstdint>
#include <sstream>

#include "algorithms/direct.h"
#include "algorithms/ring.h"

namespace hora::schedule_test {

const char* collectiveName(Collective collective) {
  switch (collective) {
    case Collective::AllReduce: return "ringAllReduce";
    case Collective::ReduceScatter: return "ringReduceScatter";
    case Collective::AllGather: return "ringAllGather";
    case Collective::Broadcast: return "ringBroadcast";
    case Collective::Reduce: return "ringReduce";
    case Collective::DirectAllReduce: return "directAllReduce";
    case Collective::AllToAll: return "directAllToAll";
    case Collective::Gather: return "directGather";
    case Collective::Scatter: return "directScatter";
  }
  return "?";
}

bool isDirect(Collective collective) {
  return collective == Collective::DirectAllReduce || collective == Collective::AllToAll ||
         collective == Collective::Gather || collective == Collective::Scatter;
}

bool hasRoot(Collective collective) {
  return collective == Collective::Broadcast || collective == Collective::Reduce ||
         collective == Collective::Gather || collective == Collective::Scatter;
}

std::string Case::describe() const {
  std::ostringstream text;
  text << collectiveName(collective) << " n=" << nranks() << " order {";
  for (int k = 0; k < nranks(); ++k) text << (k ? "," : "") << order[k];
  text << "} channels=" << channels << " count=" << count;
  if (!isDirect(collective)) text << " chunk=" << chunk;
  text << " align=" << align;
  if (hasRoot(collective)) text << " root=" << root;
  return text.str();
}

Layout layoutOf(const Case& c) {
  const std::size_t n = static_cast<std::size_t>(c.nranks());
  Layout layout{c.nranks(), c.channels, c.count, c.count};
  if (c.collective == Collective::ReduceScatter) layout.inputSize = n * c.count;
  if (c.collective == Collective::AllGather) layout.outputSize = n * c.count;
  if (c.collective == Collective::AllToAll) layout.inputSize = layout.outputSize = n * c.count;
  if (c.collective == Collective::Gather) layout.outputSize = n * c.count;
  if (c.collective == Collective::Scatter) layout.inputSize = n * c.count;
  return layout;
}

Outcome runCase(const Case& c) {
  const int n = c.nranks();
  return recordAndSimulate(layoutOf(c), [&](RecordingPrimitives& p, int rank,
                                            algorithms::Channel channel) {
    switch (c.collective) {
      case Collective::DirectAllReduce:
        algorithms::directAllReduce(p, c.order.data(), n, rank, channel, c.count, c.align);
        return;
      case Collective::AllToAll: algorithms::directAllToAll(p, n, rank, channel, c.count, c.align); return;
      case Collective::Gather:
        algorithms::directGather(p, n, rank, c.root, channel, c.count, c.align);
        return;
      case Collective::Scatter:
        algorithms::directScatter(p, n, rank, c.root, channel, c.count, c.align);
        return;
      default: break;
    }
    const int pos = static_cast<int>(std::find(c.order.begin(), c.order.end(), rank) - c.order.begin());
    const algorithms::Ring ring{n, pos, c.order.data()};
    // The ring collectives come first in Collective, in RingCollective's order.
    algorithms::runRing(p, static_cast<algorithms::RingCollective>(c.collective), ring, channel, c.root, c.count,
                        c.chunk, c.align);
  });
}

std::vector<std::vector<int>> ringOrders(int n) {
  std::vector<std::vector<int>> orders;
  auto add = [&](const std::vector<int>& order) {
    if (std::find(orders.begin(), orders.end(), order) == orders.end()) orders.push_back(order);
  };
  std::vector<int> order(n);
  for (int r = 0; r < n; ++r) order[r] = r;
  add(order);
  if (n >= 3) {  // {2,0,1,3,4,...}: the first three turned round
    std::vector<int> turned = order;
    std::rotate(turned.begin(), turned.begin() + 2, turned.begin() + 3);
    add(turned);
  }
  add(std::vector<int>(order.rbegin(), order.rend()));
  // A fixed shuffle (own generator: the same on every standard library).
  std::uint64_t state = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(n + 1);
  for (int r = n - 1; r > 0; --r) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    std::swap(order[r], order[(state >> 33) % static_cast<std::uint64_t>(r + 1)]);
  }
  add(order);
  return orders;
}

namespace {

std::vector<int> rootsFor(Collective collective, int n) {
  if (!hasRoot(collective)) return {0};
  std::vector<int> roots;
  if (n <= 5) {
    for (int r = 0; r < n; ++r) roots.push_back(r);
  } else {
    roots = {0, 1, n / 2, n - 1};
  }
  return roots;
}

}  // namespace

std::vector<Case> ringCases(Collective collective, int n) {
  static constexpr std::size_t kCounts[] = {0, 1, 2, 3, 7, 61, 1000, 4099, 65537};
  static constexpr std::size_t kChunks[] = {1, 3, 64, std::size_t{1} << 20};
  // Beyond this many loops per channel a chunk shows nothing new and costs
  // time: chunk 1 and 3 are swept on the smaller counts only.
  constexpr std::size_t kMaxLoops = 1024;
  const std::vector<std::vector<int>> orders = ringOrders(n);
  const std::vector<int> roots = rootsFor(collective, n);
  std::vector<Case> cases;
  std::size_t turn = 0;  // which order a thinned case takes
  for (int channels = 1; channels <= 4; ++channels)
    for (std::size_t count : kCounts)
      for (std::size_t chunk : kChunks) {
        if (count > chunk * kMaxLoops) continue;
        for (std::size_t align : {std::size_t{1}, std::size_t{16}}) {
          // Small counts try every order; larger ones one each, in turn.
          const bool small = count <= 61;
          for (std::size_t o = 0; o < orders.size(); ++o) {
            if (!small && o != turn % orders.size()) continue;
            for (int root : roots) cases.push_back({collective, orders[o], channels, count, chunk, align, root});
          }
          ++turn;
        }
      }
  return cases;
}

std::vector<Case> hugeCases(Collective collective, int n) {
  static constexpr std::size_t kCounts[] = {(std::size_t{1} << 32) + 3, std::size_t{5} << 31};
  static constexpr std::size_t kChunks[] = {std::size_t{1} << 28, std::size_t{1} << 30};
  const std::vector<std::vector<int>> orders = ringOrders(n);
  std::vector<int> roots = rootsFor(collective, n);
  if (roots.size() > 2) roots = {roots.front(), roots.back()};
  std::vector<Case> cases;
  std::size_t turn = 0;
  for (int channels = 1; channels <= 4; ++channels)
    for (std::size_t count : kCounts)
      for (std::size_t chunk : kChunks)
        for (std::size_t align : {std::size_t{1}, std::size_t{16}}) {
          const std::vector<int>& order = orders[turn++ % orders.size()];
          for (int root : roots) cases.push_back({collective, order, channels, count, chunk, align, root});
        }
  return cases;
}

std::vector<Case> directCases(int n, Collective collective) {
  static constexpr std::size_t kCounts[] = {0,    1,    2,     3,
                                            7,    61,   1000,  4099,
                                            65537, (std::size_t{1} << 32) + 3, std::size_t{5} << 31};
  std::vector<int> order(n);
  for (int r = 0; r < n; ++r) order[r] = r;
  const std::vector<int> roots = rootsFor(collective, n);
  std::vector<Case> cases;
  for (int channels = 1; channels <= 4; ++channels)
    for (std::size_t count : kCounts)
      for (std::size_t align : {std::size_t{1}, std::size_t{16}})
        for (int root : roots) cases.push_back({collective, order, channels, count, 0, align, root});
  return cases;
}

}  // namespace hora::schedule_test
