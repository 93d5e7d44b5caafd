// Sums chaos trials up per fault category, as the campaign's table:
// category | trials | hangs | wrong | crashes | misnamed | unreported |
// median and max time from fault to error.
#pragma once

#include <ostream>
#include <vector>

#include "trial_runner.h"

namespace hora::chaos {

struct CategoryTotals {
  int trials = 0, hangs = 0, wrong = 0, crashes = 0, misnamed = 0, unreported = 0;
  int survivorsNaming = 0;  // survivor errors checked for the rank they name
  std::vector<double> faultToErrorMs;
};

// Rows: one per category, kills split by the phase they hit (a rank killed
// before it reached the rendezvous is silent: nobody had a connection to it).
inline constexpr int kRows = kCategories + 3;
const char* rowName(int row);
int rowOf(const TrialPlan& plan);

class CampaignTable {
 public:
  void add(const TrialResult& result);
  CategoryTotals overall() const;
  void print(std::ostream& out) const;

 private:
  CategoryTotals rows_[kRows];
};

// One line per trial, tab-separated, for the campaign's record.
void printTrialRecord(std::ostream& out, const TrialResult& result);

}  // namespace hora::chaos
