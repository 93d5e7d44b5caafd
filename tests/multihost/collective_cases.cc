#include "collective_cases.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <vector>

namespace hora::multihost {
namespace {

template <typename T> struct NcclType;
template <> struct NcclType<std::int32_t> {
  static constexpr ncclDataType_t value = ncclInt32;
  static constexpr const char* name = "int32";
};
template <> struct NcclType<std::int64_t> {
  static constexpr ncclDataType_t value = ncclInt64;
  static constexpr const char* name = "int64";
};
template <> struct NcclType<float> {
  static constexpr ncclDataType_t value = ncclFloat32;
  static constexpr const char* name = "float32";
};
template <> struct NcclType<double> {
  static constexpr ncclDataType_t value = ncclFloat64;
  static constexpr const char* name = "float64";
};

const char* opName(ncclRedOp_t op) {
  switch (op) {
    case ncclSum: return "sum";
    case ncclProd: return "prod";
    case ncclMax: return "max";
    case ncclMin: return "min";
    case ncclAvg: return "avg";
    default: return "custom op";
  }
}

// What rank `rank` contributes at `index`. Small integers keep every sum and
// product exact in every type, so results are compared exactly (avg aside).
// Products use only -1, 1 and 2: their magnitude stays below 2^nranks.
template <typename T> T inputValue(ncclRedOp_t op, int salt, int rank, std::size_t index) {
  const std::size_t mix = index * 7 + static_cast<std::size_t>(rank) * 31 + static_cast<std::size_t>(salt) * 13;
  if (op == ncclProd) {
    static constexpr int kFactors[] = {-1, 1, 2};
    return static_cast<T>(kFactors[mix % 3]);
  }
  return static_cast<T>(static_cast<long>(mix % 23) - 11);
}

// The value a reduction over all ranks' inputValue must produce.
template <typename T> T reducedValue(ncclRedOp_t op, int salt, int nranks, std::size_t index) {
  T acc = inputValue<T>(op, salt, 0, index);
  for (int r = 1; r < nranks; ++r) {
    const T v = inputValue<T>(op, salt, r, index);
    switch (op) {
      case ncclProd: acc = acc * v; break;
      case ncclMax: acc = v > acc ? v : acc; break;
      case ncclMin: acc = v < acc ? v : acc; break;
      default: acc = acc + v; break;  // sum, and avg before the division
    }
  }
  if (op == ncclAvg) acc = acc / static_cast<T>(nranks);
  return acc;
}

// Receive buffers start with this value so an element the collective never
// wrote is caught (inputs vary per element, so it cannot match everywhere).
template <typename T> constexpr T kUnwritten = static_cast<T>(99);

template <typename T> bool matches(T got, T expected, bool approximate) {
  if (!approximate) return got == expected;
  const double scale = std::fabs(static_cast<double>(expected)) > 1 ? std::fabs(static_cast<double>(expected)) : 1;
  return std::fabs(static_cast<double>(got) - static_cast<double>(expected)) <= 1e-6 * scale;
}

// Compares got[0..n) with expectedAt(i) and throws at the first difference.
template <typename T, typename Expected>
void compare(const std::string& what, const T* got, std::size_t n, Expected expectedAt, bool approximate = false) {
  for (std::size_t i = 0; i < n; ++i) {
    const T expected = expectedAt(i);
    if (!matches(got[i], expected, approximate)) {
      std::ostringstream message;
      message << what << ": element " << i << " of " << n << " is " << +got[i] << ", expected " << +expected;
      throw CheckFailure(message.str());
    }
  }
}

template <typename T> std::string describe(const char* collective, std::size_t count, const std::string& extra = "") {
  std::ostringstream text;
  text << collective << "(" << NcclType<T>::name << ", " << count << " elements" << extra << ")";
  return text.str();
}

}  // namespace

CollectiveCases::CollectiveCases(ncclComm_t comm, int rank, int nranks) : comm_(comm), rank_(rank), nranks_(nranks) {}

void CollectiveCases::require(ncclResult_t result, const std::string& call) const {
  if (result == ncclSuccess) return;
  const char* detail = ncclGetLastError(comm_);
  throw CheckFailure(call + " returned " + ncclGetErrorString(result) +
                     (detail != nullptr && detail[0] != '\0' ? std::string(": ") + detail : std::string()));
}

void CollectiveCases::runAll(std::size_t count) {
  const int last = nranks_ - 1;
  allReduce<float>(count, ncclSum, false);
  allReduce<float>(count, ncclSum, true);
  allReduce<std::int32_t>(count, ncclProd, false);
  allReduce<std::int64_t>(count, ncclMax, false);
  allReduce<double>(count, ncclMin, true);
  allReduce<double>(count, ncclAvg, false);
  reduceScatter<float>(count, ncclSum);
  reduceScatter<std::int32_t>(count, ncclMax);
  allGather<std::int32_t>(count, false);
  allGather<double>(count, true);
  broadcast<float>(count, 0);
  broadcast<std::int64_t>(count, last);
  reduce<float>(count, ncclSum, last);
  reduce<std::int32_t>(count, ncclMin, 0);
  sendRecvRing<float>(count);
  allToAll<std::int32_t>(count);
  gather<float>(count, last);
  scatter<std::int64_t>(count, 0);
}

template <typename T> void CollectiveCases::allReduce(std::size_t count, ncclRedOp_t op, bool inPlace) {
  const int salt = ++salt_;
  std::vector<T> send(count), recv(count, kUnwritten<T>);
  for (std::size_t i = 0; i < count; ++i) send[i] = inputValue<T>(op, salt, rank_, i);
  T* out = inPlace ? send.data() : recv.data();
  const std::string what =
      describe<T>("ncclAllReduce", count, std::string(", ") + opName(op) + (inPlace ? ", in place" : ""));
  require(ncclAllReduce(send.data(), out, count, NcclType<T>::value, op, comm_, nullptr), what);
  compare(what, out, count, [&](std::size_t i) { return reducedValue<T>(op, salt, nranks_, i); }, op == ncclAvg);
  ++passed_;
}

template <typename T> void CollectiveCases::reduceScatter(std::size_t count, ncclRedOp_t op) {
  const int salt = ++salt_;
  const std::size_t total = count * nranks_;
  std::vector<T> send(total), recv(count, kUnwritten<T>);
  for (std::size_t i = 0; i < total; ++i) send[i] = inputValue<T>(op, salt, rank_, i);
  const std::string what = describe<T>("ncclReduceScatter", count, std::string(", ") + opName(op));
  require(ncclReduceScatter(send.data(), recv.data(), count, NcclType<T>::value, op, comm_, nullptr), what);
  // This rank owns block `rank` of the reduced vector.
  const std::size_t first = count * rank_;
  compare(what, recv.data(), count, [&](std::size_t i) { return reducedValue<T>(op, salt, nranks_, first + i); });
  ++passed_;
}

template <typename T> void CollectiveCases::allGather(std::size_t count, bool inPlace) {
  const int salt = ++salt_;
  std::vector<T> send(count), recv(count * nranks_, kUnwritten<T>);
  for (std::size_t i = 0; i < count; ++i) send[i] = inputValue<T>(ncclSum, salt, rank_, i);
  // In place, a rank's own block of the output is its input.
  const T* in = send.data();
  if (inPlace) {
    std::copy(send.begin(), send.end(), recv.begin() + count * rank_);
    in = recv.data() + count * rank_;
  }
  const std::string what = describe<T>("ncclAllGather", count, inPlace ? ", in place" : "");
  require(ncclAllGather(in, recv.data(), count, NcclType<T>::value, comm_, nullptr), what);
  compare(what, recv.data(), recv.size(),
          [&](std::size_t i) { return inputValue<T>(ncclSum, salt, static_cast<int>(i / count), i % count); });
  ++passed_;
}

template <typename T> void CollectiveCases::broadcast(std::size_t count, int root) {
  const int salt = ++salt_;
  std::vector<T> send(count), recv(count, kUnwritten<T>);
  for (std::size_t i = 0; i < count; ++i) send[i] = inputValue<T>(ncclSum, salt, rank_, i);
  const std::string what = describe<T>("ncclBroadcast", count, ", root " + std::to_string(root));
  require(ncclBroadcast(send.data(), recv.data(), count, NcclType<T>::value, root, comm_, nullptr), what);
  compare(what, recv.data(), count, [&](std::size_t i) { return inputValue<T>(ncclSum, salt, root, i); });
  ++passed_;
}

template <typename T> void CollectiveCases::reduce(std::size_t count, ncclRedOp_t op, int root) {
  const int salt = ++salt_;
  std::vector<T> send(count), recv(count, kUnwritten<T>);
  for (std::size_t i = 0; i < count; ++i) send[i] = inputValue<T>(op, salt, rank_, i);
  const std::string what =
      describe<T>("ncclReduce", count, std::string(", ") + opName(op) + ", root " + std::to_string(root));
  require(ncclReduce(send.data(), recv.data(), count, NcclType<T>::value, op, root, comm_, nullptr), what);
  // Only the root's output is defined.
  if (rank_ == root) {
    compare(what, recv.data(), count, [&](std::size_t i) { return reducedValue<T>(op, salt, nranks_, i); });
  }
  ++passed_;
}

template <typename T> void CollectiveCases::sendRecvRing(std::size_t count) {
  const int salt = ++salt_;
  const int next = (rank_ + 1) % nranks_, prev = (rank_ + nranks_ - 1) % nranks_;
  std::vector<T> send(count), recv(count, kUnwritten<T>);
  for (std::size_t i = 0; i < count; ++i) send[i] = inputValue<T>(ncclSum, salt, rank_, i);
  const std::string what = describe<T>("ncclSend/ncclRecv ring", count,
                                       ", to rank " + std::to_string(next) + ", from rank " + std::to_string(prev));
  // Grouped, so neither call waits for the other to be posted.
  require(ncclGroupStart(), what + " ncclGroupStart");
  require(ncclSend(send.data(), count, NcclType<T>::value, next, comm_, nullptr), what + " ncclSend");
  require(ncclRecv(recv.data(), count, NcclType<T>::value, prev, comm_, nullptr), what + " ncclRecv");
  require(ncclGroupEnd(), what + " ncclGroupEnd");
  compare(what, recv.data(), count, [&](std::size_t i) { return inputValue<T>(ncclSum, salt, prev, i); });
  ++passed_;
}

template <typename T> void CollectiveCases::allToAll(std::size_t count) {
  const int salt = ++salt_;
  const std::size_t total = count * nranks_;
  // Block p of a rank's input goes to rank p.
  std::vector<T> send(total), recv(total, kUnwritten<T>);
  for (std::size_t i = 0; i < total; ++i) send[i] = inputValue<T>(ncclSum, salt, rank_, i);
  const std::string what = describe<T>("ncclAlltoAll", count, " per peer");
  require(ncclAlltoAll(send.data(), recv.data(), count, NcclType<T>::value, comm_, nullptr), what);
  // Block p of the output is block `rank` of rank p's input.
  compare(what, recv.data(), total, [&](std::size_t i) {
    return inputValue<T>(ncclSum, salt, static_cast<int>(i / count), count * rank_ + i % count);
  });
  ++passed_;
}

template <typename T> void CollectiveCases::gather(std::size_t count, int root) {
  const int salt = ++salt_;
  std::vector<T> send(count), recv(count * nranks_, kUnwritten<T>);
  for (std::size_t i = 0; i < count; ++i) send[i] = inputValue<T>(ncclSum, salt, rank_, i);
  const std::string what = describe<T>("ncclGather", count, ", root " + std::to_string(root));
  require(ncclGather(send.data(), recv.data(), count, NcclType<T>::value, root, comm_, nullptr), what);
  if (rank_ == root) {
    compare(what, recv.data(), recv.size(),
            [&](std::size_t i) { return inputValue<T>(ncclSum, salt, static_cast<int>(i / count), i % count); });
  }
  ++passed_;
}

template <typename T> void CollectiveCases::scatter(std::size_t count, int root) {
  const int salt = ++salt_;
  std::vector<T> send(count * nranks_), recv(count, kUnwritten<T>);
  for (std::size_t i = 0; i < send.size(); ++i) send[i] = inputValue<T>(ncclSum, salt, rank_, i);
  const std::string what = describe<T>("ncclScatter", count, ", root " + std::to_string(root));
  require(ncclScatter(send.data(), recv.data(), count, NcclType<T>::value, root, comm_, nullptr), what);
  compare(what, recv.data(), count, [&](std::size_t i) { return inputValue<T>(ncclSum, salt, root, count * rank_ + i); });
  ++passed_;
}

}  // namespace hora::multihost
