// ddp_mlp: data-parallel training of a small MLP classifier (spiral data).
//
//   hora-run -n N ddp_mlp [--epochs E] [--batch B] [--accumulate K] [--lr LR]
//                         [--points P] [--hidden H] [--out FILE]
//
// Each rank trains on its DistributedSampler share of every epoch in batches
// of B. With --accumulate K, K batches make one optimiser step: the first K-1
// accumulate locally under Reducer::noSync(), the K-th synchronises.
// Gradients are scaled by 1/(B*K), so one step of N ranks equals one step of a
// single rank with batch N*K*B on the same samples: the parameters end the
// same (up to floating-point rounding), which the tests check.
//
// Rank 0 prints the mean training loss of every epoch (over all ranks), and
// at the end every rank checks that its parameters equal rank 0's bit for bit.
// --out FILE: rank 0 writes the final parameters there, one hex float a line.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "hora/communicator.h"
#include "hora/ddp/reducer.h"
#include "hora/ddp/sampler.h"
#include "mlp.h"
#include "spiral_dataset.h"

namespace {

struct Options {
  int epochs = 100;
  std::size_t batch = 16;
  std::size_t accumulate = 1;
  float learningRate = 0.5f;
  std::size_t points = 960;
  std::size_t hidden = 32;
  std::string out;
};

// The whole of `value` as a number of type T, at least `least` (and finite):
// "--epochs -1", "--lr 0.5x" or "--points 0" stop the program with a message
// instead of training on something the user did not ask for.
template <typename T>
T parseNumber(const std::string& name, const std::string& value, T least) {
  T parsed{};
  const char* end = value.data() + value.size();
  const auto [stop, error] = std::from_chars(value.data(), end, parsed);
  const bool finite = !std::is_floating_point_v<T> || std::isfinite(static_cast<double>(parsed));
  if (value.empty() || error != std::errc() || stop != end || !finite || !(parsed >= least))
    throw std::invalid_argument(name + " needs a " +
                                (std::is_floating_point_v<T> ? "finite number" : "whole number") +
                                (least > T{} ? " above 0" : " of at least 0") + ", not '" + value + "'");
  return parsed;
}

Options parseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string name = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("option " + name + " needs a value");
    const std::string value = argv[++i];
    if (name == "--epochs") options.epochs = parseNumber(name, value, 1);
    else if (name == "--batch") options.batch = parseNumber<std::size_t>(name, value, 1);
    else if (name == "--accumulate") options.accumulate = parseNumber<std::size_t>(name, value, 1);
    else if (name == "--lr") options.learningRate = parseNumber(name, value, std::numeric_limits<float>::min());
    else if (name == "--points") options.points = parseNumber<std::size_t>(name, value, 1);
    else if (name == "--hidden") options.hidden = parseNumber<std::size_t>(name, value, 1);
    else if (name == "--out") options.out = value;
    else throw std::invalid_argument("unknown option " + name);
  }
  return options;
}

using examples::Mlp;

