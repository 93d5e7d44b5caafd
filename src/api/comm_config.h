// ncclConfig_t as NCCL reads it: the bytes the caller's `size` covers over
// the defaults, fields newer than the caller's `version` left at their
// defaults, and every field it sets checked against the values NCCL
// accepts, so that a config NCCL would refuse is refused here too, and one
// it accepts is accepted (hora uses `blocking`; the other fields have no
// effect yet).
#pragma once

#include "nccl.h"

namespace hora::api {

// The config in effect for `config` (NULL: the defaults). Throws
// InvalidArgument, naming the field and its value, for one NCCL refuses.
ncclConfig_t effectiveConfig(const ncclConfig_t* config);
// Whether effectiveConfig(config) says blocking = 0.
inline bool nonBlockingConfig(const ncclConfig_t* config) { return effectiveConfig(config).blocking == 0; }

}  // namespace hora::api
