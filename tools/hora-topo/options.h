// hora-topo's command line.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace hora::topo_tool {

// A bad command line; main() prints it with the usage and exits with 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The most ranks --ranks or --layout may simulate. The report has a line per
// pair of ranks (and a transport is chosen for each pair), so its size and
// time grow with the square of the count: 4096 ranks (512 hosts of 8 GPUs)
// already make some 16 million pairs, more than anyone reads.
inline constexpr int kMaxRanks = 4096;

// One simulated rank: its number and the name of its host.
struct SimulatedRank {
  int rank = 0;
  std::string host;
};

struct Options {
  std::optional<std::string> topologyFile;  // --topo FILE
  bool assumeNvSwitch = false;              // --nvswitch
  std::optional<int> rankCount;             // --ranks N: N ranks on this host
  std::vector<SimulatedRank> layout;        // --layout host0:0-3,host1:4-7
  bool json = false;                        // --json
  bool reasons = false;                     // --reasons
  bool help = false;                        // --help
};

Options parseOptions(const std::vector<std::string>& arguments);

// "host0:0-3,host1:4-7", "a:0,2,4,b:1,3,5": a "name:" starts a host, numbers
// and ranges belong to the host named last. Ranks must be 0..N-1, each once.
std::vector<SimulatedRank> parseLayout(const std::string& text);

extern const char* const kUsage;

}  // namespace hora::topo_tool
