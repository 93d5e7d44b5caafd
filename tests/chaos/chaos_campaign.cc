// The long fault campaign (bench/chaos/campaign.sh runs it):
//   chaos_campaign TRIALS SEED [RECORD.tsv [CATEGORY]]
// runs TRIALS seeded trials (trial_plan.h) one after another and prints the
// table of campaign_table.h; each trial's line goes to RECORD.tsv if given
// ("-": none). With CATEGORY, only that category's trials of the same seed
// run (to replay them).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "campaign_table.h"
#include "trial_runner.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TRIALS SEED [RECORD.tsv]\n", argv[0]);
    return 2;
  }
  const int trials = std::atoi(argv[1]);
  const auto seed = static_cast<std::uint64_t>(std::strtoull(argv[2], nullptr, 10));
  std::ofstream record;
  const std::string only = argc > 4 ? argv[4] : "";
  if (argc > 3 && std::string(argv[3]) != "-") {
    record.open(argv[3]);
    record << "seed\tindex\tcategory\ttransport\tranks\tvictim\tphase\thang\twrong\tcrashes\tmisnamed\tunreported"
              "\tmedian_ms\tmax_ms\tproblems\n";
  }
  hora::chaos::CampaignTable table;
  int unclean = 0;
  for (int index = 0; index < trials; ++index) {
    const auto plan = hora::chaos::planTrial(seed, index);
    if (!only.empty() && only != hora::chaos::categoryName(plan.category)) continue;
    const auto result = hora::chaos::runTrial(plan);
    table.add(result);
    if (record.is_open()) hora::chaos::printTrialRecord(record, result);
    if (!result.clean()) {
      ++unclean;
      std::cerr << result.plan.describe() << ":";
      for (const auto& problem : result.problems) std::cerr << "\n  " << problem;
      std::cerr << "\n";
    }
    if ((index + 1) % 50 == 0) std::cerr << index + 1 << " of " << trials << " trials\n";
  }
  table.print(std::cout);
  return unclean == 0 ? 0 : 1;
}
