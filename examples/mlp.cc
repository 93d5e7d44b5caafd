#include "mlp.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace examples {

Mlp::Mlp(std::size_t inputs, std::size_t hidden, std::size_t classes)
    : inputs_(inputs), hidden_(hidden), classes_(classes) {
  values_[kHiddenWeight].resize(hidden * inputs);
  values_[kHiddenBias].resize(hidden);
  values_[kOutputWeight].resize(classes * hidden);
  values_[kOutputBias].resize(classes);
}

void Mlp::initialise(std::uint32_t seed) {
  std::mt19937 random(seed);
  auto fill = [&](std::vector<float>& values, std::size_t fanIn) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(fanIn));
    // From the top 24 bits of each draw, so every standard library gives the
    // same numbers (std::uniform_real_distribution may differ between them).
    for (float& value : values)
      value = bound * (-1.0f + 2.0f * static_cast<float>(random() >> 8) * 0x1p-24f);
  };
  fill(values_[kHiddenWeight], inputs_);
  fill(values_[kHiddenBias], inputs_);
  fill(values_[kOutputWeight], hidden_);
  fill(values_[kOutputBias], hidden_);
}

void Mlp::forward(const float* point, std::vector<float>& hidden,
                  std::vector<float>& probabilities) const {
  hidden.assign(hidden_, 0.0f);
  for (std::size_t h = 0; h < hidden_; ++h) {
    float sum = values_[kHiddenBias][h];
    for (std::size_t i = 0; i < inputs_; ++i) sum += values_[kHiddenWeight][h * inputs_ + i] * point[i];
    hidden[h] = std::tanh(sum);
  }
  probabilities.assign(classes_, 0.0f);
  for (std::size_t c = 0; c < classes_; ++c) {
    float sum = values_[kOutputBias][c];
    for (std::size_t h = 0; h < hidden_; ++h) sum += values_[kOutputWeight][c * hidden_ + h] * hidden[h];
    probabilities[c] = sum;
  }
  // Softmax, shifted by the largest score so exp() cannot overflow.
  const float largest = *std::max_element(probabilities.begin(), probabilities.end());
  float total = 0;
  for (float& p : probabilities) total += (p = std::exp(p - largest));
  for (float& p : probabilities) p /= total;
}

double Mlp::backward(std::span<const float> points, std::span<const int> labels, float scale,
                     const std::function<std::span<float>(Tensor)>& gradient,
                     const std::function<void(Tensor)>& ready) const {
  const std::size_t batch = labels.size();
  std::vector<float> hidden, probabilities;
  std::vector<float> hiddenOfBatch(batch * hidden_);
  std::vector<float> scoreGrads(batch * classes_);  // d loss / d score
  double lossSum = 0;
  for (std::size_t n = 0; n < batch; ++n) {
    forward(&points[n * inputs_], hidden, probabilities);
    const auto label = static_cast<std::size_t>(labels[n]);
    lossSum -= std::log(std::max(probabilities[label], 1e-30f));
    std::copy(hidden.begin(), hidden.end(), hiddenOfBatch.begin() + static_cast<long>(n * hidden_));
    for (std::size_t c = 0; c < classes_; ++c)
      scoreGrads[n * classes_ + c] = scale * (probabilities[c] - (c == label ? 1.0f : 0.0f));
  }

  // Output layer first: its gradients are complete before the hidden layer's.
  std::span<float> outputBias = gradient(kOutputBias);
  std::span<float> outputWeight = gradient(kOutputWeight);
  for (std::size_t n = 0; n < batch; ++n)
    for (std::size_t c = 0; c < classes_; ++c) {
      const float g = scoreGrads[n * classes_ + c];
      outputBias[c] += g;
      for (std::size_t h = 0; h < hidden_; ++h)
        outputWeight[c * hidden_ + h] += g * hiddenOfBatch[n * hidden_ + h];
    }
  ready(kOutputBias);
  ready(kOutputWeight);

  std::span<float> hiddenBias = gradient(kHiddenBias);
  std::span<float> hiddenWeight = gradient(kHiddenWeight);
  for (std::size_t n = 0; n < batch; ++n)
    for (std::size_t h = 0; h < hidden_; ++h) {
      float g = 0;  // d loss / d hidden pre-activation
      for (std::size_t c = 0; c < classes_; ++c)
        g += scoreGrads[n * classes_ + c] * values_[kOutputWeight][c * hidden_ + h];
      const float activation = hiddenOfBatch[n * hidden_ + h];
      g *= 1.0f - activation * activation;  // tanh' = 1 - tanh^2
      hiddenBias[h] += g;
      for (std::size_t i = 0; i < inputs_; ++i) hiddenWeight[h * inputs_ + i] += g * points[n * inputs_ + i];
    }
  ready(kHiddenBias);
  ready(kHiddenWeight);
  return lossSum;
}

Mlp::Evaluation Mlp::evaluate(std::span<const float> points, std::span<const int> labels) const {
  Evaluation result;
  std::vector<float> hidden, probabilities;
  for (std::size_t n = 0; n < labels.size(); ++n) {
    forward(&points[n * inputs_], hidden, probabilities);
    const auto label = static_cast<std::size_t>(labels[n]);
    result.lossSum -= std::log(std::max(probabilities[label], 1e-30f));
    const auto predicted = static_cast<std::size_t>(
        std::max_element(probabilities.begin(), probabilities.end()) - probabilities.begin());
    if (predicted == label) ++result.correct;
  }
  return result;
}

void Mlp::sgdStep(float learningRate,
                  const std::function<std::span<const float>(Tensor)>& gradient) {
  for (std::size_t t = 0; t < kTensors; ++t) {
    std::span<const float> g = gradient(static_cast<Tensor>(t));
    for (std::size_t k = 0; k < values_[t].size(); ++k) values_[t][k] -= learningRate * g[k];
  }
}

}  // namespace examples
