// hora-topo: the machine as hora sees it, and what hora would do on it.
//
//   hora-topo                                   this host
//   hora-topo --topo ndv4.xml --nvswitch --ranks 8
//   hora-topo --topo ndv4.xml --layout a:0-7,b:8-15 --json
#include <cstdlib>
#include <exception>
#include <iostream>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "base/env.h"
#include "hora/communicator.h"
#include "options.h"
#include "report.h"
#include "topology/topology.h"

namespace {

// The tool proper; main() turns what escapes it into a message.
int run(const std::vector<std::string>& arguments) {
  using namespace hora::topo_tool;
  Options options;
  try {
    options = parseOptions(arguments);
  } catch (const UsageError& error) {
    std::cerr << "hora-topo: " << error.what() << "\n\n" << kUsage;
    return 2;
  }
  if (options.help) {
    std::cout << kUsage;
    return 0;
  }
  try {
    hora::topology::System system = [&] {
      if (options.topologyFile) {
        hora::topology::LoadOptions load;
        load.assumeNvSwitch = options.assumeNvSwitch || hora::env::getInt({"HORA_TOPO_NVSWITCH"}, 0) != 0;
        return hora::topology::loadSystemFromFile(*options.topologyFile, load);
      }
      // Exactly what a communicator would see: HORA_TOPO_FILE or this host,
      // with --nvswitch meaning HORA_TOPO_NVSWITCH=1.
      if (options.assumeNvSwitch) setenv("HORA_TOPO_NVSWITCH", "1", 1);
      return hora::topology::loadSystem();
    }();

    std::vector<SimulatedRank> layout = options.layout;
    if (options.rankCount)
      for (int r = 0; r < *options.rankCount; ++r) layout.push_back(SimulatedRank{r, "host0"});
    // This host's network devices, unless --topo names another machine. A
    // communicator probes them whatever describes its machine (a
    // HORA_TOPO_FILE too), and ib is only for ranks that can open a verbs
    // device, so the report must probe them too to show its choices.
    const auto policy = hora::topology::TransportPolicy::fromEnvironment();
    std::optional<NetworkDeviceReport> network;
    if (!options.topologyFile) network = hora::transport::rdma::probeNetworkDevices(policy);
    const NetworkDeviceReport* networkSeen = network ? &*network : nullptr;
    RankView ranks;
    if (!layout.empty()) ranks = simulateRanks(system, layout, policy, networkSeen);

    if (options.json) printJson(std::cout, system, networkSeen, layout.empty() ? nullptr : &ranks);
    else printText(std::cout, system, networkSeen, layout.empty() ? nullptr : &ranks, options.reasons);
  } catch (const hora::Error& error) {
    std::cerr << "hora-topo: " << error.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::bad_alloc&) {
    // Files are read within limits, but a large machine with thousands of
    // ranks can still outgrow a small host's memory.
    std::cerr << "hora-topo: out of memory: the machine or the rank layout is too large for this host\n";
  } catch (const std::exception& error) {
    // Whatever else fails is reported, never left to abort the process.
    std::cerr << "hora-topo: internal error: " << error.what() << "\n";
  }
  return 1;
}
