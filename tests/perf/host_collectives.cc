#include "host_collectives.h"

#include <algorithm>
#include <cmath>

#include "data_types.h"

namespace hora::perf::testing {
namespace {

using Array = std::vector<double>;

Array load(const StepPlan& plan, const void* base, std::size_t count) {
  Array values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = loadElement(plan.type, base, i);
  return values;
}

void store(const StepPlan& plan, void* base, const Array& values, std::size_t first = 0) {
  for (std::size_t i = 0; i < values.size(); ++i) storeElement(plan.type, base, first + i, values[i]);
}

double combine(ncclRedOp_t op, double a, double b) {
  switch (op) {
    case ncclProd: return a * b;
    case ncclMax: return std::max(a, b);
    case ncclMin: return std::min(a, b);
    default: return a + b;
  }
}

// Element-wise reduction of every rank's send array.
Array reduceAll(const StepPlan& plan, const std::vector<Array>& inputs) {
  const ncclRedOp_t op = plan.op.value_or(ncclSum);
  Array result = inputs[0];
  for (std::size_t r = 1; r < inputs.size(); ++r) {
    for (std::size_t i = 0; i < result.size(); ++i) result[i] = combine(op, result[i], inputs[r][i]);
  }
  if (op == ncclAvg) {
    const bool integer = dataTypeInfo(plan.type).valueClass != ValueClass::Floating;
    for (double& value : result) value = integer ? std::trunc(value / plan.nranks) : value / plan.nranks;
  }
  return result;
}

}  // namespace

void runOnHost(const StepPlan& plan, bool inPlace, const std::vector<RankBuffers>& buffers) {
  const int n = plan.nranks;
  const std::size_t count = plan.sizing.paramCount;
  // Read every input before writing any output: in place, they share memory.
  std::vector<Array> inputs;
  std::vector<CallPointers> calls;
  for (int r = 0; r < n; ++r) {
    calls.push_back(callPointers(plan, r, inPlace, buffers[static_cast<std::size_t>(r)]));
    inputs.push_back(load(plan, calls.back().send, plan.sizing.sendCount));
  }
  switch (plan.collective) {
    case Collective::AllReduce: {
      const Array result = reduceAll(plan, inputs);
      for (int r = 0; r < n; ++r) store(plan, calls[static_cast<std::size_t>(r)].recv, result);
      break;
    }
    case Collective::Reduce:
      store(plan, calls[static_cast<std::size_t>(plan.root)].recv, reduceAll(plan, inputs));
      break;
    case Collective::ReduceScatter: {
      const Array result = reduceAll(plan, inputs);
      for (int r = 0; r < n; ++r) {
        const auto first = result.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * count);
        store(plan, calls[static_cast<std::size_t>(r)].recv,
              Array(first, first + static_cast<std::ptrdiff_t>(count)));
      }
      break;
    }
    case Collective::AllGather:
      for (int r = 0; r < n; ++r) {
        for (int s = 0; s < n; ++s) {
          store(plan, calls[static_cast<std::size_t>(r)].recv, inputs[static_cast<std::size_t>(s)],
                static_cast<std::size_t>(s) * count);
        }
      }
      break;
    case Collective::Broadcast:
      for (int r = 0; r < n; ++r) {
        store(plan, calls[static_cast<std::size_t>(r)].recv, inputs[static_cast<std::size_t>(plan.root)]);
      }
      break;
    case Collective::SendRecv:
      for (int r = 0; r < n; ++r) {
        store(plan, calls[static_cast<std::size_t>(r)].recv,
              inputs[static_cast<std::size_t>((r - 1 + n) % n)]);
      }
      break;
    case Collective::AlltoAll:
      for (int r = 0; r < n; ++r) {
        for (int s = 0; s < n; ++s) {
          const auto first = inputs[static_cast<std::size_t>(s)].begin() +
                             static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * count);
          store(plan, calls[static_cast<std::size_t>(r)].recv,
                Array(first, first + static_cast<std::ptrdiff_t>(count)),
                static_cast<std::size_t>(s) * count);
        }
      }
      break;
    case Collective::Gather:
      for (int s = 0; s < n; ++s) {
        store(plan, calls[static_cast<std::size_t>(plan.root)].recv, inputs[static_cast<std::size_t>(s)],
              static_cast<std::size_t>(s) * count);
      }
      break;
    case Collective::Scatter:
      for (int r = 0; r < n; ++r) {
        const auto first = inputs[static_cast<std::size_t>(plan.root)].begin() +
                           static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * count);
        store(plan, calls[static_cast<std::size_t>(r)].recv, Array(first, first + static_cast<std::ptrdiff_t>(count)));
      }
      break;
  }
}

}  // namespace hora::perf::testing
