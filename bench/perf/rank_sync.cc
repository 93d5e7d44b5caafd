#include "rank_sync.h"

#include <algorithm>
#include <numeric>

namespace hora::perf {

double combineTimes(const std::vector<double>& seconds, AverageMode mode) {
  switch (mode) {
    case AverageMode::Rank0: return seconds.front();
    case AverageMode::Min: return *std::min_element(seconds.begin(), seconds.end());
    case AverageMode::Max: return *std::max_element(seconds.begin(), seconds.end());
    case AverageMode::Mean: break;
  }
  return std::accumulate(seconds.begin(), seconds.end(), 0.0) / static_cast<double>(seconds.size());
}

ThreadRankSync::ThreadRankSync(int threads) : slots_(static_cast<std::size_t>(threads)), barrier_(threads) {}

double ThreadRankSync::combineSeconds(int participant, double seconds, AverageMode mode) {
  slots_[static_cast<std::size_t>(participant)] = seconds;
  barrier_.arrive_and_wait();
  const double combined = combineTimes(slots_, mode);
  barrier_.arrive_and_wait();  // nobody refills a slot before all have read
  return combined;
}

long long ThreadRankSync::sumCounts(int participant, long long count) {
  // Counts stay far below 2^53, so a double slot holds them exactly.
  slots_[static_cast<std::size_t>(participant)] = static_cast<double>(count);
  barrier_.arrive_and_wait();
  const double total = std::accumulate(slots_.begin(), slots_.end(), 0.0);
  barrier_.arrive_and_wait();
  return static_cast<long long>(total);
}

void ThreadRankSync::barrier(int) { barrier_.arrive_and_wait(); }

}  // namespace hora::perf
