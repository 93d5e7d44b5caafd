// One trial of the fault campaign, drawn from a seed: how many ranks, over
// which transport, the collectives every rank runs, and the one fault.
// Everything a trial does follows from (seed, index), so a failing trial
// can be replayed alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"

namespace hora::chaos {

enum class Category {
  Kill,        // SIGKILL one rank at a random phase
  Stop,        // SIGSTOP one rank mid-run: silent until the deadline
  Junk,        // strangers on every port: the job must succeed
  Mismatch,    // ranks disagree on one call
  Concurrent,  // a second thread of one rank calls too (calls of sizes no other rank makes)
  Abort,       // ncclCommAbort from another thread of one rank
};
inline constexpr int kCategories = 6;
const char* categoryName(Category category);

enum class KillPhase { BeforeInit, DuringInit, MidRun, AtDestroy };
const char* killPhaseName(KillPhase phase);

enum class CallKind { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce };
const char* callKindName(CallKind kind);

// One collective, as every rank issues it (unless the trial's mismatch
// changes it on one rank).
struct Call {
  CallKind kind = CallKind::AllReduce;
  std::size_t count = 0;  // per rank block for ReduceScatter / AllGather
  ncclDataType_t type = ncclInt32;
  ncclRedOp_t op = ncclSum;
  int root = 0;
  bool inPlace = false;
};

// What a mismatch trial changes on the odd rank's call. SplitInstead: the
// odd rank calls ncclCommSplit where the others make the call.
enum class MismatchField { Count, Type, Op, Root, Kind, SkipCall, SplitInstead };
const char* mismatchFieldName(MismatchField field);

struct TrialPlan {
  std::uint64_t seed = 0;
  int index = 0;
  Category category = Category::Kill;
  std::string transport;  // "shm", "tcp" or "ofi"
  int nranks = 2;
  int victim = 0;  // the rank the fault hits (kill, stop, abort, concurrent, mismatch)
  KillPhase killPhase = KillPhase::MidRun;
  int faultDelayMs = 0;  // after the victim reached the phase
  MismatchField mismatchField = MismatchField::Count;
  int mismatchCall = 0;  // index into calls
  std::vector<Call> calls;
  int timeoutSeconds = 2;  // HORA_TIMEOUT: how long a silent peer is waited for

  std::string describe() const;
};

TrialPlan planTrial(std::uint64_t seed, int index);

// Whether the agreement check sees calls `a` and `b` as the same: their
// kind, count and type, and their operation and root where the kind uses
// them, agree.
bool sameShape(const Call& a, const Call& b);

// The call `call` as rank `rank` issues it in this trial (the mismatch
// trial's odd rank changes one call).
Call callOnRank(const TrialPlan& plan, std::size_t call, int rank);
// Whether rank `rank` issues call `call` at all (a mismatch may skip one,
// or split in its place).
bool rankMakesCall(const TrialPlan& plan, std::size_t call, int rank);
// Whether rank `rank` calls ncclCommSplit in place of call `call`.
bool rankSplitsInstead(const TrialPlan& plan, std::size_t call, int rank);

}  // namespace hora::chaos
