// hora's C++ API: communicators made from a unique id that the caller hands
// around itself, as torch's process groups do through their key-value store.
#include <cstring>

#include "api/cpp_errors.h"
#include "base/env.h"
#include "base/error.h"
#include "bootstrap/unique_id.h"
#include "core/communicator.h"
#include "hora/communicator.h"

namespace hora {

static_assert(std::tuple_size_v<Communicator::UniqueId> == bootstrap::kUniqueIdBytes);

Communicator::UniqueId Communicator::newUniqueId() {
  char bytes[bootstrap::kUniqueIdBytes];
  bootstrap::encode(bootstrap::createUniqueId(), bytes);
  UniqueId id;
  std::memcpy(id.data(), bytes, sizeof bytes);
  return id;
}

std::unique_ptr<Communicator> Communicator::fromUniqueId(const UniqueId& uniqueId, int rank,
                                                         int worldSize,
                                                         const CommunicatorOptions& options) {
  HORA_CHECK_ARG(worldSize >= 1, "world size must be at least 1, got ", worldSize);
  HORA_CHECK_ARG(rank >= 0 && rank < worldSize, "rank ", rank, " is outside [0, ", worldSize, ")");
  return api::onRank(rank, [&] {
    char bytes[bootstrap::kUniqueIdBytes];
    std::memcpy(bytes, uniqueId.data(), sizeof bytes);
    const bootstrap::UniqueId id = bootstrap::decode(bytes);

    core::CommunicatorConfig config;
    config.timeout = options.timeout.count() > 0 ? options.timeout : env::defaultTimeout();
    // As ncclCommInitRank: a fixed rendezvous address (NCCL_COMM_ID) has no
    // server until rank 0 starts one; otherwise newUniqueId already did.
    config.hostRoot = bootstrap::rootHostedByRankZero() && rank == 0;
    return std::make_unique<Communicator>(
        std::make_shared<core::Communicator>(id, worldSize, rank, config));
  });
}

}  // namespace hora
