// The few places where torch's c10d C++ API differs between the versions
// hora_torch builds against. HORA_TORCH_VERSION_MAJOR comes from the build
// (the torch found at configure time).
//
// torch 1.x: a backend is a c10d::ProcessGroup, returned to Python as is.
// torch 2.x: a backend is a c10d::Backend that torch wraps in its own
//            ProcessGroup, one backend per device type.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#if HORA_TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
namespace hora_torch {
using BackendBase = c10d::Backend;
}
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
namespace hora_torch {
using BackendBase = c10d::ProcessGroup;
}
#endif
