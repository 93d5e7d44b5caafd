// Runs a list of cases through the simulator and the checks, and reports
// each failing case with its parameters and what is wrong with it.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collective_checks.h"
#include "schedule_cases.h"

namespace hora::schedule_test {

inline void expectCasesHold(const std::vector<Case>& cases) {
  // A broken schedule usually breaks many cases the same way: a few
  // reported in full say more than thousands of lines.
  constexpr int kMaxFailingCases = 3;
  int failing = 0;
  for (const Case& c : cases) {
    const std::vector<std::string> errors = checkCase(c, runCase(c));
    if (errors.empty()) continue;
    std::string text;
    for (const std::string& error : errors) text += "\n  " + error;
    ADD_FAILURE() << c.describe() << text;
    if (++failing == kMaxFailingCases) {
      ADD_FAILURE() << "stopped after " << kMaxFailingCases << " failing cases of " << cases.size();
      return;
    }
  }
}

}  // namespace hora::schedule_test
