// DistributedSampler and BatchSampler against a table of PyTorch's own output
// (fixtures/sampler_reference.txt, written by make_sampler_reference.py), plus
// the argument checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <limits>
#include <string>
#include <vector>

#include "hora/communicator.h"
#include "hora/ddp/sampler.h"

namespace hora::ddp {
namespace {

using Indices = std::vector<std::size_t>;

std::vector<std::string> splitOnBar(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  while (true) {
    const std::size_t bar = text.find('|', begin);
    parts.push_back(text.substr(begin, bar == std::string::npos ? std::string::npos : bar - begin));
    if (bar == std::string::npos) return parts;
    begin = bar + 1;
  }
}

Indices parseIndices(const std::string& text) {
  std::istringstream in(text);
  Indices values;
  std::size_t value;
  while (in >> value) values.push_back(value);
  return values;
}

bool isBlank(const std::string& text) {
  return text.find_first_not_of(' ') == std::string::npos;
}

std::string trimmed(const std::string& text) {
  if (isBlank(text)) return {};
  const std::size_t first = text.find_first_not_of(' ');
  return text.substr(first, text.find_last_not_of(' ') - first + 1);
}

// The hash the table uses for long lists: FNV-1a over whole 64-bit words.
std::uint64_t fnv1a64(const Indices& values) {
  std::uint64_t hash = 0xCBF29CE484222325ull;
  for (std::size_t v : values) {
    hash ^= v;
    hash *= 0x100000001B3ull;
  }
  return hash;
}

struct ReferenceLine {
  char kind;
  std::vector<std::uint64_t> head;    // the numbers before the first '|'
  std::vector<std::string> groups;    // the text between the bars
  std::string text;
};

std::vector<ReferenceLine> loadReference() {
  std::ifstream file(HORA_SAMPLER_REFERENCE);
  EXPECT_TRUE(file.good()) << "cannot open " << HORA_SAMPLER_REFERENCE;
  std::vector<ReferenceLine> lines;
  std::string text;
  while (std::getline(file, text)) {
    if (text.empty() || text[0] == '#') continue;
    ReferenceLine line;
    line.kind = text[0];
    line.text = text;
    const std::size_t bar = text.find('|');
    std::istringstream head(text.substr(1, bar - 1));
    std::uint64_t number;
    while (head >> number) line.head.push_back(number);
    line.groups = splitOnBar(text.substr(bar + 1));
    lines.push_back(std::move(line));
  }
  return lines;
}

TEST(TorchRandperm, MatchesKnownPyTorchPermutation) {
  // torch.randperm(10, generator=torch.Generator().manual_seed(0)).tolist()
  EXPECT_EQ(torchRandperm(10, 0), (Indices{4, 1, 7, 5, 3, 9, 0, 8, 6, 2}));
  // Only the low 32 bits of the seed count.
  EXPECT_EQ(torchRandperm(50, (1ull << 32) + 5), torchRandperm(50, 5));
  EXPECT_TRUE(torchRandperm(0, 3).empty());
  EXPECT_EQ(torchRandperm(1, 3), Indices{0});
}

TEST(DistributedSampler, MatchesPyTorchReferenceTable) {
  const auto lines = loadReference();
  std::size_t checkedLists = 0;
  for (const auto& line : lines) {
    if (line.kind != 'D' && line.kind != 'H') continue;
    ASSERT_EQ(line.head.size(), 6u) << line.text;
    const std::size_t n = line.head[0];
    const int replicas = static_cast<int>(line.head[1]);
    ASSERT_EQ(line.groups.size(), static_cast<std::size_t>(replicas)) << line.text;
    for (int rank = 0; rank < replicas; ++rank) {
      DistributedSampler sampler(n, {.numReplicas = replicas,
                                     .rank = rank,
                                     .shuffle = line.head[2] != 0,
                                     .seed = line.head[3],
                                     .dropLast = line.head[5] != 0});
      sampler.setEpoch(line.head[4]);
      const Indices mine = sampler.indices();
      EXPECT_EQ(mine.size(), sampler.numSamples()) << line.text;
      const std::string& expected = line.groups[static_cast<std::size_t>(rank)];
      if (line.kind == 'D') {
        EXPECT_EQ(mine, parseIndices(expected)) << "rank " << rank << " of: " << line.text;
      } else {
        std::ostringstream summary;
        summary << mine.size() << ':' << std::hex;
        summary.width(16);
        summary.fill('0');
        summary << fnv1a64(mine);
        EXPECT_EQ(summary.str(), trimmed(expected)) << "rank " << rank << " of: " << line.text;
      }
      ++checkedLists;
    }
  }
  // The table holds thousands of configurations; a near-empty read is a bug.
  EXPECT_GT(checkedLists, 10000u);
}

TEST(BatchSampler, MatchesPyTorchReferenceTable) {
  std::size_t checkedLines = 0;
  for (const auto& line : loadReference()) {
    if (line.kind != 'B') continue;
    ASSERT_EQ(line.head.size(), 7u) << line.text;
    DistributedSampler sampler(line.head[0], {.numReplicas = static_cast<int>(line.head[1]),
                                              .rank = static_cast<int>(line.head[2]),
                                              .shuffle = true,
                                              .seed = line.head[3]});
    sampler.setEpoch(line.head[4]);
    const BatchSampler batcher(line.head[5], line.head[6] != 0);
    std::vector<Indices> expected;
    if (!(line.groups.size() == 1 && isBlank(line.groups[0])))
      for (const auto& group : line.groups) expected.push_back(parseIndices(group));
    const Indices indices = sampler.indices();
    EXPECT_EQ(batcher.batches(indices), expected) << line.text;
    EXPECT_EQ(batcher.numBatches(indices.size()), expected.size()) << line.text;
    ++checkedLines;
  }
  EXPECT_GT(checkedLines, 100u);
}

TEST(DistributedSampler, RejectsBadRankAndReplicaCount) {
  EXPECT_THROW(DistributedSampler(10, {.numReplicas = 0, .rank = 0}), Error);
  EXPECT_THROW(DistributedSampler(10, {.numReplicas = 2, .rank = 2}), Error);
  EXPECT_THROW(DistributedSampler(10, {.numReplicas = 2, .rank = -1}), Error);
  try {
    DistributedSampler(10, {.numReplicas = 3, .rank = 5});
    FAIL() << "rank 5 of 3 was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(error.what()).find("rank 5"), std::string::npos) << error.what();
  }
}

// ceil(n / R) as PyTorch computes it, with no sum that wraps; a padded
// total beyond size_t, or beyond memory, is a hora::Error.
TEST(DistributedSampler, HugeDatasetsCountRightOrAreRefused) {
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  EXPECT_EQ(DistributedSampler(kMax - 1, {.numReplicas = 3, .rank = 0}).numSamples(), 6148914691236517205u);
  EXPECT_EQ(DistributedSampler(kMax, {.numReplicas = 2, .rank = 1, .dropLast = true}).numSamples(), kMax / 2);
  try {
    DistributedSampler(kMax, {.numReplicas = 2, .rank = 0});  // ceil: 2^63, padded to 2^64
    FAIL() << "a padded total beyond size_t was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(error.what()).find("cannot be padded"), std::string::npos) << error.what();
  }
  DistributedSampler enormous(kMax / 4, {.numReplicas = 2, .rank = 0});
  try {
    (void)enormous.indices();
    FAIL() << "indices of 2^62 samples were made";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::System);
    EXPECT_NE(std::string(error.what()).find("do not fit in memory"), std::string::npos) << error.what();
  }
}

TEST(DistributedSampler, EpochChangesOrderButNotTheSetOfSamples) {
  DistributedSampler rank0(10, {.numReplicas = 2, .rank = 0, .seed = 3});
  DistributedSampler rank1(10, {.numReplicas = 2, .rank = 1, .seed = 3});
  auto all = [&] {
    Indices joined = rank0.indices();
    const Indices other = rank1.indices();
    joined.insert(joined.end(), other.begin(), other.end());
    std::sort(joined.begin(), joined.end());
    return joined;
  };
  const Indices epoch0 = rank0.indices();
  EXPECT_EQ(all(), (Indices{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  rank0.setEpoch(1);
  rank1.setEpoch(1);
  EXPECT_NE(rank0.indices(), epoch0);
  EXPECT_EQ(all(), (Indices{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(BatchSampler, RejectsZeroBatchSize) { EXPECT_THROW(BatchSampler(0), Error); }

// A batch size near the largest std::size_t: one batch of everything (or
// none with dropLast), with no overflow in the count or the cut.
TEST(BatchSampler, AHugeBatchSizeGivesOneBatch) {
  const std::vector<std::size_t> indices = {4, 1, 3};
  const BatchSampler keep(std::numeric_limits<std::size_t>::max());
  EXPECT_EQ(keep.numBatches(indices.size()), 1u);
  EXPECT_EQ(keep.batches(indices), std::vector<std::vector<std::size_t>>{indices});
  const BatchSampler drop(std::numeric_limits<std::size_t>::max(), /*dropLast=*/true);
  EXPECT_EQ(drop.numBatches(indices.size()), 0u);
  EXPECT_TRUE(drop.batches(indices).empty());
}

}  // namespace
}  // namespace hora::ddp
