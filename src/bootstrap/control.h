// What ranks of a communicator tell each other outside its collectives,
// through each rank's bootstrap listener, which stays open for the
// communicator's life (bootstrap.h):
//
// - Notices. A rank that stops the communicator tells every other rank why
//   before it closes its connections, so that they report the first cause
//   (the rank that died, was aborted, went silent, or misused the
//   communicator) rather than the neighbour that closed after it.
// - Probes. A rank waiting for a peer on another host, whose pid it cannot
//   watch, connects to that peer's listener now and then: a refusal says
//   the peer's process is gone.
// - Shrink requests. The ranks that go on after a failure ask the first of
//   them for the unique id of their new communicator (Communicator::shrink).
//   Once it has answered them, that first rank tells each rank it left out
//   whose process still runs on its host: such a rank, shrinking with a
//   list of its own, fails at once instead of waiting for ranks that asked
//   elsewhere.
//
// Every connection starts with the greeting (greeting.h) and a Visit.
#pragma once

#include <cstdint>
#include <string>

#include "base/error.h"
#include "bootstrap/unique_id.h"

namespace hora::bootstrap {

enum class VisitKind : std::int32_t {
  Ring = 0,           // the ring neighbour (bootstrap.h), at init
  Notice = 1,         // NoticeHeader and its text follow
  Probe = 2,          // nothing follows: "are you there?"
  ShrinkRequest = 3,  // a ShrinkRequest follows; a ShrinkReply answers it
  ShrinkLeftOut = 4,  // nothing follows: "we shrank without you"
};

struct Visit {
  std::int32_t rank = -1;  // the visitor's rank
  VisitKind kind = VisitKind::Ring;
};

struct NoticeHeader {
  std::int32_t errorKind = 0;
  std::int32_t failedRank = -1;  // hora::Error::failedRank of the notice's error
  std::uint32_t textBytes = 0;
};
inline constexpr std::uint32_t kMaxNoticeBytes = 8192;

// The excluded ranks, as a set every member must give alike: compared by
// hash and count; the first ranks of the sorted list travel too, so that a
// disagreement can be shown.
struct ShrinkRequest {
  static constexpr int kShownRanks = 16;
  std::uint64_t excludedHash = 0;
  std::int32_t excludedCount = 0;
  std::int32_t survivors = 0;
  std::int32_t firstExcluded[kShownRanks] = {};  // the first min(count, kShownRanks)

  // "[1, 3]", or "[0, 1, ..., 15, and 4 more]".
  std::string excludedText() const;
};

struct ShrinkReply {
  std::int32_t ok = 0;
  char id[kUniqueIdBytes] = {0};  // when ok: the new communicator's id
  char error[512] = {0};          // when not
};

// The error of a rank that learnt from another rank's notice why the
// communicator stopped. It is not told to every rank again, only passed on
// to this rank's ring neighbours (Bootstrap::passOn): they may see this
// rank close before the teller's own notice reaches them.
class PeerNotice : public Error {
 public:
  PeerNotice(ErrorKind kind, const std::string& message, int failedRank, int teller)
      : Error(kind, message, failedRank), teller_(teller) {}
  int teller() const { return teller_; }

 private:
  int teller_;
};

}  // namespace hora::bootstrap
