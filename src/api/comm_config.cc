#include "api/comm_config.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "base/env.h"
#include "base/error.h"

namespace hora::api {

namespace {

constexpr int kMaxChannels = 64;  // NCCL's MAXCHANNELS: nChannelsPerNetPeer's bound

bool set(int value) { return value != NCCL_CONFIG_UNDEF_INT; }
bool setAndNotBoolean(int value) { return set(value) && value != 0 && value != 1; }

// As NCCL's: NCCL_COMM_BLOCKING, when 0 or 1, overrides every
// communicator's config.blocking, those made without a config included.
ncclConfig_t withBlockingFromEnvironment(ncclConfig_t c) {
  const long long blocking = env::getInt({"HORA_COMM_BLOCKING", "NCCL_COMM_BLOCKING"}, NCCL_CONFIG_UNDEF_INT);
  if (blocking == 0 || blocking == 1) c.blocking = static_cast<int>(blocking);
  return c;
}

}  // namespace

ncclConfig_t effectiveConfig(const ncclConfig_t* config) {
  const ncclConfig_t defaults = NCCL_CONFIG_INITIALIZER;
  ncclConfig_t c = defaults;
  if (config == nullptr) return withBlockingFromEnvironment(c);
  c.magic = 0;
  std::memcpy(&c, config, std::min(config->size, sizeof(c)));
  HORA_CHECK_ARG(c.magic == 0xcafebeef,
                 "ncclConfig_t was not initialised with NCCL_CONFIG_INITIALIZER (bad magic)");
  HORA_CHECK_ARG(config->size >= offsetof(ncclConfig_t, cgaClusterSize), "ncclConfig_t has an invalid size ",
                 config->size);
  // Fields the caller's nccl.h did not have yet keep their defaults, as
  // NCCL's versions added them.
  if (c.version < NCCL_VERSION(2, 14, 0)) c.blocking = defaults.blocking;
  if (c.version < NCCL_VERSION(2, 17, 0)) {
    c.cgaClusterSize = defaults.cgaClusterSize;
    c.minCTAs = defaults.minCTAs;
    c.maxCTAs = defaults.maxCTAs;
    c.netName = defaults.netName;
  }
  if (c.version < NCCL_VERSION(2, 25, 0)) c.trafficClass = defaults.trafficClass;
  if (c.version < NCCL_VERSION(2, 27, 0)) {
    c.collnetEnable = defaults.collnetEnable;
    c.CTAPolicy = defaults.CTAPolicy;
    c.shrinkShare = defaults.shrinkShare;
    c.nvlsCTAs = defaults.nvlsCTAs;
  }
  if (c.version < NCCL_VERSION(2, 28, 0)) {
    c.nChannelsPerNetPeer = defaults.nChannelsPerNetPeer;
    c.nvlinkCentricSched = defaults.nvlinkCentricSched;
  }
  HORA_CHECK_ARG(!setAndNotBoolean(c.blocking), "ncclConfig_t.blocking must be 0 or 1, got ", c.blocking);
  HORA_CHECK_ARG(!set(c.cgaClusterSize) || c.cgaClusterSize >= 0, "ncclConfig_t.cgaClusterSize must not be "
                 "negative, got ", c.cgaClusterSize);
  // Unset is NCCL_CONFIG_UNDEF_INT (INT_MIN), so a minCTAs set alone is
  // above an unset maxCTAs and refused, as NCCL refuses it.
  HORA_CHECK_ARG((!set(c.minCTAs) || c.minCTAs > 0) && (!set(c.maxCTAs) || c.maxCTAs > 0) &&
                     c.minCTAs <= c.maxCTAs,
                 "ncclConfig_t.minCTAs and maxCTAs must be positive, minCTAs at most maxCTAs, got ", c.minCTAs,
                 " and ", c.maxCTAs, " (", NCCL_CONFIG_UNDEF_INT, ": unset)");
  HORA_CHECK_ARG(!setAndNotBoolean(c.splitShare), "ncclConfig_t.splitShare must be 0 or 1, got ", c.splitShare);
  HORA_CHECK_ARG(!setAndNotBoolean(c.collnetEnable), "ncclConfig_t.collnetEnable must be 0 or 1, got ",
                 c.collnetEnable);
  HORA_CHECK_ARG(!set(c.CTAPolicy) || (c.CTAPolicy >= NCCL_CTA_POLICY_DEFAULT && c.CTAPolicy <= NCCL_CTA_POLICY_ZERO),
                 "ncclConfig_t.CTAPolicy must be an NCCL_CTA_POLICY_ value, got ", c.CTAPolicy);
  HORA_CHECK_ARG(!setAndNotBoolean(c.shrinkShare), "ncclConfig_t.shrinkShare must be 0 or 1, got ", c.shrinkShare);
  HORA_CHECK_ARG(!set(c.nvlsCTAs) || c.nvlsCTAs > 0, "ncclConfig_t.nvlsCTAs must be positive, got ", c.nvlsCTAs);
  HORA_CHECK_ARG(!set(c.nChannelsPerNetPeer) || (c.nChannelsPerNetPeer > 0 && c.nChannelsPerNetPeer <= kMaxChannels),
                 "ncclConfig_t.nChannelsPerNetPeer must be 1 to ", kMaxChannels, ", got ", c.nChannelsPerNetPeer);
  HORA_CHECK_ARG(!setAndNotBoolean(c.nvlinkCentricSched), "ncclConfig_t.nvlinkCentricSched must be 0 or 1, got ",
                 c.nvlinkCentricSched);
  return withBlockingFromEnvironment(c);
}

}  // namespace hora::api
