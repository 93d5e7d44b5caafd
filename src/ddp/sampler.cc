#include "hora/ddp/sampler.h"

#include <algorithm>
#include <limits>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

#include "hora/communicator.h"
#include "hora/error.h"

namespace hora::ddp {

std::vector<std::size_t> torchRandperm(std::size_t n, std::uint64_t seed) {
  // std::mt19937 is the same engine (same seeding from a 32-bit value, same
  // output) as PyTorch's CPU generator; manual_seed keeps the low 32 bits.
  std::mt19937 engine(static_cast<std::uint32_t>(seed));
  std::vector<std::size_t> permutation(n);
  for (std::size_t i = 0; i < n; ++i) permutation[i] = i;
  // A Fisher-Yates shuffle from the front. The modulo is what PyTorch does
  // (a slight bias for huge n); reproducing it exactly is the point here.
  for (std::size_t i = 0; i + 1 < n; ++i) {
    const std::uint64_t draw = engine();
    const std::size_t j = i + static_cast<std::size_t>(draw % (n - i));
    std::swap(permutation[i], permutation[j]);
  }
  return permutation;
}

namespace {

std::size_t samplesPerReplica(std::size_t datasetSize, std::size_t replicas, bool dropLast) {
  // Dropping the tail leaves floor(n / R) per rank; padding gives ceil(n / R).
  // (They agree when R divides n.) Written so that no sum can wrap.
  return datasetSize / replicas + (!dropLast && datasetSize % replicas != 0 ? 1 : 0);
}

// `options` with this process's place in `communicator` where they leave
// it out; a place given is kept, as PyTorch's sampler keeps the num_replicas
// and rank it is given.
DistributedSamplerOptions placedBy(const Communicator& communicator, DistributedSamplerOptions options) {
  if (!options.numReplicas) options.numReplicas = communicator.size();
  if (!options.rank) options.rank = communicator.rank();
  return options;
}

// `options` with numReplicas and rank filled in: 1 and 0 where left out.
DistributedSamplerOptions withPlace(DistributedSamplerOptions options) {
  options.numReplicas = options.numReplicas.value_or(1);
  options.rank = options.rank.value_or(0);
  return options;
}

}  // namespace

DistributedSampler::DistributedSampler(std::size_t datasetSize, const Communicator& communicator,
                                       const DistributedSamplerOptions& options)
    : DistributedSampler(datasetSize, placedBy(communicator, options)) {}

DistributedSampler::DistributedSampler(std::size_t datasetSize,
                                       const DistributedSamplerOptions& options)
    : datasetSize_(datasetSize), options_(withPlace(options)) {
  const int numReplicas = *options_.numReplicas, rank = *options_.rank;
  if (numReplicas < 1)
    throw Error(ErrorKind::InvalidArgument,
                "DistributedSampler: numReplicas must be at least 1, got " + std::to_string(numReplicas));
  if (rank < 0 || rank >= numReplicas)
    throw Error(ErrorKind::InvalidArgument, "DistributedSampler: rank " + std::to_string(rank) + " is outside [0, " +
                                                std::to_string(numReplicas - 1) + "]");
  const auto replicas = static_cast<std::size_t>(numReplicas);
  numSamples_ = samplesPerReplica(datasetSize, replicas, options.dropLast);
  // The padded total, numSamples() x numReplicas, must be a size.
  if (numSamples_ > std::numeric_limits<std::size_t>::max() / replicas)
    throw Error(ErrorKind::InvalidArgument, "DistributedSampler: a dataset of " + std::to_string(datasetSize) +
                                                " samples cannot be padded to a multiple of " +
                                                std::to_string(replicas) + " replicas");
}

std::vector<std::size_t> DistributedSampler::indices() const {
  try {
    return paddedShare();
  } catch (const std::length_error&) {
  } catch (const std::bad_alloc&) {
  }
  throw Error(ErrorKind::System, "DistributedSampler: the " + std::to_string(totalSize()) +
                                     " padded indices of the dataset do not fit in memory");
}

std::vector<std::size_t> DistributedSampler::paddedShare() const {
  std::vector<std::size_t> all;
  if (options_.shuffle) {
    all = torchRandperm(datasetSize_, options_.seed + epoch_);
  } else {
    all.resize(datasetSize_);
    for (std::size_t i = 0; i < datasetSize_; ++i) all[i] = i;
  }

  // Pad by repeating the sequence from its start (cyclically, when the padding
  // is longer than the dataset), or cut the tail, so that every rank gets
  // exactly numSamples() indices.
  const std::size_t total = totalSize();
  if (all.size() < total) {
    const std::size_t original = all.size();  // > 0 here: total is 0 for an empty dataset
    all.reserve(total);
    for (std::size_t i = 0; all.size() < total; ++i) all.push_back(all[i % original]);
  } else {
    all.resize(total);
  }

  std::vector<std::size_t> mine;
  mine.reserve(numSamples_);
  const auto stride = static_cast<std::size_t>(*options_.numReplicas);
  for (std::size_t i = static_cast<std::size_t>(*options_.rank); i < total; i += stride)
    mine.push_back(all[i]);
  return mine;
}

BatchSampler::BatchSampler(std::size_t batchSize, bool dropLast)
    : batchSize_(batchSize), dropLast_(dropLast) {
  if (batchSize == 0)
    throw Error(ErrorKind::InvalidArgument, "BatchSampler: batchSize must be at least 1");
}

std::vector<std::vector<std::size_t>> BatchSampler::batches(
    std::span<const std::size_t> indices) const {
  std::vector<std::vector<std::size_t>> result;
  result.reserve(numBatches(indices.size()));
  for (std::size_t begin = 0, end = 0; begin < indices.size(); begin = end) {
    end = begin + std::min(batchSize_, indices.size() - begin);  // no overflow for any batch size
    if (end - begin < batchSize_ && dropLast_) break;
    result.emplace_back(indices.begin() + static_cast<std::ptrdiff_t>(begin),
                        indices.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return result;
}

std::size_t BatchSampler::numBatches(std::size_t count) const {
  return count / batchSize_ + (!dropLast_ && count % batchSize_ != 0 ? 1 : 0);
}

}  // namespace hora::ddp
