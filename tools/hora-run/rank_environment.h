// The environment variables that tell one rank who it is and where rank 0
// listens, named and numbered the way torchrun sets them, so programs written
// for torch.distributed's env:// initialisation run under hora-run unchanged.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "launch_options.h"

namespace hora::launcher {

using EnvironmentVariable = std::pair<std::string, std::string>;

// RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE,
// MASTER_ADDR and MASTER_PORT for the rank with this local index, then
// torchrun's ROLE_* and TORCHELASTIC_* variables.
std::vector<EnvironmentVariable> rank_variables(const LaunchOptions& options, int local_rank, int master_port);

// OMP_NUM_THREADS=1 when several ranks share a node and the user did not
// set it (`inherited_omp_threads` is its inherited value, or null).
std::vector<EnvironmentVariable> thread_defaults(const LaunchOptions& options,
                                                 const char* inherited_omp_threads);
// TORCH_NCCL_ASYNC_ERROR_HANDLING=1 unless the user set it
// (`inherited_async_error_handling` is its inherited value, or null).
std::vector<EnvironmentVariable> torch_defaults(const char* inherited_async_error_handling);

// "NAME=value" entries: the inherited environment with every variable of
// `overrides` replacing any inherited entry of the same name.
std::vector<std::string> merged_environment(const char* const* inherited,
                                            const std::vector<EnvironmentVariable>& overrides);

}  // namespace hora::launcher
