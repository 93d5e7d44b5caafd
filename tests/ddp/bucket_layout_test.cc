// Bucket assignment: caps, order, separation by type, offsets, fingerprint.
#include <gtest/gtest.h>

#include <vector>

#include "hora/ddp/bucket_layout.h"

namespace hora::ddp {
namespace {

using Indices = std::vector<std::size_t>;

ParameterShape floats(std::size_t count) { return {count, DataType::Float32}; }

TEST(BucketLayout, ReverseRegistrationOrderWithFirstBucketCap) {
  // 100-byte first bucket, 200-byte later buckets; 10 parameters of 40 bytes.
  std::vector<ParameterShape> shapes(10, floats(10));
  const auto buckets = computeBucketLayout(shapes, {.firstBucketBytes = 100, .bucketBytes = 200});
  // Walk 9, 8, 7 (120 bytes >= 100) closes the first bucket; then 5 per bucket.
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].parameters, (Indices{9, 8, 7}));
  EXPECT_EQ(buckets[1].parameters, (Indices{6, 5, 4, 3, 2}));
  EXPECT_EQ(buckets[2].parameters, (Indices{1, 0}));
  EXPECT_EQ(buckets[0].offsets, (Indices{0, 10, 20}));
  EXPECT_EQ(buckets[1].offsets, (Indices{0, 10, 20, 30, 40}));
  EXPECT_EQ(buckets[2].count, 20u);
  EXPECT_EQ(buckets[1].bytes(), 200u);
}

TEST(BucketLayout, DefaultCapsAreOneAndTwentyFiveMebibytes) {
  const BucketCaps caps;
  EXPECT_EQ(caps.firstBucketBytes, 1u << 20);
  EXPECT_EQ(caps.bucketBytes, 25u << 20);
  // 40 parameters of 1 MiB each: one in the first bucket, then 25 per bucket.
  std::vector<ParameterShape> shapes(40, floats(1 << 18));
  const auto buckets = computeBucketLayout(shapes);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].parameters.size(), 1u);
  EXPECT_EQ(buckets[1].parameters.size(), 25u);
  EXPECT_EQ(buckets[2].parameters.size(), 14u);
  EXPECT_EQ(buckets[0].parameters[0], 39u);
}

TEST(BucketLayout, LargeParameterGetsItsOwnBucket) {
  std::vector<ParameterShape> shapes{floats(1), floats(1000), floats(1)};
  const auto buckets = computeBucketLayout(shapes, {.firstBucketBytes = 16, .bucketBytes = 16});
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].parameters, (Indices{2, 1}));  // 4 + 4000 bytes: closes
  EXPECT_EQ(buckets[1].parameters, (Indices{0}));
}

TEST(BucketLayout, TypesNeverShareABucketAndOrderFollowsCompletion) {
  std::vector<ParameterShape> shapes{floats(4), {4, DataType::Float64}, floats(4),
                                     {4, DataType::Float64}, {2, DataType::Float16}};
  const auto buckets = computeBucketLayout(shapes, {.firstBucketBytes = 1000, .bucketBytes = 1000});
  ASSERT_EQ(buckets.size(), 3u);
  // The walk meets 4 (half), 3 (double), 2 (float) first, in that order.
  EXPECT_EQ(buckets[0].type, DataType::Float16);
  EXPECT_EQ(buckets[0].parameters, (Indices{4}));
  EXPECT_EQ(buckets[1].type, DataType::Float64);
  EXPECT_EQ(buckets[1].parameters, (Indices{3, 1}));
  EXPECT_EQ(buckets[2].type, DataType::Float32);
  EXPECT_EQ(buckets[2].parameters, (Indices{2, 0}));
  EXPECT_EQ(buckets[1].bytes(), 64u);
}

// Layers of a large bf16 weight and a small fp32 norm: each weight fills a
// bucket of its own while the norms' bucket stays open to the end. Buckets
// go in the order backward completes them, so the weights' buckets are not
// held back behind the norms'.
TEST(BucketLayout, ABucketThatStaysOpenDoesNotHoldBackTheOthers) {
  const ParameterShape weight{1024, DataType::Bfloat16}, norm{4, DataType::Float32};
  std::vector<ParameterShape> shapes{weight, norm, weight, norm, weight, norm};
  const auto buckets = computeBucketLayout(shapes, {.firstBucketBytes = 1024, .bucketBytes = 1024});
  ASSERT_EQ(buckets.size(), 4u);
  EXPECT_EQ(buckets[0].parameters, (Indices{4}));
  EXPECT_EQ(buckets[1].parameters, (Indices{2}));
  EXPECT_EQ(buckets[2].parameters, (Indices{5, 3, 1}));  // complete once norm 1 is ready
  EXPECT_EQ(buckets[3].parameters, (Indices{0}));
}

TEST(BucketLayout, EveryParameterAppearsExactlyOnceWithContiguousOffsets) {
  std::vector<ParameterShape> shapes;
  for (std::size_t i = 0; i < 50; ++i) shapes.push_back(floats(1 + (i * 37) % 101));
  const auto buckets = computeBucketLayout(shapes, {.firstBucketBytes = 64, .bucketBytes = 512});
  std::vector<int> seen(shapes.size(), 0);
  for (const auto& bucket : buckets) {
    std::size_t expectedOffset = 0;
    for (std::size_t k = 0; k < bucket.parameters.size(); ++k) {
      ++seen[bucket.parameters[k]];
      EXPECT_EQ(bucket.offsets[k], expectedOffset);
      expectedOffset += shapes[bucket.parameters[k]].count;
    }
    EXPECT_EQ(bucket.count, expectedOffset);
  }
  for (int count : seen) EXPECT_EQ(count, 1);
}

TEST(BucketLayout, EmptyModelHasNoBuckets) {
  EXPECT_TRUE(computeBucketLayout(std::vector<ParameterShape>{}).empty());
}

TEST(BucketLayout, FingerprintSeesShapesAndCaps) {
  std::vector<ParameterShape> a{floats(10), floats(20)};
  std::vector<ParameterShape> b{floats(10), floats(21)};
  std::vector<ParameterShape> c{floats(10), {20, DataType::Float64}};
  const auto layoutA = computeBucketLayout(a);
  EXPECT_EQ(layoutFingerprint(a, layoutA), layoutFingerprint(a, computeBucketLayout(a)));
  EXPECT_NE(layoutFingerprint(a, layoutA), layoutFingerprint(b, computeBucketLayout(b)));
  EXPECT_NE(layoutFingerprint(a, layoutA), layoutFingerprint(c, computeBucketLayout(c)));
  const auto split = computeBucketLayout(a, {.firstBucketBytes = 4, .bucketBytes = 4});
  EXPECT_NE(layoutFingerprint(a, layoutA), layoutFingerprint(a, split));
}

}  // namespace
}  // namespace hora::ddp
