#include "launch_options.h"

#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <fstream>
#include <string_view>
#include <system_error>

namespace hora::launcher {
namespace {

// Long options are accepted with dashes or underscores (torchrun spells them
// with underscores, most tools with dashes); comparing one canonical spelling
// keeps the table below short.
std::string canonical_long_name(std::string_view name) {
  std::string canonical(name);
  std::replace(canonical.begin(), canonical.end(), '_', '-');
  return canonical;
}

int parse_int(const std::string& option, const std::string& text) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error == std::errc::invalid_argument || stop != end) {
    throw UsageError(option + " expects a whole number, got '" + text + "'");
  }
  if (error == std::errc::result_out_of_range) {
    throw UsageError(option + " value '" + text + "' is out of range");
  }
  return value;
}

double parse_seconds(const std::string& option, const std::string& text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end || !std::isfinite(value)) {
    throw UsageError(option + " expects a number of seconds, got '" + text + "'");
  }
  if (value < 0) throw UsageError(option + " must not be negative, got '" + text + "'");
  return value;
}

// One argument list being consumed left to right.
class ArgumentCursor {
 public:
  explicit ArgumentCursor(const std::vector<std::string>& arguments) : arguments_(arguments) {}

  bool done() const { return next_ >= arguments_.size(); }
  const std::string& peek() const { return arguments_[next_]; }
  const std::string& take() { return arguments_[next_++]; }

  // The value of an option written as "--flag value": the next argument.
  std::string take_value_for(const std::string& option) {
    if (done()) throw UsageError(option + " needs a value");
    return take();
  }

  std::vector<std::string> take_rest() {
    std::vector<std::string> rest(arguments_.begin() + static_cast<std::ptrdiff_t>(next_), arguments_.end());
    next_ = arguments_.size();
    return rest;
  }

 private:
  const std::vector<std::string>& arguments_;
  std::size_t next_ = 0;
};

void apply_valued_option(LaunchOptions& options, const std::string& name, const std::string& value) {
  if (name == "-n" || name == "--nproc-per-node") {
    options.nproc_per_node = parse_int(name, value);
  } else if (name == "--nnodes") {
    if (value.find(':') != std::string::npos) {
      throw UsageError("--nnodes '" + value + "': elastic node ranges are not supported; give one number");
    }
    options.nnodes = parse_int(name, value);
  } else if (name == "--node-rank") {
    options.node_rank = parse_int(name, value);
  } else if (name == "--master-addr") {
    if (value.empty()) throw UsageError("--master-addr must not be empty");
    options.master_addr = value;
  } else if (name == "--master-port") {
    options.master_port = parse_int(name, value);
  } else if (name == "--kill-timeout") {
    options.kill_timeout_seconds = parse_seconds(name, value);
  } else if (name == "--timeout") {
    options.timeout_seconds = parse_seconds(name, value);
  } else if (name == "--bind-to") {
    auto bind_to = parse_bind_to(value);
    if (!bind_to) throw UsageError("--bind-to expects core, numa or none, got '" + value + "'");
    options.bind_to = *bind_to;
  } else if (name == "--rdzv-endpoint") {
    // torchrun's HOST[:PORT] of the rendezvous: here, rank 0's address.
    const auto colon = value.rfind(':');
    const bool hasPort = colon != std::string::npos && value.find(']', colon) == std::string::npos;
    std::string host = hasPort ? value.substr(0, colon) : value;
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    if (host.empty()) throw UsageError("--rdzv-endpoint '" + value + "' names no host");
    options.master_addr = host;
    if (hasPort) options.master_port = parse_int(name, value.substr(colon + 1));
  } else if (name == "--rdzv-backend") {
    // torchrun's rendezvous store; hora's ranks meet at rank 0's address
    // whichever is named, so the static and c10d forms both mean that.
    if (value != "c10d" && value != "static")
      throw UsageError("--rdzv-backend '" + value + "': only c10d and static are understood (both mean: meet at "
                       "--rdzv-endpoint or --master-addr)");
  } else if (name == "--max-restarts") {
    // Restarting failed ranks is torchrun's elastic agent; hora-run runs a
    // job once, which is what 0 asks for.
    if (parse_int(name, value) != 0)
      throw UsageError("--max-restarts " + value + ": hora-run does not restart failed ranks; only 0 is accepted");
  }
}

