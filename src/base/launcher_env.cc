#include "base/launcher_env.h"

#include <cctype>
#include <charconv>
#include <climits>
#include <cstdlib>

#include "base/error.h"

namespace hora::launcher {

namespace {

// One launcher's variables. nullptr: the launcher sets no such variable.
struct Names {
  Launcher launcher;
  const char* rank;
  const char* worldSize;
  const char* localRank;
  const char* localWorldSize;  // Slurm's comes from its tasks-per-node list instead
};

// In order of precedence (see the header for why).
constexpr Names kLaunchers[] = {
    {Launcher::Torchrun, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {Launcher::OpenMpi, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {Launcher::Pmi, "PMI_RANK", "PMI_SIZE", nullptr, nullptr},
    {Launcher::Slurm, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr},
};

// srun sets the step's own list; SLURM_TASKS_PER_NODE is the job's where no
// step exists (a batch script); SLURM_NTASKS_PER_NODE only with
// --ntasks-per-node, one count for every node.
constexpr const char* kSlurmTasksPerNode[] = {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE",
                                              "SLURM_NTASKS_PER_NODE"};
constexpr const char* kSlurmNodeLists[] = {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"};

// A job of more hosts than this is not a real one; the limit keeps a value
// like "n[0-999999999999]" from filling memory.
constexpr std::size_t kMaxHosts = std::size_t{1} << 20;

const char* valueOf(const Lookup& lookup, const char* name) {
  if (name == nullptr) return nullptr;
  const char* value = lookup(name);
  return value != nullptr && value[0] != '\0' ? value : nullptr;
}

// A whole decimal integer: no sign other than '-', no blanks, no suffix.
long long parseWhole(std::string_view text, std::string_view what) {
  long long value = 0;
  const char* end = text.data() + text.size();
  auto [last, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error == std::errc::invalid_argument || last != end)
    fail(ErrorKind::InvalidArgument, what, "='", text, "' is not an integer");
  if (error == std::errc::result_out_of_range)
    fail(ErrorKind::InvalidArgument, what, "='", text, "' is out of range");
  return value;
}

int parseInt(std::string_view text, std::string_view what) {
  long long value = parseWhole(text, what);
  if (value < INT_MIN || value > INT_MAX)
    fail(ErrorKind::InvalidArgument, what, "='", text, "' is out of range");
  return static_cast<int>(value);
}

// "NAME='value'" for messages.
std::string quoted(const char* name, const char* value) { return strCat(name, "='", value, "'"); }

// The number of tasks srun put on this node, from the first tasks-per-node
// list set; empty when none is.
std::optional<int> slurmTasksOnThisNode(const Lookup& lookup) {
  for (const char* name : kSlurmTasksPerNode) {
    const char* text = valueOf(lookup, name);
    if (text == nullptr) continue;
    std::vector<int> counts = expandSlurmTaskCounts(text, name);
    if (counts.size() == 1) return counts.front();  // one node, or one count for all
    const char* nodeText = valueOf(lookup, "SLURM_NODEID");
    if (nodeText == nullptr)
      fail(ErrorKind::InvalidArgument, quoted(name, text),
           " lists several nodes but SLURM_NODEID is not set, so this node's entry is unknown");
    int node = parseInt(nodeText, "SLURM_NODEID");
    if (node < 0 || static_cast<std::size_t>(node) >= counts.size())
      fail(ErrorKind::InvalidArgument, quoted("SLURM_NODEID", nodeText), " is not a node of ",
           quoted(name, text), " (", counts.size(), " nodes, 0 to ", counts.size() - 1, ")");
    return counts[static_cast<std::size_t>(node)];
  }
  return std::nullopt;
}

const char* slurmTasksPerNodeName(const Lookup& lookup) {
  for (const char* name : kSlurmTasksPerNode)
    if (valueOf(lookup, name) != nullptr) return name;
  return "SLURM_TASKS_PER_NODE";
}

Placement readPlacement(const Names& names, const Lookup& lookup) {
  const char* rankText = valueOf(lookup, names.rank);
  const char* sizeText = valueOf(lookup, names.worldSize);
  if (rankText == nullptr || sizeText == nullptr) {
    const char* set = rankText != nullptr ? names.rank : names.worldSize;
    const char* unset = rankText != nullptr ? names.worldSize : names.rank;
    fail(ErrorKind::InvalidArgument, set, " is set but ", unset, " is not set (", launcherName(names.launcher),
         " sets both): set both, or neither");
  }
  Placement placement;
  placement.launcher = names.launcher;
  placement.worldSize = parseInt(sizeText, names.worldSize);
  if (placement.worldSize < 1)
    fail(ErrorKind::InvalidArgument, "world size ", placement.worldSize, " (", quoted(names.worldSize, sizeText),
         ") must be at least 1");
  placement.rank = parseInt(rankText, names.rank);
  if (placement.rank < 0 || placement.rank >= placement.worldSize)
    fail(ErrorKind::InvalidArgument, "rank ", placement.rank, " (", quoted(names.rank, rankText),
         ") is outside [0, ", placement.worldSize, "), the ranks of ", quoted(names.worldSize, sizeText));

  const char* localRankText = valueOf(lookup, names.localRank);
  if (localRankText != nullptr) {
    placement.localRank = parseInt(localRankText, names.localRank);
    if (*placement.localRank < 0)
      fail(ErrorKind::InvalidArgument, quoted(names.localRank, localRankText), " is negative");
  }
  const char* localSizeName = names.localWorldSize;
  const char* localSizeText = valueOf(lookup, localSizeName);
  if (localSizeText != nullptr) {
    placement.localWorldSize = parseInt(localSizeText, localSizeName);
  } else if (names.launcher == Launcher::Slurm) {
    placement.localWorldSize = slurmTasksOnThisNode(lookup);
    localSizeName = slurmTasksPerNodeName(lookup);
    localSizeText = valueOf(lookup, localSizeName);
  }
  if (placement.localWorldSize) {
    const std::string source = quoted(localSizeName, localSizeText);
    if (*placement.localWorldSize < 1)
      fail(ErrorKind::InvalidArgument, source, " gives this host ", *placement.localWorldSize,
           " ranks, but this process is one of them");
    if (*placement.localWorldSize > placement.worldSize)
      fail(ErrorKind::InvalidArgument, source, " gives this host ", *placement.localWorldSize,
           " ranks, more than the world size ", quoted(names.worldSize, sizeText));
    if (placement.localRank && *placement.localRank >= *placement.localWorldSize)
      fail(ErrorKind::InvalidArgument, "local rank ", *placement.localRank, " (",
           quoted(names.localRank, localRankText), ") is outside [0, ", *placement.localWorldSize,
           "), the ranks of this host (", source, ")");
  }
  return placement;
}

// What to set so that rank 0's address is known, for this launcher.
std::string rendezvousAdvice(const Placement* placement) {
  const std::string both =
      "set MASTER_ADDR (the host of rank 0) and MASTER_PORT (a free port there), or HORA_COMM_ID=host:port";
  if (placement == nullptr) return both;
  switch (placement->launcher) {
    case Launcher::OpenMpi:
      return both + "; under mpirun pass them to every rank: mpirun -x MASTER_ADDR=host -x MASTER_PORT=port ...";
    case Launcher::Pmi:
      return both + " in the environment mpiexec passes on to every rank";
    case Launcher::Slurm:
      return both + "; under srun, export MASTER_PORT before srun (MASTER_ADDR defaults to the first node of "
                    "SLURM_STEP_NODELIST)";
    case Launcher::Torchrun:
      break;
  }
  return both + " (torchrun and hora-run set both)";
}

// ------------------------------------------------------------ Slurm lists

struct Range {
  unsigned long long low = 0;
  unsigned long long high = 0;
  std::size_t width = 0;  // digits of the lower bound as written: its zero padding
};

// A piece of one host's name: text, or a bracket's numbers.
struct Part {
  std::string text;
  std::vector<Range> ranges;  // empty: `text`
};
using HostPattern = std::vector<Part>;

std::string padded(unsigned long long value, std::size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

bool allDigits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// "01-04,07" (what stands between one pair of brackets).
std::vector<Range> parseRanges(std::string_view inside, std::string_view text, std::string_view variable) {
  std::vector<Range> ranges;
  std::size_t start = 0;
  for (;;) {
    std::size_t comma = inside.find(',', start);
    std::string_view item = inside.substr(start, comma == std::string_view::npos ? inside.npos : comma - start);
    std::size_t dash = item.find('-');
    std::string_view low = item.substr(0, dash);
    std::string_view high = dash == std::string_view::npos ? low : item.substr(dash + 1);
    if (!allDigits(low) || !allDigits(high) || low.size() > 18 || high.size() > 18)
      fail(ErrorKind::InvalidArgument, variable, "='", text, "': '[", inside,
           "]' is not a list of numbers and ranges like [01-04,07]");
    Range range;
    range.low = std::stoull(std::string(low));
    range.high = std::stoull(std::string(high));
    range.width = low.size();
    if (range.low > range.high)
      fail(ErrorKind::InvalidArgument, variable, "='", text, "': the range ", item, " runs backwards");
    ranges.push_back(range);
    if (comma == std::string_view::npos) return ranges;
    start = comma + 1;
  }
}

std::vector<HostPattern> parseHostList(std::string_view text, std::string_view variable) {
  if (text.empty()) fail(ErrorKind::InvalidArgument, variable, " is empty");
  std::vector<HostPattern> hosts(1);
  auto emptyHost = [&](std::size_t at) {
    fail(ErrorKind::InvalidArgument, variable, "='", text, "': empty host name at position ", at);
  };
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == ',') {
      if (hosts.back().empty()) emptyHost(i);
      hosts.emplace_back();
      ++i;
    } else if (c == '[') {
      std::size_t close = text.find(']', i);
      if (close == std::string_view::npos)
        fail(ErrorKind::InvalidArgument, variable, "='", text, "': the '[' at position ", i, " has no ']'");
      Part part;
      part.ranges = parseRanges(text.substr(i + 1, close - i - 1), text, variable);
      hosts.back().push_back(std::move(part));
      i = close + 1;
    } else if (c == ']' || !std::isgraph(static_cast<unsigned char>(c))) {
      fail(ErrorKind::InvalidArgument, variable, "='", text, "': unexpected character at position ", i);
    } else {
      if (hosts.back().empty() || !hosts.back().back().ranges.empty()) hosts.back().emplace_back();
      hosts.back().back().text += c;
      ++i;
    }
  }
  if (hosts.back().empty()) emptyHost(text.size());
  return hosts;
}

}  // namespace

const char* processVariable(const char* name) { return std::getenv(name); }

const char* launcherName(Launcher launcher) {
  switch (launcher) {
    case Launcher::Torchrun: return "torchrun";
    case Launcher::OpenMpi: return "Open MPI";
    case Launcher::Pmi: return "PMI";
    case Launcher::Slurm: return "Slurm";
  }
  return "unknown launcher";
}

std::optional<Placement> findPlacement(const Lookup& lookup) {
  for (const Names& names : kLaunchers) {
    if (valueOf(lookup, names.rank) != nullptr || valueOf(lookup, names.worldSize) != nullptr)
      return readPlacement(names, lookup);
  }
  return std::nullopt;
}

Placement requirePlacement(const Lookup& lookup) {
  if (auto placement = findPlacement(lookup)) return *placement;
  fail(ErrorKind::InvalidArgument,
       "this process's rank is unknown: RANK and WORLD_SIZE are not set (torchrun, hora-run), nor "
       "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE (mpirun), PMI_RANK/PMI_SIZE (mpiexec) or "
       "SLURM_PROCID/SLURM_NTASKS (srun); start it with one of these launchers, or pass the rank and "
       "world size");
}

std::optional<MasterAddress> masterAddress(const Placement* placement, const Lookup& lookup) {
  const char* host = valueOf(lookup, "MASTER_ADDR");
  const char* portText = valueOf(lookup, "MASTER_PORT");
  if (portText == nullptr) {
    // HORA_COMM_ID/NCCL_COMM_ID ("host:port") names the address on its own;
    // a MASTER_ADDR without a port is then left unused.
    if (valueOf(lookup, "HORA_COMM_ID") != nullptr || valueOf(lookup, "NCCL_COMM_ID") != nullptr)
      return std::nullopt;
    fail(ErrorKind::InvalidArgument, "rank 0's address is unknown: MASTER_PORT is not set",
         host != nullptr ? "" : " (nor MASTER_ADDR)", ", nor HORA_COMM_ID or NCCL_COMM_ID; ",
         rendezvousAdvice(placement));
  }
  MasterAddress address;
  const int port = parseInt(portText, "MASTER_PORT");
  if (port < 1 || port > 65535)
    fail(ErrorKind::InvalidArgument, quoted("MASTER_PORT", portText), " is not a port (1 to 65535)");
  address.port = port;
  if (host != nullptr) {
    address.host = host;
    return address;
  }
  const bool slurm = placement != nullptr && placement->launcher == Launcher::Slurm;
  if (slurm) {
    for (const char* name : kSlurmNodeLists) {
      if (const char* nodes = valueOf(lookup, name)) {
        address.host = firstSlurmHost(nodes, name);
        return address;
      }
    }
  }
  fail(ErrorKind::InvalidArgument, "rank 0's address is unknown: MASTER_ADDR is not set (MASTER_PORT is)",
       slurm ? ", nor SLURM_STEP_NODELIST or SLURM_JOB_NODELIST" : "", "; ", rendezvousAdvice(placement));
}

std::vector<std::string> expandSlurmHostList(std::string_view text, std::string_view variable) {
  std::vector<std::string> names;
  for (const HostPattern& host : parseHostList(text, variable)) {
    // The names so far, grown part by part: a bracket multiplies them by its
    // numbers (so the last bracket varies fastest).
    std::vector<std::string> prefixes = {""};
    for (const Part& part : host) {
      if (part.ranges.empty()) {
        for (std::string& prefix : prefixes) prefix += part.text;
        continue;
      }
      std::vector<std::string> longer;
      for (const std::string& prefix : prefixes) {
        for (const Range& range : part.ranges) {
          for (unsigned long long number = range.low;; ++number) {
            if (names.size() + longer.size() >= kMaxHosts)
              fail(ErrorKind::InvalidArgument, variable, "='", text, "' names more than ", kMaxHosts, " hosts");
            longer.push_back(prefix + padded(number, range.width));
            if (number == range.high) break;
          }
        }
      }
      prefixes = std::move(longer);
    }
    names.insert(names.end(), prefixes.begin(), prefixes.end());
  }
  return names;
}

std::string firstSlurmHost(std::string_view text, std::string_view variable) {
  const std::vector<HostPattern> hosts = parseHostList(text, variable);  // checks the whole list
  std::string name;
  for (const Part& part : hosts.front())
    name += part.ranges.empty() ? part.text : padded(part.ranges.front().low, part.ranges.front().width);
  return name;
}

std::vector<int> expandSlurmTaskCounts(std::string_view text, std::string_view variable) {
  if (text.empty()) fail(ErrorKind::InvalidArgument, variable, " is empty");
  std::vector<int> counts;
  std::size_t start = 0;
  for (;;) {
    std::size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    // "N" or "N(xR)": N tasks on each of R nodes.
    std::string_view count = item;
    long long repeat = 1;
    std::size_t open = item.find('(');
    if (open != std::string_view::npos) {
      count = item.substr(0, open);
      std::string_view times = item.substr(open);
      if (times.size() < 4 || times.substr(0, 2) != "(x" || times.back() != ')' ||
          !allDigits(times.substr(2, times.size() - 3)))
        fail(ErrorKind::InvalidArgument, variable, "='", text, "': '", item,
             "' is not a task count like 2 or 2(x3)");
      repeat = parseWhole(times.substr(2, times.size() - 3), variable);
    }
    if (!allDigits(count))
      fail(ErrorKind::InvalidArgument, variable, "='", text, "': '", item, "' is not a task count like 2 or 2(x3)");
    const int tasks = parseInt(count, variable);
    if (repeat < 1 || static_cast<unsigned long long>(repeat) > kMaxHosts - counts.size())
      fail(ErrorKind::InvalidArgument, variable, "='", text, "': '", item, "' repeats ",
           repeat < 1 ? "fewer than once" : "for too many nodes");
    counts.insert(counts.end(), static_cast<std::size_t>(repeat), tasks);
    if (comma == std::string_view::npos) return counts;
    start = comma + 1;
  }
}

}  // namespace hora::launcher
