// The window schedules of algorithms/windows.h, played symbolically on 1 to
// 9 ranks and 1 to 4 channels: a recorder notes which rank's output each
// call writes and what it holds (logical input offset, contributing ranks),
// and the checks demand that every output element of every rank is written
// exactly once, by one rank, with what the collective defines. Each rank
// writing its share once is also what makes all ranks hold the same bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/windows.h"

namespace hora::schedule_test {
namespace {

enum class WindowCollective { AllReduce, Reduce, ReduceScatter, AllGather, Broadcast };

const char* nameOf(WindowCollective c) {
  switch (c) {
    case WindowCollective::AllReduce: return "windowAllReduce";
    case WindowCollective::Reduce: return "windowReduce";
    case WindowCollective::ReduceScatter: return "windowReduceScatter";
    case WindowCollective::AllGather: return "windowAllGather";
    case WindowCollective::Broadcast: return "windowBroadcast";
  }
  return "?";
}

// One output range written by some rank: [out, out + size) of rank
// `target`'s output now holds logical input elements logical.. of `mask`.
struct WindowWrite {
  int target;
  std::size_t out, size;
  std::uint64_t logical;
  unsigned mask;
  int writer;
};

class WindowRecorder {
 public:
  WindowRecorder(int nranks, int self, std::vector<WindowWrite>& writes)
      : n_(nranks), self_(self), writes_(writes) {}

  void reduce(std::size_t in, int outRank, std::size_t out, std::size_t count) {
    const unsigned all = (1u << n_) - 1;
    for (int t = 0; t < n_; ++t)
      if (outRank == algorithms::kEveryRank || outRank == t)
        writes_.push_back({t, out, count, in, all, self_});
  }
  void copy(int fromRank, std::size_t in, std::size_t out, std::size_t count) {
    writes_.push_back({self_, out, count, in, 1u << fromRank, self_});
  }

 private:
  int n_, self_;
  std::vector<WindowWrite>& writes_;
};

struct WindowCase {
  WindowCollective collective;
  int nranks, channels;
  std::size_t count, align;
  int root;

