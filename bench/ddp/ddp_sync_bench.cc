// Gradient synchronisation benchmark: how much of the all-reduce time the
// Reducer hides behind backward.
//
//   hora-run -n 2 ddp_sync_bench [--params 100e6] [--layers 50]
//       [--backward-ms 300] [--compute sleep|spin] [--write-gradients 0|1]
//       [--steps 5] [--bucket-mib 25] [--first-bucket-mib 1]
//
// A model of --params float parameters in --layers equal tensors. A simulated
// backward visits the layers from last to first; per layer it "computes" for
// backward-ms / layers (sleeping, like a host waiting for an accelerator, or
// spinning, like CPU compute), with --write-gradients 1 also fills the
// layer's gradient (CPU work that competes with communication for memory
// bandwidth), then the gradient counts as produced. Four
// variants, each timed per step as the slowest rank's wall time (median over
// --steps after one warm-up step):
//
//   backward only                    no communication: the floor
//   one all-reduce after backward    all gradients in one flat buffer, one
//                                    collective once backward is done
//   buckets after backward           the Reducer, but every gradient marked
//                                    ready only after backward (no overlap)
//   buckets overlapped               the Reducer as meant: each layer marked
//                                    ready as soon as its gradient is written
//
// "exposed" is a variant's step time minus backward only: the communication
// the step waits for. Hidden = 1 - exposed(overlapped) / exposed(buckets after backward).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "hora/communicator.h"
#include "hora/ddp/reducer.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  double parameters = 100e6;
  std::size_t layers = 50;
  double backwardMs = 300;
  bool spin = false;
  bool writeGradients = false;
  int steps = 5;
  double bucketMiB = 25;
  double firstBucketMiB = 1;
};

Options parseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string name = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("option " + name + " needs a value");
    const std::string value = argv[++i];
    if (name == "--params") options.parameters = std::stod(value);
    else if (name == "--layers") options.layers = std::stoul(value);
    else if (name == "--backward-ms") options.backwardMs = std::stod(value);
    else if (name == "--compute") {
      if (value != "sleep" && value != "spin")
        throw std::invalid_argument("--compute takes sleep or spin, not " + value);
      options.spin = value == "spin";
    } else if (name == "--write-gradients") options.writeGradients = std::stoi(value) != 0;
    else if (name == "--steps") options.steps = std::stoi(value);
    else if (name == "--bucket-mib") options.bucketMiB = std::stod(value);
    else if (name == "--first-bucket-mib") options.firstBucketMiB = std::stod(value);
    else throw std::invalid_argument("unknown option " + name);
  }
  if (options.layers == 0 || options.steps < 1 || options.parameters < options.layers)
    throw std::invalid_argument("need at least one layer, one step, one parameter per layer");
  return options;
}

// One layer's share of the backward computation.
void compute(const Options& options) {
  const auto duration = std::chrono::duration<double, std::milli>(options.backwardMs /
                                                                  static_cast<double>(options.layers));
  if (!options.spin) {
    std::this_thread::sleep_for(duration);
    return;
  }
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(duration);
  while (Clock::now() < end) {
  }
}

class Benchmark {
 public:
  Benchmark(const Options& options, hora::Communicator& communicator)
      : options_(options), communicator_(communicator) {
    const auto total = static_cast<std::size_t>(options.parameters);
    layerSize_ = total / options.layers;
    weights_.resize(layerSize_ * options.layers);
    flatGradients_.resize(weights_.size());
  }

  std::size_t parameterCount() const { return weights_.size(); }

