#include "topology/cpu_affinity.h"

#include <sched.h>

#include <algorithm>

#include "base/error.h"

namespace hora::topology {

std::vector<int> parseCpuMask(std::string_view mask) {
  std::vector<std::string_view> words;
  for (std::size_t start = 0;;) {
    const std::size_t comma = mask.find(',', start);
    words.push_back(mask.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  std::vector<int> cpus;
  for (std::size_t w = 0; w < words.size(); ++w) {
    const std::string_view word = words[w];
    HORA_CHECK_ARG(!word.empty() && word.size() <= 8, "CPU mask '", mask, "': words must be 1 to 8 hex digits");
    // The last word holds CPUs 0-31; within a word the last digit holds the lowest four.
    const int wordBase = static_cast<int>(words.size() - 1 - w) * 32;
    for (std::size_t d = 0; d < word.size(); ++d) {
      const char ch = static_cast<char>(word[d] | 0x20);
      const int digit = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
      HORA_CHECK_ARG(digit >= 0, "CPU mask '", mask, "': '", word[d], "' is not a hex digit");
      const int digitBase = wordBase + static_cast<int>(word.size() - 1 - d) * 4;
      for (int b = 0; b < 4; ++b)
        if (digit & (1 << b)) cpus.push_back(digitBase + b);
    }
  }
  std::sort(cpus.begin(), cpus.end());
  return cpus;
}

std::string formatCpuList(const std::vector<int>& cpus) {
  std::string text;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    text += strCat(text.empty() ? "" : ",", cpus[i]);
    if (j > i) text += strCat("-", cpus[j]);
    i = j + 1;
  }
  return text;
}

std::vector<int> currentCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

std::optional<std::vector<int>> affinityNear(const std::vector<int>& current, const std::vector<int>& deviceCpus) {
  if (deviceCpus.empty() || current.empty()) return std::nullopt;
  std::vector<int> sortedCurrent = current, sortedDevice = deviceCpus, both;
  std::sort(sortedCurrent.begin(), sortedCurrent.end());
  std::sort(sortedDevice.begin(), sortedDevice.end());
  std::set_intersection(sortedCurrent.begin(), sortedCurrent.end(), sortedDevice.begin(), sortedDevice.end(),
                        std::back_inserter(both));
  both.erase(std::unique(both.begin(), both.end()), both.end());
  sortedCurrent.erase(std::unique(sortedCurrent.begin(), sortedCurrent.end()), sortedCurrent.end());
  if (both.empty() || both.size() == sortedCurrent.size()) return std::nullopt;
  return both;
}

}  // namespace hora::topology