int run(const Options& options) {
  auto communicator = hora::Communicator::fromInitMethod("env://");
  const int rank = communicator->rank();
  const examples::SpiralDataset data = examples::makeSpiralDataset(options.points, 1234);

  Mlp model(examples::SpiralDataset::kFeatures, options.hidden, examples::SpiralDataset::kClasses);
  model.initialise(rank == 0 ? 7u : 7u + static_cast<unsigned>(rank));  // rank 0's win
  std::vector<hora::ddp::Parameter> parameters;
  const char* names[] = {"hidden.weight", "hidden.bias", "output.weight", "output.bias"};
  for (std::size_t t = 0; t < Mlp::kTensors; ++t)
    parameters.emplace_back(names[t], model.tensor(static_cast<Mlp::Tensor>(t)));
  hora::ddp::Reducer reducer(*communicator, parameters);

  hora::ddp::DistributedSampler sampler(data.size(), *communicator, {.shuffle = true, .seed = 0});
  const hora::ddp::BatchSampler batcher(options.batch);
  auto gradient = [&](Mlp::Tensor t) { return reducer.gradientAs<float>(t); };
  auto markReady = [&](Mlp::Tensor t) { reducer.markReady(t); };

  for (int epoch = 0; epoch < options.epochs; ++epoch) {
    sampler.setEpoch(static_cast<std::uint64_t>(epoch));
    const auto batches = batcher.batches(sampler.indices());
    double totals[2] = {0, 0};  // summed loss, samples: this rank, then all ranks
    for (std::size_t first = 0; first < batches.size(); first += options.accumulate) {
      const std::size_t micro = std::min(options.accumulate, batches.size() - first);
      reducer.zeroGradients();
      for (std::size_t k = 0; k < micro; ++k) {
        const auto& batch = batches[first + k];
        std::vector<float> points;
        std::vector<int> labels;
        for (std::size_t index : batch) {
          points.insert(points.end(), data.point(index),
                        data.point(index) + examples::SpiralDataset::kFeatures);
          labels.push_back(data.labels[index]);
        }
        // 1/(B*K) even for a shorter last step (micro < K): the single
        // rank it equals scales its shorter last batch by its nominal size
        // N*K*B too, not by what that batch holds.
        const float scale = 1.0f / static_cast<float>(options.batch * options.accumulate);
        // All but the last micro-batch only accumulate: no communication.
        const bool last = k + 1 == micro;
        auto microStep = [&] {
          totals[0] += model.backward(points, labels, scale, gradient, markReady);
          totals[1] += static_cast<double>(batch.size());
          reducer.finish();
        };
        if (last) {
          microStep();
        } else {
          auto guard = reducer.noSync();
          microStep();
        }
      }
      model.sgdStep(options.learningRate, [&](Mlp::Tensor t) {
        return std::span<const float>(reducer.gradientAs<float>(t));
      });
    }
    communicator->allReduce(totals, totals, 2, hora::DataType::Float64, hora::RedOp::Sum);
    if (rank == 0) std::printf("epoch %d loss %.6f\n", epoch, totals[0] / totals[1]);
  }

  const auto evaluation = model.evaluate(data.features, data.labels);
  if (rank == 0)
    std::printf("final loss %.6f accuracy %.4f\n", evaluation.lossSum / static_cast<double>(data.size()),
                static_cast<double>(evaluation.correct) / static_cast<double>(data.size()));

  // Every rank must hold exactly rank 0's parameters.
  int differing = 0;
  for (std::size_t t = 0; t < Mlp::kTensors; ++t) {
    const auto mine = model.tensor(static_cast<Mlp::Tensor>(t));
    std::vector<float> rootCopy(mine.begin(), mine.end());
    communicator->broadcast(rootCopy.data(), rootCopy.data(), rootCopy.size(),
                            hora::DataType::Float32, 0);
    if (std::memcmp(rootCopy.data(), mine.data(), mine.size_bytes()) != 0) differing = 1;
  }
  communicator->allReduce(&differing, &differing, 1, hora::DataType::Int32, hora::RedOp::Sum);
  if (rank == 0)
    std::printf("parameters identical on all %d ranks: %s\n", communicator->size(),
                differing == 0 ? "yes" : "no");

  if (rank == 0 && !options.out.empty()) {
    std::FILE* file = std::fopen(options.out.c_str(), "w");
    if (!file) throw std::runtime_error("cannot write " + options.out);
    for (std::size_t t = 0; t < Mlp::kTensors; ++t)
      for (float value : model.tensor(static_cast<Mlp::Tensor>(t)))
        std::fprintf(file, "%a\n", static_cast<double>(value));
    std::fclose(file);
  }
  return differing == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    return run(parseOptions(argc, argv));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ddp_mlp: %s\n", error.what());
    return 1;
  }
}
