#include "campaign_table.h"

#include <algorithm>
#include <cstdio>
#include <iomanip>

namespace hora::chaos {

namespace {
double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

std::string milliseconds(const std::vector<double>& values, bool highest) {
  if (values.empty()) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), "%.0f",
                highest ? *std::max_element(values.begin(), values.end()) : median(values));
  return text;
}

bool namesTheFaultyRank(Category category) {
  return category == Category::Kill || category == Category::Stop || category == Category::Abort;
}
}  // namespace

const char* rowName(int row) {
  static const char* kNames[kRows] = {"kill before init", "kill during init", "kill mid-run", "kill at destroy",
                                      "stop",           "junk",             "mismatch",     "concurrent",
                                      "abort"};
  return row >= 0 && row < kRows ? kNames[row] : "?";
}

int rowOf(const TrialPlan& plan) {
  if (plan.category == Category::Kill) return static_cast<int>(plan.killPhase);
  return static_cast<int>(plan.category) + 3;
}

void CampaignTable::add(const TrialResult& result) {
  CategoryTotals& t = rows_[rowOf(result.plan)];
  ++t.trials;
  t.hangs += result.hang ? 1 : 0;
  t.wrong += result.wrong;
  t.crashes += result.crashes;
  t.misnamed += result.misnamed;
  t.unreported += result.unreported;
  if (namesTheFaultyRank(result.plan.category))
    t.survivorsNaming += static_cast<int>(result.faultToErrorMs.size());
  t.faultToErrorMs.insert(t.faultToErrorMs.end(), result.faultToErrorMs.begin(), result.faultToErrorMs.end());
}

CategoryTotals CampaignTable::overall() const {
  CategoryTotals all;
  for (const CategoryTotals& t : rows_) {
    all.trials += t.trials;
    all.hangs += t.hangs;
    all.wrong += t.wrong;
    all.crashes += t.crashes;
    all.misnamed += t.misnamed;
    all.unreported += t.unreported;
    all.survivorsNaming += t.survivorsNaming;
  }
  return all;
}

void CampaignTable::print(std::ostream& out) const {
  out << "| category | trials | hangs | wrong | crashes | misnamed / survivors checked | unreported | fault to error, "
         "median ms | max ms |\n"
      << "|---|---|---|---|---|---|---|---|---|\n";
  for (int row = 0; row < kRows; ++row) {
    const CategoryTotals& t = rows_[row];
    out << "| " << rowName(row) << " | " << t.trials << " | " << t.hangs << " | " << t.wrong
        << " | " << t.crashes << " | " << t.misnamed << " / " << t.survivorsNaming << " | " << t.unreported << " | "
        << milliseconds(t.faultToErrorMs, false) << " | " << milliseconds(t.faultToErrorMs, true) << " |\n";
  }
  const CategoryTotals all = overall();
  out << "| all | " << all.trials << " | " << all.hangs << " | " << all.wrong << " | " << all.crashes << " | "
      << all.misnamed << " / " << all.survivorsNaming << " | " << all.unreported << " | | |\n";
}

void printTrialRecord(std::ostream& out, const TrialResult& result) {
  const TrialPlan& plan = result.plan;
  out << plan.seed << '\t' << plan.index << '\t' << categoryName(plan.category) << '\t' << plan.transport << '\t'
      << plan.nranks << '\t' << plan.victim << '\t'
      << (plan.category == Category::Kill ? killPhaseName(plan.killPhase) : "-") << '\t' << result.hang << '\t'
      << result.wrong << '\t' << result.crashes << '\t' << result.misnamed << '\t' << result.unreported << '\t'
      << milliseconds(result.faultToErrorMs, false) << '\t' << milliseconds(result.faultToErrorMs, true) << '\t';
  for (const std::string& problem : result.problems) out << problem << "; ";
  out << '\n';
}

}  // namespace hora::chaos