  std::string describe() const {
    return std::string(nameOf(collective)) + " n=" + std::to_string(nranks) +
           " channels=" + std::to_string(channels) + " count=" + std::to_string(count) +
           " align=" + std::to_string(align) + " root=" + std::to_string(root);
  }
};

std::vector<WindowWrite> play(const WindowCase& c) {
  std::vector<WindowWrite> writes;
  for (int rank = 0; rank < c.nranks; ++rank)
    for (int index = 0; index < c.channels; ++index) {
      WindowRecorder w(c.nranks, rank, writes);
      const algorithms::Channel channel{index, c.channels};
      switch (c.collective) {
        case WindowCollective::AllReduce:
          algorithms::windowReduce(w, c.nranks, rank, algorithms::kEveryRank, channel, c.count, c.align);
          break;
        case WindowCollective::Reduce:
          algorithms::windowReduce(w, c.nranks, rank, c.root, channel, c.count, c.align);
          break;
        case WindowCollective::ReduceScatter:
          algorithms::windowReduceScatter(w, rank, channel, c.count, c.align);
          break;
        case WindowCollective::AllGather:
          algorithms::windowAllGather(w, c.nranks, channel, c.count, c.align);
          break;
        case WindowCollective::Broadcast:
          algorithms::windowBroadcast(w, c.root, channel, c.count, c.align);
          break;
      }
    }
  return writes;
}

// What output element o of rank t must hold: logical offset and mask, and
// where the run it starts may end; size 0 where nothing is defined.
struct Expected {
  std::uint64_t logical;
  unsigned mask;
  std::size_t end;
};
std::size_t definedOutput(const WindowCase& c, int t) {
  switch (c.collective) {
    case WindowCollective::Reduce: return t == c.root ? c.count : 0;
    case WindowCollective::AllGather: return c.count * static_cast<std::size_t>(c.nranks);
    default: return c.count;
  }
}
Expected expected(const WindowCase& c, int t, std::size_t o) {
  const unsigned all = (1u << c.nranks) - 1;
  switch (c.collective) {
    case WindowCollective::ReduceScatter:
      return {static_cast<std::uint64_t>(t) * c.count + o, all, c.count};
    case WindowCollective::AllGather: {
      const std::size_t b = o / c.count;
      return {o - b * c.count, 1u << b, (b + 1) * c.count};
    }
    case WindowCollective::Broadcast: return {o, 1u << c.root, c.count};
    default: return {o, all, c.count};
  }
}

std::vector<std::string> check(const WindowCase& c, std::vector<WindowWrite> writes) {
  std::vector<std::string> errors;
  std::sort(writes.begin(), writes.end(), [](const WindowWrite& a, const WindowWrite& b) {
    return a.target != b.target ? a.target < b.target : a.out < b.out;
  });
  std::size_t i = 0;
  for (int t = 0; t < c.nranks && errors.size() < 5; ++t) {
    const std::string who = "rank " + std::to_string(t) + "'s output: ";
    std::size_t cursor = 0;
    for (; i < writes.size() && writes[i].target == t; ++i) {
      const WindowWrite& w = writes[i];
      const std::string range = "[" + std::to_string(w.out) + ", " + std::to_string(w.out + w.size) + ")";
      if (w.out < cursor) errors.push_back(who + range + " written twice (rank " + std::to_string(w.writer) + ")");
      if (w.out > cursor) errors.push_back(who + "[" + std::to_string(cursor) + ", " + std::to_string(w.out) + ") never written");
      if (w.out + w.size > definedOutput(c, t)) {
        errors.push_back(who + range + " written where the collective defines nothing");
      } else if (w.size > 0) {
        const Expected e = expected(c, t, w.out);
        if (w.logical != e.logical || w.mask != e.mask || w.out + w.size > e.end)
          errors.push_back(who + range + " holds the wrong elements or contributions");
      }
      cursor = std::max(cursor, w.out + w.size);
    }
    if (cursor < definedOutput(c, t))
      errors.push_back(who + "[" + std::to_string(cursor) + ", " + std::to_string(definedOutput(c, t)) + ") never written");
  }
  return errors;
}

void expectHolds(const WindowCase& c) {
  const std::vector<std::string> errors = check(c, play(c));
  if (errors.empty()) return;
  std::string text;
  for (const std::string& error : errors) text += "\n  " + error;
  ADD_FAILURE() << c.describe() << text;
}

class WindowSchedules : public ::testing::TestWithParam<WindowCollective> {};

TEST_P(WindowSchedules, WriteEveryOutputElementOnceWithWhatTheCollectiveDefines) {
  static constexpr std::size_t kCounts[] = {0,    1,    2,     3,
                                            7,    61,   1000,  4099,
                                            65537, (std::size_t{1} << 32) + 3};
  const WindowCollective collective = GetParam();
  const bool rooted = collective == WindowCollective::Reduce || collective == WindowCollective::Broadcast;
  for (int n = 1; n <= 9; ++n)
    for (int channels = 1; channels <= 4; ++channels)
      for (std::size_t count : kCounts)
        for (std::size_t align : {std::size_t{1}, std::size_t{16}})
          for (int root = 0; root < (rooted ? n : 1); ++root)
            expectHolds({collective, n, channels, count, align, root});
}

INSTANTIATE_TEST_SUITE_P(Each, WindowSchedules,
                         ::testing::Values(WindowCollective::AllReduce, WindowCollective::Reduce,
                                           WindowCollective::ReduceScatter,
                                           WindowCollective::AllGather, WindowCollective::Broadcast),
                         [](const ::testing::TestParamInfo<WindowCollective>& info) {
                           return std::string(nameOf(info.param));
                         });

// The checks can fail: a recorder whose rank 0 also reduces rank 1's share
// writes those elements twice.
TEST(WindowChecks, CatchAShareReducedTwice) {
  const WindowCase c{WindowCollective::AllReduce, 3, 1, 100, 1, 0};
  std::vector<WindowWrite> writes = play(c);
  WindowRecorder extra(3, 0, writes);
  algorithms::windowReduce(extra, 3, 1, algorithms::kEveryRank, {0, 1}, c.count, c.align);
  EXPECT_FALSE(check(c, writes).empty());
}

TEST(WindowChecks, CatchAMissingBlock) {
  const WindowCase c{WindowCollective::AllGather, 4, 2, 10, 1, 0};
  std::vector<WindowWrite> writes = play(c);
  writes.erase(std::remove_if(writes.begin(), writes.end(),
                              [](const WindowWrite& w) { return w.target == 2 && w.out >= 30; }),
               writes.end());
  EXPECT_FALSE(check(c, writes).empty());
}

}  // namespace
}  // namespace hora::schedule_test
