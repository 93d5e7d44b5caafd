// A two-layer perceptron classifier in plain C++: inputs -> tanh hidden layer
// -> class scores, trained with softmax cross-entropy. Forward and backward
// are written out by hand, so the example shows every number the data-
// parallel layer touches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace examples {

class Mlp {
 public:
  // Parameter tensors, in registration (forward) order.
  enum Tensor : std::size_t { kHiddenWeight = 0, kHiddenBias, kOutputWeight, kOutputBias, kTensors };

  Mlp(std::size_t inputs, std::size_t hidden, std::size_t classes);

  // Uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)) from `seed`, as PyTorch
  // initialises nn.Linear.
  void initialise(std::uint32_t seed);

  std::span<float> tensor(Tensor t) { return values_[t]; }
  std::span<const float> tensor(Tensor t) const { return values_[t]; }

  // Adds scale * d(sum of cross-entropy losses over the batch)/d(parameter)
  // into gradients[t], and calls ready(t) as each tensor's gradient is
  // complete (output layer first, as backward goes). Returns the summed loss.
  // `points` holds batch.size() rows of `inputs` features.
  double backward(std::span<const float> points, std::span<const int> labels, float scale,
                  const std::function<std::span<float>(Tensor)>& gradient,
                  const std::function<void(Tensor)>& ready) const;

  // Summed loss and number of correct predictions over a batch.
  struct Evaluation {
    double lossSum = 0;
    std::size_t correct = 0;
  };
  Evaluation evaluate(std::span<const float> points, std::span<const int> labels) const;

  // values -= learningRate * gradient, tensor by tensor.
  void sgdStep(float learningRate, const std::function<std::span<const float>(Tensor)>& gradient);

 private:
  // Hidden activations and class probabilities of one point.
  void forward(const float* point, std::vector<float>& hidden, std::vector<float>& probabilities) const;

  std::size_t inputs_, hidden_, classes_;
  std::vector<float> values_[kTensors];
};

}  // namespace examples
