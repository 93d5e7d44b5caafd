// A synthetic classification task for the examples: points of three
// interleaved spiral arms in the plane, labelled by arm. Not linearly
// separable, small, and the same on every rank (generated from a seed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace examples {

struct SpiralDataset {
  static constexpr std::size_t kFeatures = 2;
  static constexpr std::size_t kClasses = 3;

  std::vector<float> features;  // size() * kFeatures, row-major
  std::vector<int> labels;      // size()

  std::size_t size() const { return labels.size(); }
  const float* point(std::size_t index) const { return &features[index * kFeatures]; }
};

SpiralDataset makeSpiralDataset(std::size_t points, std::uint32_t seed);

}  // namespace examples
