#include "transport/rdma/verbs/ib_settings.h"

#include "base/env.h"
#include "base/error.h"

namespace hora::transport::rdma::verbs {

namespace {

// One integer variable: `fallback` when unset or equal to `unset` (a value
// NCCL documents as "not set"), else a value in [low, high].
int readInRange(std::initializer_list<const char*> names, int fallback, int low, int high,
                std::optional<int> unset = std::nullopt) {
  const auto variable = env::find(names);
  if (!variable) return fallback;
  const long long value = env::getInt(names, fallback);  // not an integer: an error naming it
  if (unset && value == *unset) return fallback;
  HORA_CHECK_ARG(value >= low && value <= high, variable->name, "=", variable->value,
                 " is out of range (", low, "-", high, ")");
  return static_cast<int>(value);
}

}  // namespace

IbSettings readIbSettings() {
  IbSettings settings;
  settings.timeout = readInRange({"HORA_IB_TIMEOUT", "NCCL_IB_TIMEOUT"}, settings.timeout, 1, 31);
  settings.retryCount = readInRange({"HORA_IB_RETRY_CNT", "NCCL_IB_RETRY_CNT"}, settings.retryCount, 0, 7);
  settings.trafficClass = readInRange({"HORA_IB_TC", "NCCL_IB_TC"}, settings.trafficClass, 0, 255, -1);
  settings.serviceLevel = readInRange({"HORA_IB_SL", "NCCL_IB_SL"}, settings.serviceLevel, 0, 15, -1);
  settings.queuePairsPerConnection = readInRange({"HORA_IB_QPS_PER_CONNECTION", "NCCL_IB_QPS_PER_CONNECTION"},
                                                 settings.queuePairsPerConnection, 1, 128);
  const int gidIndex = readInRange({"HORA_IB_GID_INDEX", "NCCL_IB_GID_INDEX"}, -1, -1, 255);
  if (gidIndex >= 0) settings.gidIndex = gidIndex;
  return settings;
}

}  // namespace hora::transport::rdma::verbs
