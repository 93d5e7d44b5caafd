// The command line of hora-run: what to start, how many copies, and how the
// copies find each other. Parsing is kept free of side effects so it can be
// tested on its own; main() decides what to do with the result.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "binding.h"

namespace hora::launcher {

// The port torchrun uses when several nodes must agree on one without talking.
inline constexpr int kDefaultMultiNodePort = 29500;

// A command line hora-run cannot act on. main() prints what() and exits with 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LaunchOptions {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  // Unset: a free local port for single-node jobs, kDefaultMultiNodePort otherwise.
  std::optional<int> master_port;
  // Prefix every line the ranks print with "[rank R] ".
  bool tag_output = false;
  // How long ranks get between SIGTERM and SIGKILL when the job is stopped.
  double kill_timeout_seconds = 5.0;
  // Wall-clock limit of the whole job; unset means no limit.
  std::optional<double> timeout_seconds;
  // Which CPUs each rank may run on (binding.h); ranks never get more
  // than hora-run itself has.
  BindTo bind_to = BindTo::Core;
  // Print each rank's CPUs to stderr before starting it.
  bool report_bindings = false;
  // When a rank fails, the others go on (they may shrink the communicator
  // past it); the job's exit code is still the first failure's.
  bool keep_going = false;
  // -h/--help was given: print the usage text and start nothing.
  bool show_help = false;
  // The program and its arguments, passed to every rank unchanged.
  std::vector<std::string> command;

  int world_size() const { return nnodes * nproc_per_node; }
  int global_rank(int local_rank) const { return node_rank * nproc_per_node + local_rank; }
};

// Parses the arguments that follow the program name (argv[1..]). Launcher
// options end at the first argument that is not an option, or after "--";
// everything from there on is the command. Throws UsageError.
LaunchOptions parse_launch_options(const std::vector<std::string>& arguments);

// How many processes this node lets hora-run start. Each rank is a process,
// so a rank count above either bound cannot be started: hora-run would fork
// until fork fails, filling the process table for everyone on the machine.
struct ProcessLimits {
  // The soft RLIMIT_NPROC (ulimit -u); unset when unlimited.
  std::optional<long long> user_processes;
  // /proc/sys/kernel/pid_max, the most process ids the system hands out;
  // unset when it cannot be read.
  std::optional<long long> pid_max;
};

// The limits of the running process and system.
ProcessLimits read_process_limits();

// Throws UsageError, naming the limit, when the ranks of this node cannot all
// be processes under `limits`. Kept apart from parsing, which must stay free
// of side effects; main() calls it before starting anything.
void check_rank_count_fits(const LaunchOptions& options, const ProcessLimits& limits);

// The text -h/--help prints.
std::string usage_text();

}  // namespace hora::launcher
