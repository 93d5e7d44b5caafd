#include "options.h"

#include <algorithm>
#include <cerrno>
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
    "                  Either gives 1 to 4096 ranks: the report has a line per pair\n"
    "                  of ranks, so its size and time grow with the square of N.\n"
    "  --reasons       explain each rank pair's transport\n"
    "  --json          machine-readable output\n";

namespace {

// A whole number from 0 to `maximum`. Anything else is refused, saying
// whether it was no number at all or one out of range, and what the range is.
int parseCount(const std::string& text, const std::string& what, long maximum, const std::string& whyMaximum) {
  const bool digitsOnly =
      !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digitsOnly) throw UsageError(what + ": '" + text + "' is not a non-negative number");
  errno = 0;
  const long long value = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE || value > maximum)
    throw UsageError(what + ": '" + text + "' is too large: at most " + std::to_string(maximum) + " (" + whyMaximum +
                     ")");
  return static_cast<int>(value);
}

const std::string kWhyMaxRanks = "the report has a line per pair of ranks";

int parseRankCount(const std::string& text) {
  const int count = parseCount(text, "--ranks", kMaxRanks, kWhyMaxRanks);
  if (count == 0) throw UsageError("--ranks must be between 1 and " + std::to_string(kMaxRanks) + ", got 0");
  return count;
}

int parseLayoutRank(const std::string& text) {
  return parseCount(text, "--layout rank", kMaxRanks - 1, "ranks are 0.." + std::to_string(kMaxRanks - 1) + ": " +
                                                               kWhyMaxRanks);
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
    // A dash at either end splits off an empty number ("-1" is "" and "1"):
    // name what was written, not the empty part.
    if (dash == 0 || dash + 1 == item.size())
      throw UsageError("--layout rank: '" + item + "' is not a non-negative number or range");
    int first = parseLayoutRank(item.substr(0, dash));
    int last = dash == std::string::npos ? first : parseLayoutRank(item.substr(dash + 1));
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
    else if (argument == "--ranks") options.rankCount = parseRankCount(value());
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
