// How the Reducer packs gradients into flat buckets: which parameters share a
// bucket, where each gradient lies in it, and in which order buckets are
// reduced. A pure function of the parameter list and the caps, so every rank
// computes the same layout from the same model (the Reducer checks that).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hora/types.h"

namespace hora::ddp {

// Where gradient memory lives. Buckets never mix kinds: a bucket is one flat
// buffer handed to one collective. Device: CUDA memory on the communicator's
// GPU (builds with CUDA; reducer.h says what the caller must do).
enum class MemoryKind : int { Host = 0, Device = 1 };

// What bucketing needs to know about a parameter.
struct ParameterShape {
  std::size_t count = 0;  // elements
  DataType type = DataType::Float32;
  MemoryKind memory = MemoryKind::Host;
};

struct Bucket {
  DataType type = DataType::Float32;
  MemoryKind memory = MemoryKind::Host;
  // Parameter indices (registration order), in the order their gradients lie
  // in the bucket, and each gradient's element offset inside it.
  std::vector<std::size_t> parameters;
  std::vector<std::size_t> offsets;
  std::size_t count = 0;  // elements in the bucket

  std::size_t bytes() const { return count * dataTypeSize(type); }
};

struct BucketCaps {
  std::size_t firstBucketBytes = std::size_t{1} << 20;  // 1 MiB
  std::size_t bucketBytes = std::size_t{25} << 20;      // 25 MiB
};

// Walks the parameters from the last registered to the first (backward
// produces gradients roughly in that order, so the first buckets fill first)
// and appends each to the open bucket of its (memory, type). A bucket closes
// as soon as it holds at least its cap: caps.firstBucketBytes for the first
// bucket of each (memory, type), caps.bucketBytes after. A bucket may thus
// exceed its cap by less than one parameter, and a parameter larger than the
// cap gets a bucket of its own. Buckets are returned in reduction order: by
// the walk position of their last parameter (the order backward completes
// them).
//
// Zero-element parameters are placed like any other (they cost nothing).
std::vector<Bucket> computeBucketLayout(std::span<const ParameterShape> parameters,
                                        const BucketCaps& caps = {});

// A 64-bit digest of a layout and the parameter shapes, equal on two ranks
// exactly when their layouts are (up to hash collisions): the Reducer compares
// it across ranks at construction.
std::uint64_t layoutFingerprint(std::span<const ParameterShape> parameters,
                                std::span<const Bucket> buckets);

}  // namespace hora::ddp
