#include "hora/ddp/bucket_layout.h"

#include <algorithm>
#include <map>
#include <utility>

namespace hora::ddp {

namespace {

using BucketKey = std::pair<MemoryKind, DataType>;

// A bucket and where the walk met its last parameter: when backward,
// which produces gradients roughly in walk order, completes it (the sort
// key). A bucket of one type can complete long after it opened, while
// buckets of another type fill and close (a model of bf16 weights and fp32
// norms): ordered by opening, it would hold back every bucket after it.
struct PlacedBucket {
  Bucket bucket;
  std::size_t lastWalkPosition = 0;
};

}  // namespace

std::vector<Bucket> computeBucketLayout(std::span<const ParameterShape> parameters,
                                        const BucketCaps& caps) {
  std::map<BucketKey, PlacedBucket> open;
  std::map<BucketKey, std::size_t> closedPerKey;  // picks the cap of the next bucket
  std::vector<PlacedBucket> closed;

  auto close = [&](const BucketKey& key) {
    auto node = open.extract(key);
    closed.push_back({std::move(node.mapped().bucket), node.mapped().lastWalkPosition});
    ++closedPerKey[key];
  };

  for (std::size_t walk = 0; walk < parameters.size(); ++walk) {
    const std::size_t index = parameters.size() - 1 - walk;
    const ParameterShape& shape = parameters[index];
    const BucketKey key{shape.memory, shape.type};
    auto [slot, isNew] = open.try_emplace(key);
    PlacedBucket& current = slot->second;
    if (isNew) {
      current.bucket.type = shape.type;
      current.bucket.memory = shape.memory;
    }
    current.lastWalkPosition = walk;
    current.bucket.parameters.push_back(index);
    current.bucket.offsets.push_back(current.bucket.count);
    current.bucket.count += shape.count;

    const std::size_t cap = closedPerKey[key] == 0 ? caps.firstBucketBytes : caps.bucketBytes;
    if (current.bucket.bytes() >= cap) close(key);
  }
  while (!open.empty()) close(open.begin()->first);

  std::stable_sort(closed.begin(), closed.end(), [](const PlacedBucket& a, const PlacedBucket& b) {
    return a.lastWalkPosition < b.lastWalkPosition;
  });
  std::vector<Bucket> ordered;
  ordered.reserve(closed.size());
  for (auto& entry : closed) ordered.push_back(std::move(entry.bucket));
  return ordered;
}

namespace {

// FNV-1a over 64-bit words: simple, stable across compilers and platforms
// (std::hash is neither).
class Fingerprint {
 public:
  void add(std::uint64_t value) {
    hash_ ^= value;
    hash_ *= 0x100000001B3ull;
  }
  std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = 0xCBF29CE484222325ull;
};

}  // namespace

std::uint64_t layoutFingerprint(std::span<const ParameterShape> parameters,
                                std::span<const Bucket> buckets) {
  Fingerprint fingerprint;
  fingerprint.add(parameters.size());
  for (const auto& shape : parameters) {
    fingerprint.add(shape.count);
    fingerprint.add(static_cast<std::uint64_t>(shape.type));
    fingerprint.add(static_cast<std::uint64_t>(shape.memory));
  }
  fingerprint.add(buckets.size());
  for (const auto& bucket : buckets) {
    fingerprint.add(static_cast<std::uint64_t>(bucket.type));
    fingerprint.add(static_cast<std::uint64_t>(bucket.memory));
    fingerprint.add(bucket.count);
    fingerprint.add(bucket.parameters.size());
    for (std::size_t i = 0; i < bucket.parameters.size(); ++i) {
      fingerprint.add(bucket.parameters[i]);
      fingerprint.add(bucket.offsets[i]);
    }
  }
  return fingerprint.value();
}

}  // namespace hora::ddp