  // Median over steps of the slowest rank's step time, in milliseconds.
  double time(const std::function<void()>& step) {
    std::vector<double> times;
    for (int s = 0; s <= options_.steps; ++s) {  // step 0 warms up
      communicator_.barrier();
      const auto start = Clock::now();
      step();
      double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      communicator_.allReduce(&ms, &ms, 1, hora::DataType::Float64, hora::RedOp::Max);
      if (s > 0) times.push_back(ms);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  }

  void backwardOnly() {
    for (std::size_t layer = options_.layers; layer-- > 0;) {
      compute(options_);
      writeGradient(flatGradients_.data() + layer * layerSize_, layer);
    }
  }

  void oneAllReduceAfterBackward() {
    backwardOnly();
    // The mean as the Reducer takes it: Avg pre-multiplies inside the reduction.
    communicator_.allReduce(flatGradients_.data(), flatGradients_.data(), flatGradients_.size(),
                            hora::DataType::Float32, hora::RedOp::Avg);
  }

  void makeReducer() {
    std::vector<hora::ddp::Parameter> parameters;
    for (std::size_t layer = 0; layer < options_.layers; ++layer)
      parameters.emplace_back("layer" + std::to_string(layer),
                              std::span<float>(weights_.data() + layer * layerSize_, layerSize_));
    hora::ddp::ReducerOptions reducerOptions;
    reducerOptions.caps.bucketBytes = static_cast<std::size_t>(options_.bucketMiB * (1 << 20));
    reducerOptions.caps.firstBucketBytes =
        static_cast<std::size_t>(options_.firstBucketMiB * (1 << 20));
    reducer_ = std::make_unique<hora::ddp::Reducer>(communicator_, parameters, reducerOptions);
  }

  std::size_t bucketCount() const { return reducer_->buckets().size(); }

  void bucketsAfterBackward() {
    for (std::size_t layer = options_.layers; layer-- > 0;) {
      compute(options_);
      writeGradient(reducer_->gradientAs<float>(layer).data(), layer);
    }
    for (std::size_t layer = options_.layers; layer-- > 0;) reducer_->markReady(layer);
    reducer_->finish();
  }

  void bucketsOverlapped() {
    for (std::size_t layer = options_.layers; layer-- > 0;) {
      compute(options_);
      writeGradient(reducer_->gradientAs<float>(layer).data(), layer);
      reducer_->markReady(layer);
    }
    reducer_->finish();
  }

 private:
  void writeGradient(float* gradient, std::size_t layer) const {
    if (!options_.writeGradients) return;
    std::fill(gradient, gradient + layerSize_, 0.001f * static_cast<float>(layer + 1));
  }

  Options options_;
  hora::Communicator& communicator_;
  std::size_t layerSize_ = 0;
  std::vector<float> weights_;
  std::vector<float> flatGradients_;
  std::unique_ptr<hora::ddp::Reducer> reducer_;
};

int run(const Options& options) {
  auto communicator = hora::Communicator::fromInitMethod("env://");
  const bool print = communicator->rank() == 0;
  Benchmark bench(options, *communicator);
  bench.makeReducer();

  const double floor = bench.time([&] { bench.backwardOnly(); });
  const double single = bench.time([&] { bench.oneAllReduceAfterBackward(); });
  const double after = bench.time([&] { bench.bucketsAfterBackward(); });
  const double overlapped = bench.time([&] { bench.bucketsOverlapped(); });

  if (print) {
    const double megabytes = static_cast<double>(bench.parameterCount()) * 4 / 1e6;
    std::printf("ddp gradient sync: %.1f M float parameters (%.0f MB) in %zu layers, %d ranks\n",
                static_cast<double>(bench.parameterCount()) / 1e6, megabytes, options.layers,
                communicator->size());
    std::printf("simulated backward: %.0f ms (%s%s), buckets: %zu (first %.3g MiB, then %.3g MiB)\n",
                options.backwardMs, options.spin ? "spinning" : "sleeping",
                options.writeGradients ? ", writing gradients" : "", bench.bucketCount(),
                options.firstBucketMiB, options.bucketMiB);
    std::printf("median of %d steps, slowest rank\n\n", options.steps);
    std::printf("%-32s %10s %12s\n", "variant", "step ms", "exposed ms");
    auto row = [&](const char* name, double ms) {
      std::printf("%-32s %10.1f %12.1f\n", name, ms, ms - floor);
    };
    row("backward only", floor);
    row("one all-reduce after backward", single);
    row("buckets after backward", after);
    row("buckets overlapped", overlapped);
    // Negative when contention made overlapping slower than not overlapping.
    const double hiddenOfBuckets = 1.0 - (overlapped - floor) / (after - floor);
    std::printf("\ncommunication hidden behind backward: %.0f%% of the bucketed all-reduce time\n",
                100.0 * hiddenOfBuckets);
    std::printf("exposed communication, overlapped / one all-reduce after backward: %.2f\n",
                (overlapped - floor) / (single - floor));
  }
  communicator->barrier();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    return run(parseOptions(argc, argv));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ddp_sync_bench: %s\n", error.what());
    return 1;
  }
}
