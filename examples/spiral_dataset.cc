#include "spiral_dataset.h"

#include <cmath>
#include <numbers>
#include <random>

namespace examples {

SpiralDataset makeSpiralDataset(std::size_t points, std::uint32_t seed) {
  std::mt19937 random(seed);
  // Uniform in [low, high) from the top 24 bits of one draw: the same points
  // with every standard library (its distributions are not specified exactly).
  auto uniform = [&](float low, float high) {
    return low + (high - low) * static_cast<float>(random() >> 8) * 0x1p-24f;
  };
  SpiralDataset data;
  data.features.reserve(points * SpiralDataset::kFeatures);
  data.labels.reserve(points);
  for (std::size_t i = 0; i < points; ++i) {
    const int arm = static_cast<int>(i % SpiralDataset::kClasses);
    const float radius = uniform(0.05f, 1.0f);
    // Each arm winds one turn outwards, rotated by a third of a turn per arm.
    const float angle =
        2.0f * std::numbers::pi_v<float> * (radius + arm / 3.0f) + uniform(-0.15f, 0.15f);
    data.features.push_back(radius * std::cos(angle));
    data.features.push_back(radius * std::sin(angle));
    data.labels.push_back(arm);
  }
  return data;
}

}  // namespace examples