bool is_valued_option(const std::string& name) {
  static const char* const kValued[] = {"-n",          "--nproc-per-node", "--nnodes",       "--node-rank",
                                        "--master-addr", "--master-port",  "--kill-timeout", "--timeout",
                                        "--bind-to", "--rdzv-endpoint", "--rdzv-backend", "--max-restarts"};
  return std::find(std::begin(kValued), std::end(kValued), name) != std::end(kValued);
}

bool apply_flag(LaunchOptions& options, const std::string& name) {
  if (name == "-h" || name == "--help") {
    options.show_help = true;
  } else if (name == "--tag-output" || name == "--prefix") {
    options.tag_output = true;
  } else if (name == "--report-bindings") {
    options.report_bindings = true;
  } else if (name == "--keep-going") {
    options.keep_going = true;
  } else if (name == "--standalone") {
    // torchrun's single-node form: one node, rank 0 on a free local port,
    // which is hora-run's default already.
    options.nnodes = 1;
    options.node_rank = 0;
  } else {
    return false;
  }
  return true;
}

void validate(const LaunchOptions& options) {
  if (options.nproc_per_node < 1) {
    throw UsageError("--nproc-per-node must be at least 1, got " + std::to_string(options.nproc_per_node));
  }
  if (options.nnodes < 1) throw UsageError("--nnodes must be at least 1, got " + std::to_string(options.nnodes));
  if (options.node_rank < 0 || options.node_rank >= options.nnodes) {
    throw UsageError("--node-rank must be between 0 and nnodes-1 = " + std::to_string(options.nnodes - 1) +
                     ", got " + std::to_string(options.node_rank));
  }
  if (options.nproc_per_node > INT_MAX / options.nnodes) {
    throw UsageError("nnodes * nproc-per-node is too large");
  }
  if (options.master_port && (*options.master_port < 1 || *options.master_port > 65535)) {
    throw UsageError("--master-port must be between 1 and 65535, got " + std::to_string(*options.master_port));
  }
  if (options.timeout_seconds && *options.timeout_seconds <= 0) {
    throw UsageError("--timeout must be more than 0 seconds");
  }
  if (options.command.empty()) throw UsageError("no program to run was given");
}

}  // namespace

LaunchOptions parse_launch_options(const std::vector<std::string>& arguments) {
  LaunchOptions options;
  ArgumentCursor cursor(arguments);
  while (!cursor.done()) {
    const std::string& argument = cursor.peek();
    if (argument == "--") {
      cursor.take();
      break;
    }
    // The first argument that is not an option is the program; "-" alone is
    // a (strange) program name rather than an option.
    if (argument.size() < 2 || argument[0] != '-') break;
    cursor.take();

    std::string name = argument;
    std::optional<std::string> inline_value;
    if (argument.rfind("--", 0) == 0) {
      auto equals = argument.find('=');
      if (equals != std::string::npos) inline_value = argument.substr(equals + 1);
      name = canonical_long_name(argument.substr(0, equals));
    } else if (argument.size() > 2) {
      // Short option with its value attached: "-n4" or "-n=4".
      name = argument.substr(0, 2);
      inline_value = argument.substr(argument[2] == '=' ? 3 : 2);
    }

    if (is_valued_option(name)) {
      std::string value = inline_value ? *inline_value : cursor.take_value_for(name);
      apply_valued_option(options, name, value);
    } else if (apply_flag(options, name)) {
      if (inline_value) throw UsageError(name + " takes no value, got '" + argument + "'");
    } else {
      throw UsageError("unknown option '" + argument + "'");
    }
  }
  options.command = cursor.take_rest();
  // Help wins over everything else: "hora-run --help" alone must work.
  if (options.show_help) return options;
  validate(options);
  return options;
}

