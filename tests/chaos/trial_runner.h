// Runs one chaos trial: forks its ranks, injects its fault, and judges what
// every rank reported.
#pragma once

#include <string>
#include <vector>

#include "trial_plan.h"

namespace hora::chaos {

struct TrialResult {
  TrialPlan plan;
  bool hang = false;        // a rank still ran at the trial's limit
  int wrong = 0;            // successful calls whose result differed
  int crashes = 0;          // ranks that died of a signal we did not send, or exited badly
  int misnamed = 0;         // survivors whose error named another rank as the first failure
  int unreported = 0;       // ranks that should have failed but succeeded, or failed when they should not
  std::vector<double> faultToErrorMs;  // per survivor that reported an error
  std::vector<std::string> problems;   // one line per finding, for the log
  std::vector<std::string> errors;     // each survivor's error: "<ms after the fault> ms: <text>"

  bool clean() const { return !hang && wrong == 0 && crashes == 0 && misnamed == 0 && unreported == 0; }
};

// Must be called before the calling process starts any thread (it forks).
TrialResult runTrial(const TrialPlan& plan);

// The rank an error text names as the one that failed first ("rank K (host
// H, pid P) failed first", or a rendezvous that says rank K never arrived);
// -1 if none.
int rankNamedFirst(const std::string& text);

}  // namespace hora::chaos
