// reduceHostMany for every (element type x reduce kind), against the scalar
// reference of typed_reference.h applied step by step, element by element:
// the documented chain of reduceHost steps, floating steps computed in double
// and rounded explicitly (with the reference format models for the narrow
// types), integer steps in 128 bits and wrapped. Every combination runs over
// 1..5 inputs and 1..3 outputs, counts around the vector widths and block
// sizes, streaming and ordinary stores, pointers aligned, offset by one
// element, offset differently from each other, and outputs that are inputs.
// Guard bytes around every buffer must stay untouched. On top: the result has
// reduceHost's bits (the chain of reduceHost calls the interface promises),
// for every instruction set and block size, and bad arguments are refused by
// name.
#include "kernels/reduce_many.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "hora/communicator.h"
#include "kernels/dtypes.h"
#include "kernels/reduce_host.h"
#include "kernels/reduce_isa.h"
#include "typed_reference.h"

namespace hora::kernels::testing {
namespace {

// ---- The reference: one reduceHost step after another ----

// The reduction of element i over every input: the chain of reduceHost
// steps the interface promises, each one the reference step.
template <typename T>
T referenceElement(ReduceKind kind, const std::vector<std::vector<T>>& inputs, std::size_t i) {
  const std::size_t n = inputs.size();
  T acc = referenceStep<T>(kind, inputs[0][i], nullptr, n == 1);
  for (std::size_t k = 1; k < n; ++k) acc = referenceStep<T>(kind, inputs[k][i], &acc, k == n - 1);
  return acc;
}

// ---- Inputs ----

template <typename T>
std::vector<std::vector<T>> randomInputs(std::mt19937_64& random, int numInputs,
                                         std::size_t count) {
  std::vector<std::vector<T>> inputs(static_cast<std::size_t>(numInputs), std::vector<T>(count));
  for (auto& input : inputs) {
    for (T& value : input) value = randomElement<T>(random);
  }
  return inputs;
}

// ---- Buffers ----

constexpr std::size_t kGuardBytes = 64;
constexpr std::byte kGuardByte{0xA5};

// A buffer of `bytes` bytes starting `offsetBytes` past a 64-byte boundary,
// between guard bytes.
class GuardedBuffer {
 public:
  GuardedBuffer(std::size_t bytes, std::size_t offsetBytes)
      : storage_(new std::byte[bytes + offsetBytes + 2 * kGuardBytes + 64]),
        bytes_(bytes),
        offsetBytes_(offsetBytes) {
    const auto address = reinterpret_cast<std::uintptr_t>(storage_.get());
    base_ = storage_.get() + (64 - address % 64) % 64;
    std::fill_n(base_, bytes + offsetBytes + 2 * kGuardBytes, kGuardByte);
  }
  std::byte* data() const { return base_ + kGuardBytes + offsetBytes_; }
  bool guardsIntact() const {
    const auto isGuard = [](std::byte b) { return b == kGuardByte; };
    const std::byte* end = data() + bytes_;
    return std::all_of(base_, data(), isGuard) && std::all_of(end, end + kGuardBytes, isGuard);
  }

 private:
  std::unique_ptr<std::byte[]> storage_;
  std::byte* base_;
  std::size_t bytes_;
  std::size_t offsetBytes_;
};

// Where the buffers lie relative to 64-byte lines, and which outputs are inputs.
enum class Layout { Aligned, OffsetByOne, MixedOffsets, InPlace };
constexpr Layout kLayouts[] = {Layout::Aligned, Layout::OffsetByOne, Layout::MixedOffsets,
                               Layout::InPlace};
const char* layoutName(Layout layout) {
  switch (layout) {
    case Layout::Aligned: return "aligned";
    case Layout::OffsetByOne: return "offset-by-one";
    case Layout::MixedOffsets: return "mixed-offsets";
    case Layout::InPlace: return "in-place";
  }
  return "?";
}

// Element offsets: buffer b of the call (inputs first, then outputs).
std::size_t elementOffset(Layout layout, int b) {
  switch (layout) {
    case Layout::Aligned: return 0;
    case Layout::OffsetByOne:
    case Layout::InPlace: return 1;
    case Layout::MixedOffsets: return static_cast<std::size_t>(b * 5 % 7);
  }
  return 0;
}

// In place: outputs[0] is the last input, outputs[1] the first (when there
// are two inputs or more); -1: a buffer of its own.
int inputBehindOutput(Layout layout, int j, int numInputs) {
  if (layout != Layout::InPlace) return -1;
  if (j == 0) return numInputs - 1;
  if (j == 1 && numInputs >= 2) return 0;
  return -1;
}

struct Case {
  ReduceKind kind;
  int numInputs;
  int numOutputs;
  std::size_t count;
  bool streaming;
  Layout layout;
  ReduceManyTuning tuning;