ProcessLimits read_process_limits() {
  ProcessLimits limits;
  rlimit user_processes{};
  if (::getrlimit(RLIMIT_NPROC, &user_processes) == 0 && user_processes.rlim_cur != RLIM_INFINITY) {
    limits.user_processes = static_cast<long long>(user_processes.rlim_cur);
  }
  std::ifstream pid_max_file("/proc/sys/kernel/pid_max");
  long long pid_max = 0;
  if (pid_max_file >> pid_max && pid_max > 0) limits.pid_max = pid_max;
  return limits;
}

void check_rank_count_fits(const LaunchOptions& options, const ProcessLimits& limits) {
  const long long ranks = options.nproc_per_node;
  if (limits.user_processes && ranks > *limits.user_processes) {
    throw UsageError("--nproc-per-node must be between 1 and " + std::to_string(*limits.user_processes) +
                     ", the processes this user may run (RLIMIT_NPROC, ulimit -u), got " + std::to_string(ranks));
  }
  if (limits.pid_max && ranks > *limits.pid_max) {
    throw UsageError("--nproc-per-node must be between 1 and " + std::to_string(*limits.pid_max) +
                     ", the process ids of this system (/proc/sys/kernel/pid_max), got " + std::to_string(ranks));
  }
}

std::string usage_text() {
  return R"(Usage: hora-run [options] [--] program [arguments...]

Starts nproc-per-node copies of program on this node, one per rank, with the
environment torch.distributed's env:// initialisation (and hora's) reads.

Options (long options accept "--name value" and "--name=value"; dashes and
underscores in names are interchangeable):
  -n, --nproc-per-node N   ranks to start on this node (default 1); at most
                           the processes this user may run (ulimit -u) and
                           the system's process ids (kernel.pid_max)
      --nnodes M           nodes in the job (default 1)
      --node-rank K        this node's index, 0 <= K < M (default 0)
      --master-addr ADDR   address of rank 0's node (default 127.0.0.1)
      --master-port PORT   port rank 0 listens on (default: a free port when
                           nnodes is 1, otherwise 29500)
      --tag-output         prefix every output line with "[rank R] "
      --prefix             same as --tag-output
      --timeout SECONDS    stop the job and fail if it runs longer
      --kill-timeout SECONDS
                           grace between SIGTERM and SIGKILL when stopping
                           ranks (default 5)
      --bind-to core|numa|none
                           CPUs of each rank: its own share of the cores
                           (default; ranks spread over NUMA nodes when there
                           are more ranks than cores), one NUMA node, or
                           unchanged. Never more than hora-run's own CPUs.
      --report-bindings    print each rank's CPUs to stderr
      --standalone         torchrun's single-node form (one node, a free
                           local port: the default)
      --rdzv-endpoint HOST[:PORT], --rdzv-backend c10d|static,
      --max-restarts 0     torchrun's spellings: the endpoint is rank 0's
                           address (as --master-addr/--master-port); failed
                           ranks are never restarted
      --keep-going         when a rank fails, let the others run on (to
                           shrink the communicator past it and continue)
                           instead of stopping them; hora-run still waits
                           for every rank and exits with the first failing
                           rank's exit code
  -h, --help               print this text

Each rank gets torchrun's variables: RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
ROLE_NAME, ROLE_RANK, ROLE_WORLD_SIZE and TORCHELASTIC_RESTART_COUNT,
_MAX_RESTARTS, _RUN_ID; and OMP_NUM_THREADS=1 with several ranks, unless
set. When a rank fails the others are
stopped (unless --keep-going), and hora-run exits with the failing rank's exit code (128+signal for a
rank killed by a signal). Exit codes of hora-run itself: 2 bad arguments,
124 --timeout expired, 127 program not found, 126 program found but not
runnable (not executable, a bad binary, or its CPUs could not be bound),
1 other failures.
)";
}

}  // namespace hora::launcher
