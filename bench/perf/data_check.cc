#include "data_check.h"

#include <algorithm>

#include "data_types.h"

namespace hora::perf {
namespace {

std::size_t typeSize(const StepPlan& plan) { return dataTypeInfo(plan.type).size; }

char* offsetBytes(void* base, std::size_t elements, const StepPlan& plan) {
  return static_cast<char*>(base) + elements * typeSize(plan);
}

// Fills rank's send array (`count` elements at `base`) with its inputs.
void writeInputs(const StepPlan& plan, const ValueModel& values, int rank, void* base, std::size_t count,
                 int rep) {
  for (std::size_t i = 0; i < count; ++i) storeElement(plan.type, base, i, values.input(rank, i, rep));
}

// Counts elements of `base[0, count)` that differ from expected(i).
template <typename Expected>
long long countMismatches(const StepPlan& plan, const ValueModel& values, const void* base, std::size_t count,
                          Expected expected) {
  long long wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (!values.matches(loadElement(plan.type, base, i), expected(i))) ++wrong;
  }
  return wrong;
}

// Off the root, a reduce's or gather's receive buffer is not the
// collective's to write: it must still hold what prepareInputs left there,
// as nccl-tests checks. That is the all-ones poison, and in place this
// rank's own input where its send area lies inside the buffer.
long long countChangedElements(const StepPlan& plan, const ValueModel& values, int rank, bool inPlace,
                               const CallPointers& call, int rep) {
  const std::size_t bytes = typeSize(plan);
  const auto* recv = static_cast<const unsigned char*>(call.recv);
  const auto* input = static_cast<const unsigned char*>(call.send);
  const std::size_t inputBytes = plan.sizing.sendCount * bytes;
  long long changed = 0;
  for (std::size_t i = 0; i < plan.sizing.recvCount; ++i) {
    const unsigned char* element = recv + i * bytes;
    if (inPlace && element >= input && element < input + inputBytes) {
      const std::size_t j = static_cast<std::size_t>(element - input) / bytes;
      if (!values.matches(loadElement(plan.type, input, j), values.input(rank, j, rep))) ++changed;
    } else if (!std::all_of(element, element + bytes, [](unsigned char byte) { return byte == 0xff; })) {
      ++changed;
    }
  }
  return changed;
}

}  // namespace

RankBuffers unalignedBuffers(const StepPlan& plan, const RankBuffers& allocated) {
  return {offsetBytes(allocated.send, plan.unalignElements, plan),
          offsetBytes(allocated.recv, plan.unalignElements, plan)};
}

CallPointers callPointers(const StepPlan& plan, int rank, bool inPlace, const RankBuffers& allocated) {
  const RankBuffers buffers = unalignedBuffers(plan, allocated);
  if (!inPlace) return {buffers.send, buffers.recv};
  const auto r = static_cast<std::size_t>(rank);
  switch (plan.collective) {
    case Collective::AllGather:
    case Collective::Gather:
      return {offsetBytes(buffers.recv, r * plan.sizing.sendCount, plan), buffers.recv};
    case Collective::ReduceScatter:
    case Collective::Scatter:
      return {buffers.recv, offsetBytes(buffers.recv, r * plan.sizing.recvCount, plan)};
    default: return {buffers.recv, buffers.recv};
  }
}

bool resultChecked(const StepPlan& plan, bool inPlace) {
  return !inPlace || collectiveInfo(plan.collective).inPlace == InPlaceForm::Checked;
}

void prepareInputs(const StepPlan& plan, const ValueModel& values, int rank, bool inPlace,
                   const RankBuffers& buffers, int rep) {
  const CollectiveSizing& sizing = plan.sizing;
  const std::size_t bytes = typeSize(plan);
  const CallPointers call = callPointers(plan, rank, inPlace, buffers);
  // Poison the whole receive area first: an element the collective fails to
  // write then reads back as "wrong". In place, the inputs then overwrite
  // their part of it.
  poisonBuffer(unalignedBuffers(plan, buffers).recv, sizing.recvCount * bytes);
  const bool broadcastNonRoot = plan.collective == Collective::Broadcast && rank != plan.root;
  if (broadcastNonRoot && inPlace) return;  // its buffer only receives
  // The send area is this rank's own memory; NCCL only reads it.
  writeInputs(plan, values, rank, const_cast<void*>(call.send), sizing.sendCount, rep);
}

long long countWrongElements(const StepPlan& plan, const ValueModel& values, int rank, bool inPlace,
                             const RankBuffers& buffers, int rep) {
  if (!resultChecked(plan, inPlace)) return 0;
  const CollectiveSizing& sizing = plan.sizing;
  const CallPointers call = callPointers(plan, rank, inPlace, buffers);
  const int n = plan.nranks;
  const auto perRank = sizing.paramCount;

  switch (plan.collective) {
    case Collective::AllReduce:
      return countMismatches(plan, values, call.recv, sizing.recvCount,
                             [&](std::size_t i) { return values.reduced(i, rep); });
    case Collective::Reduce:
      if (rank != plan.root) return countChangedElements(plan, values, rank, inPlace, call, rep);
      return countMismatches(plan, values, call.recv, sizing.recvCount,
                             [&](std::size_t i) { return values.reduced(i, rep); });
    case Collective::ReduceScatter: {
      // Rank r keeps the reduction of piece r of everyone's send array.
      const std::size_t first = static_cast<std::size_t>(rank) * perRank;
      return countMismatches(plan, values, call.recv, sizing.recvCount,
                             [&](std::size_t i) { return values.reduced(first + i, rep); });
    }
    case Collective::AllGather:
      // Piece s of the result is rank s's send array.
      return countMismatches(plan, values, call.recv, sizing.recvCount, [&](std::size_t i) {
        return values.input(static_cast<int>(i / perRank), i % perRank, rep);
      });
    case Collective::Broadcast:
      return countMismatches(plan, values, call.recv, sizing.recvCount,
                             [&](std::size_t i) { return values.input(plan.root, i, rep); });
    case Collective::SendRecv: {
      const int previous = (rank - 1 + n) % n;
      return countMismatches(plan, values, call.recv, sizing.recvCount,
                             [&](std::size_t i) { return values.input(previous, i, rep); });
    }
    case Collective::AlltoAll: {
      // Piece s of the result is piece `rank` of rank s's send array.
      const std::size_t mine = static_cast<std::size_t>(rank) * perRank;
      return countMismatches(plan, values, call.recv, sizing.recvCount, [&](std::size_t i) {
        return values.input(static_cast<int>(i / perRank), mine + i % perRank, rep);
      });
    }
    case Collective::Gather:
      // At the root, piece s of the result is rank s's send array.
      if (rank != plan.root) return countChangedElements(plan, values, rank, inPlace, call, rep);
      return countMismatches(plan, values, call.recv, sizing.recvCount, [&](std::size_t i) {
        return values.input(static_cast<int>(i / perRank), i % perRank, rep);
      });
    case Collective::Scatter: {
      // Rank r receives piece r of the root's send array.
      const std::size_t first = static_cast<std::size_t>(rank) * perRank;
      return countMismatches(plan, values, call.recv, sizing.recvCount,
                             [&](std::size_t i) { return values.input(plan.root, first + i, rep); });
    }
  }
  return 0;
}

}  // namespace hora::perf
