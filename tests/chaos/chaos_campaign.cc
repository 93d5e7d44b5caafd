// The long fault campaign (bench/chaos/campaign.sh runs it):
//   chaos_campaign TRIALS SEED [RECORD.tsv [CATEGORY]]
// runs TRIALS seeded trials (trial_plan.h) one after another and prints the
// table of campaign_table.h (TRIALS as FIRST:END: trials FIRST to END - 1 of
// the seed, to replay one or a few); each trial's line goes to RECORD.tsv if given
// ("-": none). With CATEGORY, only that category's trials of the same seed
// run (to replay them); CATEGORY/TRANSPORT and kill/TRANSPORT/PHASE narrow
// it further (kill/ofi/during-init: the kills during init over ofi).
// HORA_CHAOS_ERRORS=1 prints every survivor's error, with its time after
// the fault.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "campaign_table.h"
#include "trial_runner.h"

namespace {
// Whether `plan` is one of the trials `filter` names: its category, then
// optionally its transport and its kill phase, separated by '/'.
bool selected(const hora::chaos::TrialPlan& plan, const std::string& filter) {
  std::string name = hora::chaos::categoryName(plan.category);
  if (filter == name) return true;
  name += "/" + plan.transport;
  if (filter == name) return true;
  return plan.category == hora::chaos::Category::Kill &&
         filter == name + "/" + hora::chaos::killPhaseName(plan.killPhase);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TRIALS SEED [RECORD.tsv [CATEGORY[/TRANSPORT[/KILL-PHASE]]]]\n", argv[0]);
    return 2;
  }
  const std::string range = argv[1];
  const auto colon = range.find(':');
  const int first = colon == std::string::npos ? 0 : std::atoi(range.c_str());
  const int trials = std::atoi(range.c_str() + (colon == std::string::npos ? 0 : colon + 1));
  const auto seed = static_cast<std::uint64_t>(std::strtoull(argv[2], nullptr, 10));
  std::ofstream record;
  const std::string only = argc > 4 ? argv[4] : "";
  if (argc > 3 && std::string(argv[3]) != "-") {
    record.open(argv[3]);
    record << "seed\tindex\tcategory\ttransport\tranks\tvictim\tphase\thang\twrong\tcrashes\tmisnamed\tunreported"
              "\tmedian_ms\tmax_ms\tproblems\n";
  }
  const char* errorsWanted = std::getenv("HORA_CHAOS_ERRORS");
  const bool showErrors = errorsWanted != nullptr && std::string(errorsWanted) == "1";
  hora::chaos::CampaignTable table;
  int unclean = 0;
  for (int index = first; index < trials; ++index) {
    const auto plan = hora::chaos::planTrial(seed, index);
    if (!only.empty() && !selected(plan, only)) continue;
    const auto result = hora::chaos::runTrial(plan);
    table.add(result);
    if (record.is_open()) hora::chaos::printTrialRecord(record, result);
    if (showErrors)
      for (const auto& error : result.errors) std::cerr << result.plan.describe() << ": " << error << "\n";
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
