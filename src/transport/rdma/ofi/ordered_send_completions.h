// Send-queue completions handed out in the order of posting.
//
// The seam (rdma/queue_pair.h) promises that a signaled completion covers
// every send-queue request posted before it: the protocol then reuses the
// staging slot or the program's buffer those requests read. libfabric's
// FI_ORDER_SAW orders where operations land, not their local completions,
// so a provider may complete a write with immediate before the writes
// posted ahead of it. This holds each signaled completion until every
// request posted before it has completed.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>

#include "transport/rdma/queue_pair.h"

namespace hora::transport::rdma::ofi {

class OrderedSendCompletions {
 public:
  // Numbers a send-queue request in the order of posting.
  std::uint64_t next() { return nextSequence_++; }
  // Request `sequence` completed; `report` (a signaled one) goes to `out`
  // once every request before it has completed, with any it released.
  void completed(std::uint64_t sequence, const Completion* report, std::deque<Completion>& out) {
    if (report != nullptr) held_.emplace(sequence, *report);
    if (sequence != completedBelow_) {
      early_.insert(sequence);
    } else {
      ++completedBelow_;
      while (!early_.empty() && *early_.begin() == completedBelow_) {
        early_.erase(early_.begin());
        ++completedBelow_;
      }
    }
    while (!held_.empty() && held_.begin()->first < completedBelow_) {
      out.push_back(held_.begin()->second);
      held_.erase(held_.begin());
    }
  }
  // Signaled completions still held for an earlier request.
  std::size_t held() const { return held_.size(); }

 private:
  std::uint64_t nextSequence_ = 0;
  std::uint64_t completedBelow_ = 0;   // every request below this has completed
  std::set<std::uint64_t> early_;      // completed above completedBelow_
  std::map<std::uint64_t, Completion> held_;
};

}  // namespace hora::transport::rdma::ofi
