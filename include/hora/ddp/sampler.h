// Which samples each rank trains on, epoch by epoch: the index sequences of
// PyTorch's torch.utils.data.DistributedSampler and BatchSampler, element for
// element, so a job moved between PyTorch and hora sees the same data order.
//
//   hora::ddp::DistributedSampler sampler(dataset.size(), *comm);  // comm->size() ranks share it
//   for (std::uint64_t epoch = 0; epoch < epochs; ++epoch) {
//     sampler.setEpoch(epoch);  // a new shuffle per epoch, the same on every rank
//     for (const auto& batch : hora::ddp::BatchSampler(32).batches(sampler.indices())) ...
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace hora {
class Communicator;
}

namespace hora::ddp {

// torch.randperm(n, generator=g) after g.manual_seed(seed), bit for bit.
// PyTorch's CPU generator is MT19937 seeded with the low 32 bits of the seed;
// its randperm starts from 0..n-1 and, for i = 0 .. n-2, swaps element i with
// element i + (next 32-bit draw mod (n - i)). PyTorch 1.13 does this for every
// n; later releases may draw differently for n of about 2^31/10 and above.
std::vector<std::size_t> torchRandperm(std::size_t n, std::uint64_t seed);

struct DistributedSamplerOptions {
  // How many ranks share the dataset, and this rank, in [0, numReplicas).
  // Left out, they are the communicator's size() and rank() (1 and 0 for a
  // sampler built without one); given, they are used as they are, as
  // PyTorch's sampler uses num_replicas and rank even where a process group
  // exists (say, every rank reading the whole set: numReplicas 1, rank 0).
  std::optional<int> numReplicas = std::nullopt;
  std::optional<int> rank = std::nullopt;
  bool shuffle = true;  // a fresh permutation per epoch; false keeps 0..n-1
  // The permutation of epoch e is torchRandperm(n, seed + e) (mod 2^64); every
  // rank must use the same seed.
  std::uint64_t seed = 0;
  // false: pad the sequence by repeating it from its start until every rank
  // gets the same count. true: drop the tail instead.
  bool dropLast = false;
};

class DistributedSampler {
 public:
  // Throws hora::Error(InvalidArgument) for numReplicas < 1 or a rank outside
  // [0, numReplicas).
  DistributedSampler(std::size_t datasetSize, const DistributedSamplerOptions& options);
  // The ranks of `communicator` share the dataset, this process being its
  // rank() of size(), as PyTorch's sampler takes both from the process group
  // when they are not given; options.numReplicas and options.rank, where
  // given, are used instead.
  DistributedSampler(std::size_t datasetSize, const Communicator& communicator,
                     const DistributedSamplerOptions& options = {});

  // Selects the permutation of the next indices() calls. Call it at the start
  // of every epoch, with the same value on every rank.
  void setEpoch(std::uint64_t epoch) { epoch_ = epoch; }
  std::uint64_t epoch() const { return epoch_; }

  // This rank's dataset indices for the current epoch, in training order:
  // positions rank, rank + numReplicas, rank + 2*numReplicas, ... of the
  // (shuffled, padded or truncated) sequence of all indices.
  // A total too large for memory is a hora::Error (System).
  std::vector<std::size_t> indices() const;

  // How many indices each rank gets per epoch (len(sampler) in PyTorch).
  std::size_t numSamples() const { return numSamples_; }
  // numSamples() * numReplicas: the length after padding or truncation.
  std::size_t totalSize() const { return numSamples_ * static_cast<std::size_t>(*options_.numReplicas); }
  std::size_t datasetSize() const { return datasetSize_; }
  // The options, numReplicas and rank filled in with the values used.
  const DistributedSamplerOptions& options() const { return options_; }

 private:
  std::vector<std::size_t> paddedShare() const;  // indices(), unchecked

  std::size_t datasetSize_;
  DistributedSamplerOptions options_;
  std::size_t numSamples_;
  std::uint64_t epoch_ = 0;
};

// Groups a sequence of indices into batches, as torch.utils.data.BatchSampler
// does: consecutive runs of batchSize; a shorter last batch is kept unless
// dropLast is set.
class BatchSampler {
 public:
  // Throws hora::Error(InvalidArgument) for batchSize 0.
  explicit BatchSampler(std::size_t batchSize, bool dropLast = false);

  std::vector<std::vector<std::size_t>> batches(std::span<const std::size_t> indices) const;
  // How many batches `count` indices make (len(batch_sampler) in PyTorch).
  std::size_t numBatches(std::size_t count) const;

  std::size_t batchSize() const { return batchSize_; }
  bool dropLast() const { return dropLast_; }

 private:
  std::size_t batchSize_;
  bool dropLast_;
};

}  // namespace hora::ddp
