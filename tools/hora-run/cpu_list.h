// A set of logical CPUs (OS indices), kept sorted, with the list notation
// that taskset, /proc/<pid>/status ("Cpus_allowed_list") and mpirun's
// reports use: "0-3,8,10-11".
#pragma once

#include <sched.h>

#include <string>
#include <vector>

namespace hora::launcher {

class CpuList {
 public:
  CpuList() = default;
  explicit CpuList(std::vector<int> cpus);  // any order, duplicates dropped

  // The CPUs this process may run on (sched_getaffinity).
  static CpuList of_this_process();
  // "0-3,8"; throws std::invalid_argument on anything else.
  static CpuList parse(const std::string& text);

  const std::vector<int>& cpus() const { return cpus_; }
  bool empty() const { return cpus_.empty(); }
  std::size_t size() const { return cpus_.size(); }
  bool contains(int cpu) const;
  CpuList intersect(const CpuList& other) const;
  CpuList unite(const CpuList& other) const;
  std::string to_string() const;  // "0-3,8"; "" when empty

  // A cpu_set_t sized for the largest CPU (CPU_ALLOC), for sched_setaffinity.
  std::vector<unsigned char> to_affinity_mask() const;

  friend bool operator==(const CpuList&, const CpuList&) = default;

 private:
  std::vector<int> cpus_;
};

}  // namespace hora::launcher
