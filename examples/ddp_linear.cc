// ddp_linear: the smallest data-parallel training loop, step by step.
//
//   hora-run -n 2 ddp_linear [checkpoint-file]
//
// Data: x = [1, 2, 3, 4] with targets y = 2x. Model: Linear(1, 1), that is
// y = weight * x + bias. Loss: mean squared error. Optimiser: SGD, lr 0.001.
// Each of the two ranks reads half of every epoch through a shuffled
// DistributedSampler (seed 0), in batches of 2, for two epochs; the
// batches are PyTorch's: epoch 0 gives rank 0 [1, 4] and rank 1 [2, 3],
// epoch 1 gives rank 0 [2, 3] and rank 1 [4, 1].
//
// Then rank 0 writes a checkpoint, every rank waits at a barrier, loads it
// and checks that its own weights are identical to it. The checkpoint file
// must be visible to every rank (one machine, or a shared file system).
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "hora/communicator.h"
#include "hora/ddp/reducer.h"
#include "hora/ddp/sampler.h"

namespace {

constexpr float kLearningRate = 0.001f;
constexpr std::size_t kBatchSize = 2;
constexpr int kEpochs = 2;

struct Linear {
  float weight = 0;
  float bias = 0;
};

// Uniform in [-1, 1) from the top 24 bits of one draw: the same numbers with
// every standard library (std::uniform_real_distribution is not specified
// exactly enough for that).
float uniformMinusOneToOne(std::mt19937& random) {
  return -1.0f + 2.0f * static_cast<float>(random() >> 8) * 0x1p-24f;
}

// Rank 0 draws the initial weights from a fixed seed, uniform in [-1, 1) as
// PyTorch's default for one input. The other ranks start from deliberately
// different values: the Reducer replaces them with rank 0's.
Linear initialModel(int rank) {
  std::mt19937 random(rank == 0 ? 0u : 1000u + static_cast<unsigned>(rank));
  Linear model;
  model.weight = uniformMinusOneToOne(random);
  model.bias = uniformMinusOneToOne(random);
  return model;
}

std::string listOf(const std::vector<float>& values) {
  std::string text = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    char number[32];
    std::snprintf(number, sizeof(number), "%g", static_cast<double>(values[i]));
    text += (i ? ", " : "") + std::string(number);
  }
  return text + "]";
}

// Hexadecimal floats round-trip exactly: the loaded weights are bit for bit
// the saved ones.
void saveCheckpoint(const std::string& path, const Linear& model) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (!file) throw std::runtime_error("cannot write the checkpoint " + path);
  std::fprintf(file, "weight %a\nbias %a\n", static_cast<double>(model.weight),
               static_cast<double>(model.bias));
  if (std::fclose(file) != 0) throw std::runtime_error("cannot write the checkpoint " + path);
}

Linear loadCheckpoint(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "r");
  if (!file) throw std::runtime_error("cannot read the checkpoint " + path);
  double weight = 0, bias = 0;
  const int read = std::fscanf(file, "weight %la\nbias %la", &weight, &bias);
  std::fclose(file);
  if (read != 2) throw std::runtime_error("the checkpoint " + path + " is malformed");
  return {static_cast<float>(weight), static_cast<float>(bias)};
}

int run(const std::string& checkpointPath) {
  auto communicator = hora::Communicator::fromInitMethod("env://");
  const int rank = communicator->rank();

  const std::vector<float> inputs{1, 2, 3, 4};
  std::vector<float> targets;
  for (float x : inputs) targets.push_back(2 * x);

  Linear model = initialModel(rank);
  // Registration order weight, bias. Construction broadcasts rank 0's values.
  hora::ddp::Reducer reducer(*communicator,
                             {hora::ddp::Parameter("weight", std::span<float>(&model.weight, 1)),
                              hora::ddp::Parameter("bias", std::span<float>(&model.bias, 1))});
  std::printf("rank %d: initial weight %.9g bias %.9g\n", rank, static_cast<double>(model.weight),
              static_cast<double>(model.bias));

  hora::ddp::DistributedSampler sampler(inputs.size(), *communicator, {.shuffle = true, .seed = 0});
  const hora::ddp::BatchSampler batcher(kBatchSize);

  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    sampler.setEpoch(static_cast<std::uint64_t>(epoch));
    for (const auto& batch : batcher.batches(sampler.indices())) {
      std::vector<float> x;
      for (std::size_t index : batch) x.push_back(inputs[index]);

      // Forward and loss: mean over the batch of (prediction - target)^2.
      reducer.zeroGradients();
      float loss = 0, gradWeight = 0, gradBias = 0;
      for (std::size_t index : batch) {
        const float error = model.weight * inputs[index] + model.bias - targets[index];
        loss += error * error / static_cast<float>(batch.size());
        // d loss / d prediction = 2 * error / batch size
        const float gradPrediction = 2 * error / static_cast<float>(batch.size());
        gradWeight += gradPrediction * inputs[index];
        gradBias += gradPrediction;
      }
      // Backward produces the bias gradient, then the weight's; each is
      // marked ready as soon as it is written.
      reducer.gradientAs<float>(1)[0] = gradBias;
      reducer.markReady(1);
      reducer.gradientAs<float>(0)[0] = gradWeight;
      reducer.markReady(0);
      reducer.finish();  // both gradients are now the mean over the ranks

      model.weight -= kLearningRate * reducer.gradientAs<float>(0)[0];
      model.bias -= kLearningRate * reducer.gradientAs<float>(1)[0];
      std::printf("epoch %d rank %d batch x = %s loss %.6g\n", epoch, rank, listOf(x).c_str(),
                  static_cast<double>(loss));
    }
  }

  if (rank == 0) saveCheckpoint(checkpointPath, model);
  communicator->barrier();  // the file is complete before anyone reads it
  const Linear loaded = loadCheckpoint(checkpointPath);
  const bool identical = std::memcmp(&loaded, &model, sizeof(model)) == 0;
  std::printf("rank %d: final weight %.9g bias %.9g, checkpoint weight %.9g bias %.9g: %s\n", rank,
              static_cast<double>(model.weight), static_cast<double>(model.bias),
              static_cast<double>(loaded.weight), static_cast<double>(loaded.bias),
              identical ? "identical" : "DIFFERENT");
  communicator->barrier();  // nobody tears down while a peer still reads
  return identical ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // whole lines, as they happen
  try {
    return run(argc > 1 ? argv[1] : "ddp_linear_checkpoint.txt");
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ddp_linear: %s\n", error.what());
    return 1;
  }
}
