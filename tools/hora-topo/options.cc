#include "options.h"

#include <algorithm>
#include <cstdlib>
#include <set>

namespace hora::topo_tool {

const char* const kUsage =
    "usage: hora-topo [--topo FILE] [--nvswitch] [--ranks N | --layout SPEC] [--reasons] [--json]\n"
    "\n"
    "Prints the machine as hora sees it: CPUs, GPUs, NICs, PCIe switches, the path\n"
    "class between every pair of GPUs and NICs, each GPU's nearest NIC; and for a\n"
    "rank layout, the transport hora picks for every pair of ranks and the ring.\n"
    "\n"
    "  --topo FILE     read the machine from FILE (hwloc XML or NCCL topology XML)\n"
    "                  instead of this host (default: HORA_TOPO_FILE / NCCL_TOPO_FILE)\n"
    "  --nvswitch      every GPU hangs off one NVSwitch fabric (HORA_TOPO_NVSWITCH=1)\n"
    "  --ranks N       N ranks on this machine; rank r drives GPU r (mod the GPU count)\n"
    "  --layout SPEC   ranks on simulated hosts of this machine's shape, e.g.\n"
    "                  host0:0-3,host1:4-7 or a:0,2,4,6,b:1,3,5,7; a host's k-th rank\n"
    "                  drives its GPU k\n"
    "  --reasons       explain each rank pair's transport\n"
    "  --json          machine-readable output\n";

namespace {

int parseCount(const std::string& text, const std::string& what) {
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < 0 || value > 1 << 20)
    throw UsageError(what + ": '" + text + "' is not a non-negative number");
  return static_cast<int>(value);
}

}  // namespace

std::vector<SimulatedRank> parseLayout(const std::string& text) {
  std::vector<SimulatedRank> ranks;
  std::string host;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
    if (auto colon = item.find(':'); colon != std::string::npos) {
      host = item.substr(0, colon);
      if (host.empty()) throw UsageError("--layout: '" + item + "' has an empty host name");
      item = item.substr(colon + 1);
    }
    if (host.empty()) throw UsageError("--layout: '" + item + "' comes before any 'host:'");
    if (item.empty()) throw UsageError("--layout: host '" + host + "' lists an empty rank");
    auto dash = item.find('-');
    int first = parseCount(item.substr(0, dash), "--layout");
    int last = dash == std::string::npos ? first : parseCount(item.substr(dash + 1), "--layout");
    if (last < first) throw UsageError("--layout: range '" + item + "' runs backwards");
    for (int r = first; r <= last; ++r) ranks.push_back(SimulatedRank{r, host});
  }
  std::set<int> seen;
  for (const auto& r : ranks)
    if (!seen.insert(r.rank).second) throw UsageError("--layout: rank " + std::to_string(r.rank) + " appears twice");
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r)
    if (!seen.count(r))
      throw UsageError("--layout: ranks must be 0.." + std::to_string(ranks.size() - 1) + ", rank " +
                       std::to_string(r) + " is missing");
  return ranks;
}

Options parseOptions(const std::vector<std::string>& arguments) {
  Options options;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    std::string argument = arguments[i];
    std::optional<std::string> inlineValue;
    if (auto eq = argument.find('='); argument.rfind("--", 0) == 0 && eq != std::string::npos) {
      inlineValue = argument.substr(eq + 1);
      argument = argument.substr(0, eq);
    }
    auto value = [&]() -> std::string {
      if (inlineValue) return *inlineValue;
      if (i + 1 >= arguments.size()) throw UsageError(argument + " needs a value");
      return arguments[++i];
    };
    auto noValue = [&]() {
      if (inlineValue) throw UsageError(argument + " takes no value");
    };
    if (argument == "--topo") options.topologyFile = value();
    else if (argument == "--ranks") options.rankCount = parseCount(value(), "--ranks");
    else if (argument == "--layout") options.layout = parseLayout(value());
    else if (argument == "--nvswitch") noValue(), options.assumeNvSwitch = true;
    else if (argument == "--json") noValue(), options.json = true;
    else if (argument == "--reasons") noValue(), options.reasons = true;
    else if (argument == "--help" || argument == "-h") options.help = true;
    else throw UsageError("unknown argument '" + arguments[i] + "'");
  }
  if (options.rankCount && !options.layout.empty()) throw UsageError("give --ranks or --layout, not both");
  return options;
}

}  // namespace hora::topo_tool