  std::string describe() const {
    return std::string(kindName(kind)) + " inputs=" + std::to_string(numInputs) +
           " outputs=" + std::to_string(numOutputs) + " count=" + std::to_string(count) +
           (streaming ? " streaming " : " ") + layoutName(layout) + " " + hostIsaName(tuning.isa) +
           " block=" + (tuning.blockBytes == 0 ? "default" : std::to_string(tuning.blockBytes));
  }
};

// Runs one call on fresh guarded buffers and fills `results` with the
// outputs' contents; false after reporting a write outside the outputs or a
// change to an input that is no output.
template <typename T>
bool runCase(const Case& c, const std::vector<std::vector<T>>& values,
             std::vector<std::vector<T>>& results) {
  const std::size_t bytes = c.count * sizeof(T);
  std::vector<std::unique_ptr<GuardedBuffer>> inputBuffers, outputBuffers;
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
  for (int k = 0; k < c.numInputs; ++k) {
    inputBuffers.push_back(
        std::make_unique<GuardedBuffer>(bytes, elementOffset(c.layout, k) * sizeof(T)));
    if (bytes > 0) std::memcpy(inputBuffers.back()->data(), values[k].data(), bytes);
    inputs.push_back(inputBuffers.back()->data());
  }
  for (int j = 0; j < c.numOutputs; ++j) {
    const int input = inputBehindOutput(c.layout, j, c.numInputs);
    if (input >= 0) {
      outputs.push_back(inputBuffers[input]->data());
      continue;
    }
    outputBuffers.push_back(std::make_unique<GuardedBuffer>(
        bytes, elementOffset(c.layout, c.numInputs + j) * sizeof(T)));
    outputs.push_back(outputBuffers.back()->data());
  }

  reduceHostManyTuned(c.tuning, specFor<T>(c.kind), outputs.data(), c.numOutputs, inputs.data(),
                      c.numInputs, c.count, c.streaming);
  if (c.streaming) streamingFence();

  for (const auto* buffers : {&inputBuffers, &outputBuffers}) {
    for (const auto& buffer : *buffers) {
      if (!buffer->guardsIntact()) {
        ADD_FAILURE() << "reduceHostMany wrote outside its buffers";
        return false;
      }
    }
  }
  for (int k = 0; k < c.numInputs; ++k) {
    const bool isOutput = std::find(outputs.begin(), outputs.end(), inputs[k]) != outputs.end();
    if (!isOutput && bytes > 0 && std::memcmp(inputs[k], values[k].data(), bytes) != 0) {
      ADD_FAILURE() << "reduceHostMany changed inputs[" << k << "], which is no output";
      return false;
    }
  }
  results.assign(static_cast<std::size_t>(c.numOutputs), std::vector<T>(c.count));
  for (int j = 0; j < c.numOutputs; ++j) {
    if (bytes > 0) std::memcpy(results[j].data(), outputs[j], bytes);
  }
  return true;
}

// The reference for every element (computed once for all the shapes and
// layouts that share the inputs).
template <typename T>
std::vector<T> referenceResults(ReduceKind kind, const std::vector<std::vector<T>>& inputs) {
  std::vector<T> wants(inputs[0].size());
  for (std::size_t i = 0; i < wants.size(); ++i) wants[i] = referenceElement<T>(kind, inputs, i);
  return wants;
}

// One call, every output checked against the reference; false after
// reporting the first few mismatches.
template <typename T>
bool checkCase(const Case& c, const std::vector<std::vector<T>>& values,
               const std::vector<T>& wants) {
  SCOPED_TRACE(c.describe());
  std::vector<std::vector<T>> results;
  if (!runCase(c, values, results)) return false;
  int failures = 0;
  for (std::size_t i = 0; i < c.count && failures < 3; ++i) {
    for (int j = 0; j < c.numOutputs; ++j) {
      std::string why;
      if (!matchesReference(results[j][i], wants[i], c.kind, why)) {
        ADD_FAILURE() << "outputs[" << j << "][" << i << "]: " << why;
        ++failures;
      }
    }
  }
  return failures == 0;
}

template <typename T>
class ReduceManyTest : public ::testing::Test {};
TYPED_TEST_SUITE(ReduceManyTest, ElementTypes);

// Counts around the vector widths and the 64-byte lines, and one of more
// than one streaming block for every element size.
constexpr std::size_t kSmallCounts[] = {0, 1, 7, 63, 64, 65, 1000};

TYPED_TEST(ReduceManyTest, EveryShapeMatchesTheReference) {
  using T = TypeParam;
  std::mt19937_64 random(static_cast<std::uint64_t>(dataTypeOf<T>()) * 7919 + 1);
  for (ReduceKind kind : kKinds) {
    for (int numInputs = 1; numInputs <= 5; ++numInputs) {
      for (std::size_t count : kSmallCounts) {
        const auto values = randomInputs<T>(random, numInputs, count);
        const auto wants = referenceResults<T>(kind, values);
        for (HostIsa isa : availableIsas()) {
          for (int numOutputs = 1; numOutputs <= 3; ++numOutputs) {
            for (bool streaming : {false, true}) {
              for (Layout layout : kLayouts) {
                const Case c{kind, numInputs, numOutputs, count, streaming, layout, {isa}};
                if (!checkCase<T>(c, values, wants)) return;
              }
            }
          }
        }
      }
    }
  }
}

// Many blocks, the last one partial (100003 is odd and prime): streaming
// into outputs aligned differently from each other, and ordinary stores
// into outputs that are inputs.
TYPED_TEST(ReduceManyTest, LargeOddCountsMatchTheReference) {
  using T = TypeParam;
  constexpr std::size_t kCount = 100003;
  std::mt19937_64 random(static_cast<std::uint64_t>(dataTypeOf<T>()) * 104729 + 2);
  struct Shape {
    int numInputs, numOutputs;
    bool streaming;
    Layout layout;
  };
  const Shape shapes[] = {{2, 2, true, Layout::MixedOffsets}, {4, 3, false, Layout::InPlace}};
  for (ReduceKind kind : kKinds) {
    for (const Shape& shape : shapes) {
      const auto values = randomInputs<T>(random, shape.numInputs, kCount);
      const Case c{kind, shape.numInputs, shape.numOutputs, kCount, shape.streaming, shape.layout,
                   {}};
      if (!checkCase<T>(c, values, referenceResults<T>(kind, values))) return;
    }
  }
}

// ---- reduceHost's bits ----

// The interface's promise, for every instruction set and several block
// sizes: the bits of the chain of reduceHost calls with the same loops.
TYPED_TEST(ReduceManyTest, MatchesTheChainOfReduceHostCallsBitForBit) {
  using T = TypeParam;
  constexpr std::size_t kCount = 4099;
  std::mt19937_64 random(static_cast<std::uint64_t>(dataTypeOf<T>()) * 31 + 3);
  for (HostIsa isa : availableIsas()) {
    for (ReduceKind kind : kKinds) {
      for (int numInputs : {1, 2, 3, 5}) {
        const auto values = randomInputs<T>(random, numInputs, kCount);
        const ReduceSpec spec = specFor<T>(kind);
        std::vector<T> chain(kCount);
        reduceHostWithIsa(isa, spec, chain.data(), values[0].data(), nullptr, kCount,
                          numInputs == 1);
        for (int k = 1; k < numInputs; ++k) {
          reduceHostWithIsa(isa, spec, chain.data(), values[k].data(), chain.data(), kCount,
                            k == numInputs - 1);
        }
        // 0: the default for the kind of stores.
        for (std::size_t blockBytes :
             {std::size_t{64}, std::size_t{192}, std::size_t{0}, detail::kMaxManyBlockBytes}) {
          const Case c{kind, numInputs, 2, kCount, true, Layout::MixedOffsets, {isa, blockBytes}};
          SCOPED_TRACE(c.describe());
          std::vector<std::vector<T>> results;
          if (!runCase(c, values, results)) return;
          for (const auto& result : results) {
            for (std::size_t i = 0; i < kCount; ++i) {
              ASSERT_TRUE(sameBitsOrBothNan(result[i], chain[i]))
                  << "element " << i << ": bits " << rawBits(result[i]) << ", the chain gives "
                  << rawBits(chain[i]);
            }
          }
        }
      }
    }
  }
}

// ---- Bad input ----

TEST(ReduceManyBadInput, MissingInputsOrOutputsAreRefused) {
  alignas(64) float a[8] = {}, b[8] = {}, d[8] = {};
  const void* inputs[] = {a, b};
  void* outputs[] = {d};
  const ReduceSpec spec{DataType::Float32, ReduceKind::Sum, 0};
  expectInvalidArgument([&] { reduceHostMany(spec, outputs, 1, inputs, 0, 8, false); },
                        "numInputs is 0");
  expectInvalidArgument([&] { reduceHostMany(spec, outputs, 0, inputs, 2, 8, false); },
                        "numOutputs is 0");
  expectInvalidArgument([&] { reduceHostMany(spec, outputs, 1, inputs, -1, 8, false); },
                        "numInputs is -1");
  expectInvalidArgument([&] { reduceHostMany(spec, outputs, 1, nullptr, 2, 8, false); },
                        "inputs array is null");
  expectInvalidArgument([&] { reduceHostMany(spec, nullptr, 1, inputs, 2, 8, false); },
                        "outputs array is null");
  // Nothing to do: nothing to check but the spec.
  reduceHostMany(spec, nullptr, 0, nullptr, 0, 0, true);
}

TEST(ReduceManyBadInput, NullAndMisalignedPointersAreNamed) {
  alignas(64) float a[8] = {}, b[8] = {}, d[8] = {}, e[8] = {};
  const ReduceSpec spec{DataType::Float32, ReduceKind::Sum, 0};
  const void* nullInput[] = {a, nullptr};
  void* outputs[] = {d, e};
  expectInvalidArgument([&] { reduceHostMany(spec, outputs, 2, nullInput, 2, 4, false); },
                        "inputs[1] is null");
  const void* inputs[] = {a, b};
  void* nullOutput[] = {d, nullptr};
  expectInvalidArgument([&] { reduceHostMany(spec, nullOutput, 2, inputs, 2, 4, false); },
                        "outputs[1] is null");
  const void* misalignedInput[] = {a, reinterpret_cast<char*>(b) + 2};
  expectInvalidArgument([&] { reduceHostMany(spec, outputs, 2, misalignedInput, 2, 4, false); },
                        "inputs[1] pointer");
  expectInvalidArgument([&] { reduceHostMany(spec, outputs, 2, misalignedInput, 2, 4, false); },
                        "not aligned to 4 bytes");
  void* misalignedOutput[] = {reinterpret_cast<char*>(d) + 1, e};
  expectInvalidArgument([&] { reduceHostMany(spec, misalignedOutput, 2, inputs, 2, 4, true); },
                        "outputs[0] pointer");
}

TEST(ReduceManyBadInput, OverlapsOtherThanInPlaceAreRefused) {
  alignas(64) float a[16] = {}, b[16] = {}, d[16] = {};
  const ReduceSpec spec{DataType::Float32, ReduceKind::Sum, 0};
  const void* inputs[] = {a, b};
  void* overlappingOutputs[] = {d, d + 2};
  expectInvalidArgument([&] { reduceHostMany(spec, overlappingOutputs, 2, inputs, 2, 4, false); },
                        "outputs[0] and outputs[1] overlap");
  void* equalOutputs[] = {d, d};
  expectInvalidArgument([&] { reduceHostMany(spec, equalOutputs, 2, inputs, 2, 4, false); },
                        "outputs[0] and outputs[1] overlap");
  void* partiallyInput[] = {d, b + 1};
  expectInvalidArgument([&] { reduceHostMany(spec, partiallyInput, 2, inputs, 2, 4, false); },
                        "outputs[1] partially overlaps inputs[1]");
  // Exactly an input, and buffers just touching: fine.
  void* inPlace[] = {b, a + 4};
  reduceHostMany(spec, inPlace, 2, inputs, 2, 4, false);
}

TEST(ReduceManyBadInput, InvalidTypeKindAndDivisorAreNamed) {
  alignas(64) float a[4] = {}, d[4] = {};
  const void* inputs[] = {a};
  void* outputs[] = {d};
  for (int value : {12, -1, 200}) {
    const ReduceSpec spec{static_cast<DataType>(value), ReduceKind::Sum, 0};
    expectInvalidArgument([&] { reduceHostMany(spec, outputs, 1, inputs, 1, 4, false); },
                          "invalid data type value " + std::to_string(value));
    // A bad spec is an error even with nothing to do.
    expectInvalidArgument([&] { reduceHostMany(spec, outputs, 1, inputs, 1, 0, false); },
                          "reduceHostMany: invalid data type");
  }
  const ReduceSpec badKind{DataType::Float32, static_cast<ReduceKind>(6), 0};
  expectInvalidArgument([&] { reduceHostMany(badKind, outputs, 1, inputs, 1, 4, false); },
                        "invalid reduce kind value 6");
  const ReduceSpec noDivisor{DataType::Int32, ReduceKind::SumPostDiv, 0};
  expectInvalidArgument([&] { reduceHostMany(noDivisor, outputs, 1, inputs, 1, 4, false); },
                        "divisor");
}

TEST(ReduceManyBadInput, BlockSizesOutsideTheScratchAreRefused) {
  alignas(64) float a[4] = {}, d[4] = {};
  const void* inputs[] = {a};
  void* outputs[] = {d};
  const ReduceSpec spec{DataType::Float32, ReduceKind::Sum, 0};
  for (std::size_t blockBytes :
       {std::size_t{100}, std::size_t{32}, 2 * detail::kMaxManyBlockBytes}) {
    expectInvalidArgument(
        [&] {
          reduceHostManyTuned({bestHostIsa(), blockBytes}, spec, outputs, 1, inputs, 1, 4, false);
        },
        "block size " + std::to_string(blockBytes));
  }
}

}  // namespace
}  // namespace hora::kernels::testing
