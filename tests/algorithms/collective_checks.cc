#include "collective_checks.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace hora::schedule_test {

namespace {

// Enough errors per case to see the pattern.
constexpr std::size_t kMaxErrors = 12;

bool full(const std::vector<std::string>& errors) { return errors.size() >= kMaxErrors; }

std::string range(std::size_t begin, std::size_t end) {
  return "out[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

bool isAllReduce(Collective collective) {
  return collective == Collective::AllReduce || collective == Collective::DirectAllReduce;
}

// The output elements the collective defines on `rank`: out[0, size).
std::size_t definedOutput(const Case& c, int rank) {
  switch (c.collective) {
    case Collective::AllGather: return static_cast<std::size_t>(c.nranks()) * c.count;
    case Collective::Reduce: return rank == c.root ? c.count : 0;
    case Collective::AllToAll: return static_cast<std::size_t>(c.nranks()) * c.count;
    case Collective::Gather: return rank == c.root ? static_cast<std::size_t>(c.nranks()) * c.count : 0;
    default: return c.count;
  }
}

// What the run of output elements starting at out[o] must hold: logical
// elements logical, logical + 1, ... reduced over `mask`, at `stage`, up
// to out[end) where the next run (all-gather's next block) starts.
struct Expected {
  std::uint64_t logical;
  unsigned mask;
  Stage stage;
  std::size_t end;
};

Expected expected(const Case& c, int rank, std::size_t o) {
  const unsigned all = (1u << c.nranks()) - 1;
  switch (c.collective) {
    case Collective::ReduceScatter:  // block `rank` of every input, reduced
      return {static_cast<std::size_t>(rank) * c.count + o, all, Stage::Final, c.count};
    case Collective::AllGather: {  // block b: rank b's input, as is
      const std::size_t b = o / c.count;
      return {o - b * c.count, 1u << b, Stage::Raw, (b + 1) * c.count};
    }
    case Collective::Broadcast: return {o, 1u << c.root, Stage::Raw, c.count};
    // The data-moving direct schedules send with send(), which applies
    // pre(): the identity for their reduction, so a block from a peer is at
    // stage Pre and this rank's own block is copied Raw.
    case Collective::AllToAll: {  // block b: block `rank` of rank b's input
      const std::size_t b = o / c.count;
      return {static_cast<std::size_t>(rank) * c.count + (o - b * c.count), 1u << b,
              static_cast<int>(b) == rank ? Stage::Raw : Stage::Pre, (b + 1) * c.count};
    }
    case Collective::Gather: {  // block b: rank b's input
      const std::size_t b = o / c.count;
      return {o - b * c.count, 1u << b, static_cast<int>(b) == rank ? Stage::Raw : Stage::Pre,
              (b + 1) * c.count};
    }
    case Collective::Scatter:  // block `rank` of the root's input
      return {static_cast<std::size_t>(rank) * c.count + o, 1u << c.root,
              rank == c.root ? Stage::Raw : Stage::Pre, c.count};
    default: return {o, all, Stage::Final, c.count};  // all-reduce, reduce (root)
  }
}

void checkRank(const Case& c, int rank, std::vector<Write> writes, std::vector<std::string>& errors) {
  const std::string who = "rank " + std::to_string(rank) + ": ";
  const std::size_t total = definedOutput(c, rank);
  std::sort(writes.begin(), writes.end(),
            [](const Write& a, const Write& b) { return a.out < b.out; });
  std::size_t cursor = 0;  // out[0, cursor) is written
  int lastChannel = -1;    // by this channel last
  for (const Write& w : writes) {
    if (full(errors)) return;
    const std::size_t end = w.out + w.size;
    if (w.out < cursor)
      errors.push_back(who + range(w.out, std::min(cursor, end)) + " written twice (channels " +
                       std::to_string(lastChannel) + " and " + std::to_string(w.channel) + ")");
    else if (w.out > cursor)
      errors.push_back(who + range(cursor, w.out) + " never written (missing)");
    if (end > total) {
      errors.push_back(who + range(w.out, end) + " written by channel " + std::to_string(w.channel) +
                       " but the collective defines " +
                       (total ? range(0, total) : std::string("no output on this rank")));
    } else {
      const Expected e = expected(c, rank, w.out);
      if (w.tag.offset != e.logical || w.tag.mask != e.mask || w.tag.stage != e.stage)
        errors.push_back(who + range(w.out, end) + " (channel " + std::to_string(w.channel) +
                         ") holds logical " + std::to_string(w.tag.offset) + ".. of ranks " +
                         ranksText(w.tag.mask) + ", " + stageName(w.tag.stage) +
                         "; expected logical " + std::to_string(e.logical) + ".. of ranks " +
                         ranksText(e.mask) + ", " + stageName(e.stage));
      else if (end > e.end)
        errors.push_back(who + range(w.out, end) + " runs past the end of its block at " +
                         std::to_string(e.end));
    }
    if (end > cursor) {
      cursor = end;
      lastChannel = w.channel;
    }
  }
  if (cursor < total && !full(errors))
    errors.push_back(who + range(cursor, total) + " never written (missing)");
}

std::vector<Write> sortedWrites(const RankTrace& trace) {
  std::vector<Write> writes = trace.writes;
  std::sort(writes.begin(), writes.end(),
            [](const Write& a, const Write& b) { return a.out < b.out; });
  return writes;
}

// All-reduce: every rank must hold the same bits, so wherever two ranks'
// writes overlap, the reduction trees behind them must be the same.
void checkSameBits(const Outcome& outcome, std::vector<std::string>& errors) {
  const std::vector<Write> first = sortedWrites(outcome.ranks[0]);
  for (std::size_t rank = 1; rank < outcome.ranks.size() && !full(errors); ++rank) {
    const std::vector<Write> other = sortedWrites(outcome.ranks[rank]);
    std::size_t i = 0, j = 0;
    while (i < first.size() && j < other.size()) {
      const Write &a = first[i], &b = other[j];
      const std::size_t begin = std::max(a.out, b.out);
      const std::size_t end = std::min(a.out + a.size, b.out + b.size);
      if (begin < end && a.tag.shape != b.tag.shape) {
        errors.push_back("rank " + std::to_string(rank) + " and rank 0 reduce " + range(begin, end) +
                         " in different orders: their results may differ in the last bits");
        break;
      }
      if (a.out + a.size < b.out + b.size) ++i;
      else ++j;
    }
  }
}

// Channel `index` takes the index-th part of each loop, the same on every
// rank (its peers' same channel is at the other end of its connections).
void checkChannelSplit(const Case& c, const Outcome& outcome, std::vector<std::string>& errors) {
  using Intervals = std::vector<std::pair<std::size_t, std::size_t>>;
  auto covered = [&](const RankTrace& trace) {
    std::vector<Intervals> byChannel(c.channels);
    for (const Write& w : sortedWrites(trace)) {
      Intervals& list = byChannel[w.channel];
      if (!list.empty() && list.back().second == w.out) list.back().second += w.size;
      else list.emplace_back(w.out, w.out + w.size);
    }
    return byChannel;
  };
  int reference = -1;  // the first rank with outputs
  std::vector<Intervals> expectedSplit;
  for (int rank = 0; rank < c.nranks() && !full(errors); ++rank) {
    if (definedOutput(c, rank) == 0) continue;
    std::vector<Intervals> split = covered(outcome.ranks[rank]);
    if (reference < 0) {
      reference = rank;
      expectedSplit = std::move(split);
      continue;
    }
    for (int channel = 0; channel < c.channels; ++channel)
      if (split[channel] != expectedSplit[channel]) {
        errors.push_back("channel " + std::to_string(channel) + " covers other elements on rank " +
                         std::to_string(rank) + " than on rank " + std::to_string(reference));
        break;
      }
  }
}

// Elements every rank sends, summed: what the algorithm needs exactly.
std::size_t neededTraffic(const Case& c) {
  const std::size_t n = static_cast<std::size_t>(c.nranks());
  switch (c.collective) {
    case Collective::AllReduce: return 2 * (n - 1) * c.count;  // reduce-scatter + all-gather
    case Collective::ReduceScatter:
    case Collective::AllGather: return (n - 1) * n * c.count;  // each block travels n-1 hops
    case Collective::Broadcast:
    case Collective::Reduce: return (n - 1) * c.count;
    case Collective::DirectAllReduce:
    case Collective::AllToAll: return n * (n - 1) * c.count;  // to every other rank
    case Collective::Gather:
    case Collective::Scatter: return (n - 1) * c.count;
  }
  return 0;
}

void checkTraffic(const Case& c, const Outcome& outcome, std::vector<std::string>& errors) {
  std::size_t sent = 0;
  for (const RankTrace& trace : outcome.ranks)
    for (const Event& event : trace.events)
      if (event.send) sent += event.size;
  if (sent != neededTraffic(c))
    errors.push_back("the ranks send " + std::to_string(sent) + " elements in all where " +
                     collectiveName(c.collective) + " needs " + std::to_string(neededTraffic(c)));
}

}  // namespace

std::vector<std::string> checkCase(const Case& c, const Outcome& outcome) {
  // Outputs of a schedule whose messages do not match mean nothing more.
  if (!outcome.errors.empty()) return outcome.errors;
  std::vector<std::string> errors;
  for (int rank = 0; rank < c.nranks(); ++rank) checkRank(c, rank, outcome.ranks[rank].writes, errors);
  if (!errors.empty()) return errors;
  if (isAllReduce(c.collective)) checkSameBits(outcome, errors);
  checkChannelSplit(c, outcome, errors);
  checkTraffic(c, outcome, errors);
  return errors;
}

}  // namespace hora::schedule_test
