// Sizes at the default pipeline settings (1 MiB chunks, 128 KiB slices):
// every collective with blocks larger than one chunk, and a 64 MiB float
// all-reduce. Plus floating avg on 3 ranks, where 1/3 is inexact: the
// result must be close to the exact mean and identical on every rank.
#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "case_matrix.h"
#include "element_types.h"
#include "matrix_params.h"
#include "reference.h"
#include "simple_program.h"

namespace hora_coll_test {
namespace {

RunOptions threads(int nranks) {
  RunOptions options;
  options.mode = RankMode::Threads;
  options.nranks = nranks;
  options.deadline = std::chrono::seconds(120);
  return options;
}

TEST(LargeBuffers, AllReduceOf64MiBOfFloats) {
  CollectiveCase c;
  c.collective = Collective::AllReduce;
  c.type = ncclFloat32;
  c.reduction = Reduction::Sum;
  c.count = (64u << 20) / sizeof(float);
  c.seed = 64;
  expectRanksSucceed(threads(3), collectiveCasesProgram({c}));
}

TEST(LargeBuffers, EveryCollectiveBeyondOneChunk) {
  CaseMatrix matrix;
  matrix.collectives = allCollectives();
  matrix.types = {ncclFloat32, ncclFloat16, ncclUint8};
  matrix.reductions = {Reduction::Sum, Reduction::Max};
  // Primes just above one chunk (1 MiB) of 4-, 2- and 1-byte elements
  // where it matters; each count is used with each type.
  matrix.counts = {262147, 524309};
  matrix.seed = 65;
  expectRanksSucceed(threads(3), collectiveCasesProgram(buildCases(matrix, 3)));
}

// Between processes over shared memory, all-gathers of a few MiB are copied
// once, straight out of the previous rank's buffer (process_vm_readv), and
// larger ones through the FIFO; broadcasts always go through the FIFO.
// Sizes on both sides of those limits, out of place and in place.
TEST(LargeBuffers, MovesBetweenProcessesOnBothSidesOfTheSingleCopyLimits) {
  CaseMatrix matrix;
  matrix.collectives = {Collective::AllGather, Collective::Broadcast};
  matrix.types = {ncclFloat32, ncclUint8};
  matrix.reductions = {Reduction::Sum};
  // 3 ranks x 4 bytes x count: 0.75 MiB, just over 1 MiB, and 12 MiB of
  // output with the 4-byte type (the 1-byte type stays below the limit).
  matrix.counts = {65536, 87383, 1048573};
  matrix.seed = 66;
  RunOptions options = threads(3);
  options.mode = RankMode::Processes;
  options.environment = {{"HORA_SHM_SINGLE_COPY_MAX", "8M"}};
  expectRanksSucceed(options, collectiveCasesProgram(buildCases(matrix, 3)));
}

// ---- avg with a rank count that is not a power of two

std::string digestOf(const std::vector<unsigned char>& bytes) {
  std::uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (unsigned char byte : bytes) hash = (hash ^ byte) * 1099511628211ull;
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

struct AvgCase {
  ncclDataType_t type;
  double relativeTolerance;  // of the mean magnitude, for rounding x/3 and the partial sums
};

TEST(AvgOnThreeRanks, CloseToTheMeanAndIdenticalOnEveryRank) {
  constexpr std::size_t kCount = 4099;
  const AvgCase cases[] = {{ncclFloat64, 1e-15}, {ncclFloat32, 1e-6}, {ncclFloat16, 4e-3},
                           {ncclBfloat16, 3e-2}};
  for (const AvgCase& avg : cases) {
    const ElementType& type = elementType(avg.type);
    SCOPED_TRACE(type.name);
    RunOptions options = threads(3);
    options.environment = smallPipeline();
    expectRanksSucceed(options, programOf([&type, avg](int rank, int nranks) {
      auto send = std::make_shared<std::vector<unsigned char>>(kCount * type.size);
      auto recv = std::make_shared<std::vector<unsigned char>>(kCount * type.size);
      for (std::size_t i = 0; i < kCount; ++i)
        storeBits(type, send->data(), i, reductionInputBits(type, Reduction::Avg, nranks, 77, rank, i));
      SimpleStep step;
      step.name = std::string("all_reduce avg ") + type.name;
      step.launch = [=, &type](RankContext& c) {
        return ncclAllReduce(send->data(), recv->data(), kCount, type.id, ncclAvg, c.comm, nullptr);
      };
      step.verify = [=, &type](RankContext& c) {
        int reported = 0;
        for (std::size_t i = 0; i < kCount && reported < 5; ++i) {
          double sum = 0, magnitude = 0;
          for (int q = 0; q < c.nranks; ++q) {
            double x = decodeFloat(type, reductionInputBits(type, Reduction::Avg, c.nranks, 77, q, i));
            sum += x;
            magnitude += std::fabs(x);
          }
          const double mean = sum / c.nranks;
          const double got = decodeFloat(type, loadBits(type, recv->data(), i));
          const double tolerance = avg.relativeTolerance * std::max(magnitude / c.nranks, 1.0);
          if (!(std::fabs(got - mean) <= tolerance)) {
            ++reported;
            ADD_FAILURE() << "rank " << c.rank << ", element " << i << ": got " << got << ", mean "
                          << mean << " (tolerance " << tolerance << ")";
          }
        }
        c.agreement = digestOf(*recv);  // the harness compares it across ranks
      };
      return std::vector<SimpleStep>{step};
    }));
  }
}

}  // namespace
}  // namespace hora_coll_test
