#include "rank_environment.h"

#include <string_view>

namespace hora::launcher {

std::vector<EnvironmentVariable> rank_variables(const LaunchOptions& options, int local_rank, int master_port) {
  return {
      {"RANK", std::to_string(options.global_rank(local_rank))},
      {"LOCAL_RANK", std::to_string(local_rank)},
      {"WORLD_SIZE", std::to_string(options.world_size())},
      {"LOCAL_WORLD_SIZE", std::to_string(options.nproc_per_node)},
      // torchrun calls a node's set of ranks a "group".
      {"GROUP_RANK", std::to_string(options.node_rank)},
      {"GROUP_WORLD_SIZE", std::to_string(options.nnodes)},
      {"MASTER_ADDR", options.master_addr},
      {"MASTER_PORT", std::to_string(master_port)},
      // torchrun's single role and its elastic agent's bookkeeping, which
      // some programs read (hora-run never restarts a job).
      {"ROLE_NAME", "default"},
      {"ROLE_RANK", std::to_string(options.global_rank(local_rank))},
      {"ROLE_WORLD_SIZE", std::to_string(options.world_size())},
      {"TORCHELASTIC_RESTART_COUNT", "0"},
      {"TORCHELASTIC_MAX_RESTARTS", "0"},
      {"TORCHELASTIC_RUN_ID", "none"},
      // The rendezvous is MASTER_ADDR:MASTER_PORT, served by rank 0, not by
      // an agent's store (inherited from an outer torchrun, True would make
      // every rank a client of a store nobody serves).
      {"TORCHELASTIC_USE_AGENT_STORE", "False"},
  };
}

std::vector<EnvironmentVariable> thread_defaults(const LaunchOptions& options,
                                                 const char* inherited_omp_threads) {
  // As torchrun: several ranks per node each starting one OpenMP thread
  // per core would oversubscribe the cores; a value the user set stays.
  if (inherited_omp_threads != nullptr || options.nproc_per_node <= 1) return {};
  return {{"OMP_NUM_THREADS", "1"}};
}

std::vector<EnvironmentVariable> torch_defaults(const char* inherited_async_error_handling) {
  // As torchrun: PyTorch's NCCL watchdog turns a communicator's error into
  // the process's end; a value the user set stays.
  if (inherited_async_error_handling != nullptr) return {};
  return {{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"}};
}

std::vector<std::string> merged_environment(const char* const* inherited,
                                            const std::vector<EnvironmentVariable>& overrides) {
  auto is_overridden = [&](std::string_view entry) {
    std::string_view name = entry.substr(0, entry.find('='));
    for (const auto& [override_name, value] : overrides) {
      if (name == override_name) return true;
    }
    return false;
  };
  std::vector<std::string> environment;
  for (const char* const* entry = inherited; entry != nullptr && *entry != nullptr; ++entry) {
    if (!is_overridden(*entry)) environment.emplace_back(*entry);
  }
  for (const auto& [name, value] : overrides) environment.push_back(name + "=" + value);
  return environment;
}

}  // namespace hora::launcher
