#include "trial_plan.h"

#include <random>
#include <sstream>

#include "hora_config.h"

namespace hora::chaos {

const char* categoryName(Category category) {
  switch (category) {
    case Category::Kill: return "kill";
    case Category::Stop: return "stop";
    case Category::Junk: return "junk";
    case Category::Mismatch: return "mismatch";
    case Category::Concurrent: return "concurrent";
    case Category::Abort: return "abort";
  }
  return "?";
}

const char* killPhaseName(KillPhase phase) {
  switch (phase) {
    case KillPhase::BeforeInit: return "before-init";
    case KillPhase::DuringInit: return "during-init";
    case KillPhase::MidRun: return "mid-run";
    case KillPhase::AtDestroy: return "at-destroy";
  }
  return "?";
}

const char* callKindName(CallKind kind) {
  switch (kind) {
    case CallKind::AllReduce: return "all_reduce";
    case CallKind::ReduceScatter: return "reduce_scatter";
    case CallKind::AllGather: return "all_gather";
    case CallKind::Broadcast: return "broadcast";
    case CallKind::Reduce: return "reduce";
  }
  return "?";
}

const char* mismatchFieldName(MismatchField field) {
  switch (field) {
    case MismatchField::Count: return "count";
    case MismatchField::Type: return "type";
    case MismatchField::Op: return "op";
    case MismatchField::Root: return "root";
    case MismatchField::Kind: return "kind";
    case MismatchField::SkipCall: return "skipped call";
    case MismatchField::SplitInstead: return "ncclCommSplit instead";
  }
  return "?";
}

namespace {

// Categories weighted by what the campaign most needs to show: kills (every
// phase), then the misuse cases; stops cost a whole deadline each.
Category drawCategory(std::mt19937_64& random) {
  const int weights[kCategories] = {40, 8, 14, 16, 10, 12};
  int total = 0;
  for (int w : weights) total += w;
  int pick = static_cast<int>(random() % static_cast<unsigned>(total));
  for (int c = 0; c < kCategories; ++c) {
    if (pick < weights[c]) return static_cast<Category>(c);
    pick -= weights[c];
  }
  return Category::Kill;
}

// The fields a call's kind uses besides kind, count and type: NCCL ignores
// the operation of a copying call and the root of an unrooted one.
bool usesOp(CallKind kind) { return kind != CallKind::AllGather && kind != CallKind::Broadcast; }
bool usesRoot(CallKind kind) { return kind == CallKind::Broadcast || kind == CallKind::Reduce; }

Call drawCall(std::mt19937_64& random, int nranks) {
  static const std::size_t kCounts[] = {0, 1, 7, 1000, 4099, 65537, 1 << 18};
  // Integers, and floats holding small integers: sums, maxima and minima
  // are exact in any order, so every rank can check its result bit for bit.
  static const ncclDataType_t kTypes[] = {ncclInt32, ncclInt64, ncclUint8, ncclFloat32, ncclFloat64};
  static const ncclRedOp_t kOps[] = {ncclSum, ncclMax, ncclMin};
  Call call;
  call.kind = static_cast<CallKind>(random() % 5);
  call.count = kCounts[random() % std::size(kCounts)];
  call.type = kTypes[random() % std::size(kTypes)];
  call.op = kOps[random() % std::size(kOps)];
  // Keeps the reference simple: no uint8 sums (they wrap).
  if (call.type == ncclUint8 && call.op == ncclSum) call.op = ncclMax;
  call.root = static_cast<int>(random() % static_cast<unsigned>(nranks));
  call.inPlace = random() % 2 == 0;
  return call;
}

}  // namespace

TrialPlan planTrial(std::uint64_t seed, int index) {
  std::seed_seq sequence{seed, static_cast<std::uint64_t>(index)};
  std::mt19937_64 random(sequence);
  TrialPlan plan;
  plan.seed = seed;
  plan.index = index;
  plan.category = drawCategory(random);
  // ofi: the RDMA credit protocol on libfabric's tcp provider, where this
  // build has libfabric.
  constexpr const char* kTransports[] = {"shm", "tcp", "ofi"};
  plan.transport = kTransports[random() % (HORA_HAVE_OFI ? 3 : 2)];
  plan.nranks = 2 + static_cast<int>(random() % 3);  // 2 to 4
  plan.victim = static_cast<int>(random() % static_cast<unsigned>(plan.nranks));
  plan.killPhase = static_cast<KillPhase>(random() % 4);
  plan.faultDelayMs = static_cast<int>(random() % 40);
  plan.mismatchField = static_cast<MismatchField>(random() % 6);
  const int calls = 6 + static_cast<int>(random() % 6);
  for (int c = 0; c < calls; ++c) plan.calls.push_back(drawCall(random, plan.nranks));
  // Far enough from the end that the calls after it reveal the mismatch to
  // every rank (a rank whose own exchanges agreed learns at its next call).
  plan.mismatchCall = static_cast<int>(random() % static_cast<unsigned>(calls - 3));
  // Only a field the call's kind uses is a disagreement: NCCL ignores the
  // root of an all-reduce and the operation of a broadcast. Where the
  // drawn field means nothing for the call, the count differs instead.
  Call& odd = plan.calls[plan.mismatchCall];
  if ((plan.mismatchField == MismatchField::Op && !usesOp(odd.kind)) ||
      (plan.mismatchField == MismatchField::Root && !usesRoot(odd.kind)))
    plan.mismatchField = MismatchField::Count;
  if (plan.mismatchField == MismatchField::Count && odd.count == 0) odd.count = 5;
  // A skipped call shows where the odd rank's next call meets the others'
  // skipped one. Had the two the same shape, they would pair off by
  // position with different inputs, which no check can tell from a
  // program's own choice of data (a documented limit, docs/reliability.md);
  // the next call is made to differ, so the trial tests what the check
  // promises.
  if (plan.mismatchField == MismatchField::SkipCall) {
    Call& next = plan.calls[plan.mismatchCall + 1];
    if (sameShape(odd, next)) next.count = next.count * 2 + 1;
  }
  // A third of the count mismatches become a split on the odd rank in
  // place of the call (a call that meets over the bootstrap ring, which
  // opens with a stamped all-reduce). Drawn last, so that every other draw
  // of a seed's trials stays as it was before this kind existed.
  if (random() % 3 == 0 && plan.mismatchField == MismatchField::Count)
    plan.mismatchField = MismatchField::SplitInstead;
  // Runs long enough for a fault to land in the middle of it: the drawn
  // calls again and again.
  if (plan.category != Category::Mismatch)
    for (std::size_t c = 0, drawn = plan.calls.size(); c < drawn * 40; ++c) plan.calls.push_back(plan.calls[c % drawn]);
  return plan;
}

bool sameShape(const Call& a, const Call& b) {
  return a.kind == b.kind && a.count == b.count && a.type == b.type && (!usesOp(a.kind) || a.op == b.op) &&
         (!usesRoot(a.kind) || a.root == b.root);
}

Call callOnRank(const TrialPlan& plan, std::size_t index, int rank) {
  Call call = plan.calls[index];
  if (plan.category != Category::Mismatch || rank != plan.victim || static_cast<int>(index) != plan.mismatchCall)
    return call;
  switch (plan.mismatchField) {
    case MismatchField::Count: call.count = call.count * 2 + 1; break;
    case MismatchField::Type: call.type = call.type == ncclInt32 ? ncclFloat32 : ncclInt32; break;
    case MismatchField::Op: call.op = call.op == ncclSum ? ncclMax : ncclSum; break;
    case MismatchField::Root: call.root = (call.root + 1) % plan.nranks; break;
    case MismatchField::Kind:
      call.kind = call.kind == CallKind::AllReduce ? CallKind::Broadcast : CallKind::AllReduce;
      break;
    case MismatchField::SkipCall:
    case MismatchField::SplitInstead: break;
  }
  return call;
}

namespace {
bool isOddCall(const TrialPlan& plan, std::size_t index, int rank) {
  return plan.category == Category::Mismatch && rank == plan.victim && static_cast<int>(index) == plan.mismatchCall;
}
}  // namespace

bool rankMakesCall(const TrialPlan& plan, std::size_t index, int rank) {
  return !(isOddCall(plan, index, rank) && (plan.mismatchField == MismatchField::SkipCall ||
                                            plan.mismatchField == MismatchField::SplitInstead));
}

bool rankSplitsInstead(const TrialPlan& plan, std::size_t index, int rank) {
  return isOddCall(plan, index, rank) && plan.mismatchField == MismatchField::SplitInstead;
}

std::string TrialPlan::describe() const {
  std::ostringstream text;
  text << "trial " << index << " (seed " << seed << "): " << categoryName(category) << ", " << nranks
       << " ranks over " << transport << ", rank " << victim;
  if (category == Category::Kill) text << " killed " << killPhaseName(killPhase) << " +" << faultDelayMs << " ms";
  if (category == Category::Mismatch && mismatchField == MismatchField::SplitInstead)
    text << " calls ncclCommSplit in place of call " << mismatchCall << " (" << callKindName(calls[mismatchCall].kind)
         << ")";
  else if (category == Category::Mismatch)
    text << " differs in " << mismatchFieldName(mismatchField) << " of call " << mismatchCall << " ("
         << callKindName(calls[mismatchCall].kind) << ")";
  return text.str();
}

}  // namespace hora::chaos
