// When a rank that shares its GPU with other ranks of its process may
// launch its next kernel. Plain C++, so that the rule is built and tested
// on machines without CUDA (tests/core/launch_order_test.cc models the
// hardware queues it guards against).
//
// Why a rule at all: CUDA spreads a context's streams over a few hardware
// queues, and a queue is in order: a kernel at its head that waits for the
// kernel before it on its own stream holds back everything behind it,
// other streams' kernels included. Rank A's kernel k+1 waits for A's
// kernel k, which waits for the kernels of the same collective on A's
// peers. If A's thread runs ahead and puts k+1 into a queue in front of a
// peer's kernel k, nothing can move again.
//
// The rule (LaunchRule::Started, the default): a rank launches its next
// kernel only once every kernel its last one can wait for has left the
// queues, that is, has started.
//   - After a collective (ring kernels are numbered alike on every rank of
//     the communicator, one per collective): once every other rank of this
//     process on this GPU has started its kernel of that collective. A
//     kernel of the collective that has not started yet is then ahead of
//     every later kernel in any queue, and the kernels of one collective
//     fit on the GPU together (the blocks are counted at set-up), so the
//     collective ends and the queue moves on.
//   - After point-to-point work, whose kernels are not numbered alike (a
//     rank without sends or receives launches none): once this rank's last
//     kernel has ended.
// So calls overlap their launch with the previous kernel, as they do for
// ranks that do not share a GPU, except after point-to-point work.
// LaunchRule::Unfinished keeps at most N kernels of this rank unfinished
// (N = 1 is the rule "after point-to-point work" applied to every kernel;
// a larger N brings the hazard back); LaunchRule::None holds nothing back
// (HORA_DEVICE_MAX_QUEUED selects them).
//
// A launch of several collectives (a group's, device_work.h) counts as
// each of them: collectives are numbered one by one, and the launch
// records the number of its last as it starts. Ranks that cut a group into
// launches differently (each rank's streams are its own) still wait for
// the right kernel; numbered per launch, they would not (the model test
// shows both).
//
// Every launch of a call waits, not only its first: a group whose
// collectives need several launches (more than a launch holds, other
// kernels, other streams, or collectives and point-to-point work) would
// otherwise put its second launch into a shared queue in front of a
// peer's first. A thread that makes the calls of several ranks of the GPU
// at once (a group over ranks of one process, api/group.cc) cannot wait in
// the middle of one rank's call for a peer's launch it has not made yet;
// so it makes the ranks' launches in the order of their collectives'
// numbers (nextLaunchOf), and a launch then waits only for kernels already
// launched, by this thread or by another (the proof is in nextLaunchOf's
// comment).
//
// What the rule does not cover: kernels of another communicator on the
// same streams, kernels the program itself puts there between calls,
// replays of captured graphs, a thread that makes several ranks' calls
// outside one group (NCCL requires a group for that), and threads that
// group calls over several communicators differently (nextLaunchOf). Each can still stand in a shared queue in
// front of a peer's kernel (not seen; an order kept per GPU across
// communicators would end it).
#pragma once

#include <cstdint>
#include <span>

namespace hora::device {

enum class LaunchRule { None, Started, Unfinished };

// What a rank has launched under the rule.
struct LaunchCount {
  std::uint64_t kernels = 0;      // every kernel admitted: the numbers kernels store as they end
  std::uint64_t collectives = 0;  // ring kernels admitted: the same numbers on every rank
  bool lastWasCollective = false;
};

// What the next launch waits for.
struct LaunchWait {
  enum Kind { Nothing, OwnLastKernel, PeerCollective } kind = Nothing;
  int peer = -1;  // for PeerCollective: the index into peersStarted that lags
};

// `ownDone`: the number of this rank's last kernel that ended;
// `peersStarted`: for each other rank of this process on this GPU, the
// number of its last collective that started; `maxUnfinished` for
// LaunchRule::Unfinished.
LaunchWait launchWait(LaunchRule rule, std::uint64_t maxUnfinished, const LaunchCount& count, std::uint64_t ownDone,
                      std::span<const std::uint64_t> peersStarted);

// HORA_DEVICE_MAX_QUEUED, as the rule it selects: unset (-1), the rule
// above (Started); 0, None; N > 0, Unfinished with N (N > 1 brings the
// hazard back, as None does).
struct LaunchRuleChoice {
  LaunchRule rule = LaunchRule::Started;
  std::uint64_t maxUnfinished = 0;
};
LaunchRuleChoice launchRuleFromSetting(long long maxQueued);

// The rule of a group of ranks sharing a GPU in one process, alike on each
// of them, from each member's setting and whether it has a start word:
// their common setting's rule; Started only where every member has a word;
// one unfinished kernel where they lack words or disagree.
LaunchRuleChoice groupLaunchRule(std::span<const long long> settings, bool everyWord);

// One thread making the calls of several ranks at once: `nextCollective[i]`
// is the number of the first collective of rank i's next ring launch
// (kNoRingLaunch where its call has none left). Returns the index of the
// rank to launch next, the lowest number first (the first such rank on a
// tie), or nextCollective.size() when no ring launch is left; point-to-point
// kernels go after every ring launch of the group.
//
// Why no thread then waits forever for a launch: a launch beginning at
// collective f waits for each peer to start its kernel holding f - 1,
// which begins at or before f - 1. If a thread A stood at a launch of
// number f waiting for a thread B to launch such a kernel (first number
// at most f - 1) while B stood at a launch of number g waiting for A the
// same way, B would have chosen g before f - 1 (g <= f - 1) and A f before
// g - 1 (f <= g - 1), which cannot both hold; a longer cycle fails the
// same way. A point-to-point kernel ends its rank's part of the group and
// waits only for ring kernels of it, all launched before it. The argument
// orders each thread's launches by number within a group, and its groups
// one after the other: so it holds where threads group their calls alike
// (one thread per rank; one thread for every rank; threads whose groups
// cover the same communicators). Where they differ, a thread that groups
// calls of two communicators can stand at one's launch while another
// thread, which makes them in separate groups, stands at the other's.
inline constexpr std::uint64_t kNoRingLaunch = ~std::uint64_t{0};
std::size_t nextLaunchOf(std::span<const std::uint64_t> nextCollective);

}  // namespace hora::device
