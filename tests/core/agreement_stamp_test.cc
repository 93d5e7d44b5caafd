// The agreement check's stamps (core/agreement.h): the stamp every checked
// collective makes straight from its Op must be the one its descriptor
// gives, field for field, and read back to the same descriptor; the fields
// a kind does not use (a reduction, a root) must not make two ranks'
// stamps differ; the fields it uses must.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>

#include "core/agreement.h"

namespace hora::core::testing {
namespace {

constexpr OpKind kCollectives[] = {OpKind::AllReduce, OpKind::ReduceScatter, OpKind::AllGather,
                                   OpKind::Broadcast, OpKind::Reduce,        OpKind::AllToAll,
                                   OpKind::Gather,    OpKind::Scatter};

Op collective(OpKind kind, int root, kernels::ReduceKind reduction) {
  Op op;
  op.kind = kind;
  op.count = 1001;
  op.type = DataType::Int32;
  op.reduce.kind = reduction;
  op.root = root;
  return op;
}

TEST(AgreementStamp, CollectiveStampIsTheDescriptorsStamp) {
  for (OpKind kind : kCollectives) {
    SCOPED_TRACE(opKindName(kind));
    const Op op = collective(kind, 2, kernels::ReduceKind::Max);
    const transport::OpStamp direct = collectiveStamp(op, 77, 3);
    const transport::OpStamp viaDescriptor = toStamp(collectiveDescriptor(op, 77, 3));
    EXPECT_EQ(direct.words, viaDescriptor.words);
    EXPECT_EQ(direct.check, viaDescriptor.check);
    const OpDescriptor back = fromStamp(direct);
    EXPECT_EQ(back.kind, kind);
    EXPECT_EQ(back.sequence, 77u);
    EXPECT_EQ(back.count, 1001u);
    EXPECT_EQ(back.type, DataType::Int32);
    EXPECT_EQ(back.rank, 3);
    EXPECT_EQ(back.root, rootedKind(kind) ? 2 : -1);
    EXPECT_EQ(back.reduction, reducingKind(kind) ? kernels::ReduceKind::Max : kernels::ReduceKind::Sum);
    EXPECT_FALSE(back.windows);
    // The same call on windows: another check, and the flag comes back.
    const transport::OpStamp onWindows = collectiveStamp(op, 77, 3, true);
    EXPECT_NE(onWindows.check, direct.check);
    EXPECT_TRUE(fromStamp(onWindows).windows);
    EXPECT_EQ(fromStamp(onWindows).root, back.root);
  }
}

TEST(AgreementStamp, KindSetsAreTheKindsThatUseTheField) {
  EXPECT_TRUE(reducingKind(OpKind::AllReduce));
  EXPECT_TRUE(reducingKind(OpKind::ReduceScatter));
  EXPECT_TRUE(reducingKind(OpKind::Reduce));
  EXPECT_FALSE(reducingKind(OpKind::AllGather));
  EXPECT_FALSE(reducingKind(OpKind::Broadcast));
  EXPECT_FALSE(reducingKind(OpKind::Send));
  EXPECT_TRUE(rootedKind(OpKind::Broadcast));
  EXPECT_TRUE(rootedKind(OpKind::Reduce));
  EXPECT_TRUE(rootedKind(OpKind::Gather));
  EXPECT_TRUE(rootedKind(OpKind::Scatter));
  EXPECT_FALSE(rootedKind(OpKind::AllReduce));
  EXPECT_FALSE(rootedKind(OpKind::AllToAll));
  EXPECT_FALSE(rootedKind(OpKind::Recv));
}

TEST(AgreementStamp, UnusedFieldsDoNotMatterUsedOnesDo) {
  for (OpKind kind : kCollectives) {
    SCOPED_TRACE(opKindName(kind));
    const Op a = collective(kind, 0, kernels::ReduceKind::Sum);
    const Op otherRoot = collective(kind, 1, kernels::ReduceKind::Sum);
    const Op otherReduction = collective(kind, 0, kernels::ReduceKind::Min);
    const auto stampOf = [](const Op& op, int rank) { return collectiveStamp(op, 5, rank); };
    EXPECT_TRUE(transport::stampsAgree(stampOf(a, 0), stampOf(a, 1)));  // the rank is not compared
    EXPECT_EQ(transport::stampsAgree(stampOf(a, 0), stampOf(otherRoot, 1)), !rootedKind(kind));
    EXPECT_EQ(transport::stampsAgree(stampOf(a, 0), stampOf(otherReduction, 1)), !reducingKind(kind));
    Op otherCount = a;
    otherCount.count += 1;
    EXPECT_FALSE(transport::stampsAgree(stampOf(a, 0), stampOf(otherCount, 1)));
    EXPECT_NE(stampOf(a, 0).check, stampOf(otherCount, 0).check);
    EXPECT_NE(collectiveStamp(a, 5, 0).check, collectiveStamp(a, 6, 0).check);  // a skipped call
  }
}

TEST(AgreementStamp, NearbyCallsHaveDifferentChecks) {
  // Over shared memory only the 30-bit check travels with the first slot:
  // calls a rank may confuse (the next call, a count off by one, another
  // kind, type or root) must not share one. A fixed grid of such stamps,
  // so this either always passes or always fails.
  std::set<std::uint64_t> checks;
  std::size_t stamps = 0;
  const std::uint64_t counts[] = {0, 1, 2, 3, 7, 8, 1000, 1001, 1u << 20, (1u << 20) + 1};
  for (std::uint64_t sequence = 1; sequence <= 40; ++sequence)
    for (std::uint64_t count : counts)
      for (OpKind kind : {OpKind::AllReduce, OpKind::Broadcast, OpKind::AllGather})
        for (int root : {0, 1}) {
          if (!rootedKind(kind) && root != 0) continue;
          Op op = collective(kind, root, kernels::ReduceKind::Sum);
          op.count = count;
          checks.insert(collectiveStamp(op, sequence, 0).check);
          ++stamps;
        }
  EXPECT_EQ(checks.size(), stamps);
}

}  // namespace
}  // namespace hora::core::testing
