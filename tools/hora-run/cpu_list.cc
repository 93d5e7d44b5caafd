#include "cpu_list.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <system_error>

namespace hora::launcher {
namespace {

int parse_cpu(std::string_view text, const std::string& whole) {
  int value = 0;
  if (text.empty()) throw std::invalid_argument("empty CPU number in '" + whole + "'");
  for (char c : text) {
    if (c < '0' || c > '9' || value > 1'000'000)
      throw std::invalid_argument("'" + std::string(text) + "' in '" + whole + "' is not a CPU number");
    value = value * 10 + (c - '0');
  }
  return value;
}

}  // namespace

CpuList::CpuList(std::vector<int> cpus) : cpus_(std::move(cpus)) {
  std::sort(cpus_.begin(), cpus_.end());
  cpus_.erase(std::unique(cpus_.begin(), cpus_.end()), cpus_.end());
}

CpuList CpuList::of_this_process() {
  // Grow the mask until the kernel's fits: machines with more than 1024
  // CPUs exist, and sched_getaffinity fails with EINVAL on a short mask.
  for (int capacity = 1024;; capacity *= 2) {
    cpu_set_t* set = CPU_ALLOC(capacity);
    const std::size_t bytes = CPU_ALLOC_SIZE(capacity);
    if (::sched_getaffinity(0, bytes, set) == 0) {
      std::vector<int> cpus;
      for (int cpu = 0; cpu < capacity; ++cpu)
        if (CPU_ISSET_S(cpu, bytes, set)) cpus.push_back(cpu);
      CPU_FREE(set);
      return CpuList(std::move(cpus));
    }
    const int error = errno;
    CPU_FREE(set);
    if (error != EINVAL || capacity > (1 << 20))
      throw std::system_error(error, std::generic_category(), "cannot read this process's CPU affinity");
  }
}

CpuList CpuList::parse(const std::string& text) {
  std::vector<int> cpus;
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (comma != std::string_view::npos && rest.empty())
      throw std::invalid_argument("trailing ',' in '" + text + "'");
    const std::size_t dash = item.find('-');
    const int first = parse_cpu(item.substr(0, dash), text);
    const int last = dash == std::string_view::npos ? first : parse_cpu(item.substr(dash + 1), text);
    if (last < first) throw std::invalid_argument("range '" + std::string(item) + "' runs backwards");
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  }
  return CpuList(std::move(cpus));
}

bool CpuList::contains(int cpu) const { return std::binary_search(cpus_.begin(), cpus_.end(), cpu); }

CpuList CpuList::intersect(const CpuList& other) const {
  std::vector<int> both;
  std::set_intersection(cpus_.begin(), cpus_.end(), other.cpus_.begin(), other.cpus_.end(),
                        std::back_inserter(both));
  return CpuList(std::move(both));
}

CpuList CpuList::unite(const CpuList& other) const {
  std::vector<int> either;
  std::set_union(cpus_.begin(), cpus_.end(), other.cpus_.begin(), other.cpus_.end(),
                 std::back_inserter(either));
  return CpuList(std::move(either));
}

std::string CpuList::to_string() const {
  std::string text;
  for (std::size_t i = 0; i < cpus_.size();) {
    std::size_t j = i;
    while (j + 1 < cpus_.size() && cpus_[j + 1] == cpus_[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += std::to_string(cpus_[i]);
    if (j > i) text += '-' + std::to_string(cpus_[j]);
    i = j + 1;
  }
  return text;
}

std::vector<unsigned char> CpuList::to_affinity_mask() const {
  const int capacity = cpus_.empty() ? 1 : cpus_.back() + 1;
  std::vector<unsigned char> bytes(CPU_ALLOC_SIZE(capacity), 0);
  auto* set = reinterpret_cast<cpu_set_t*>(bytes.data());
  for (int cpu : cpus_) CPU_SET_S(cpu, bytes.size(), set);
  return bytes;
}

}  // namespace hora::launcher
