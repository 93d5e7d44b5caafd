// Primitives that move no bytes: each call of a schedule is recorded as a
// Step, so a schedule can be run for every rank and channel of a collective
// in one process, and what it would have moved checked symbolically (see
// simulator.h). Nothing is allocated per element, so counts beyond 2^32
// elements cost no more than small ones with the same number of calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hora::schedule_test {

// How far along the reduction a run of elements is. Each rank's input enters
// a reduction through pre() once (PreMulSum's scaling) and leaves it through
// post() once (the division of integer averages), so:
//   Raw   the input as is (copies: all-gather, broadcast);
//   Pre   pre()-multiplied contributions, possibly several reduced together;
//   Final post() applied: a finished reduction, to be copied, never reduced.
enum class Stage : std::uint8_t { Raw, Pre, Final };
const char* stageName(Stage stage);

// What a contiguous run of elements holds: element k of the run is logical
// element offset + k (an index into the inputs, the same on every rank) to
// which the ranks in `mask` have contributed. `shape` names the tree of
// binary reductions that produced it (commutative, not associative, like
// floating-point addition), so two ranks hold the same bits exactly when
// their shapes agree.
struct Tag {
  std::uint64_t offset = 0;
  std::uint16_t mask = 0;  // bit r: rank r contributed (at most 16 ranks)
  Stage stage = Stage::Raw;
  std::uint64_t shape = 0;
};

enum class Primitive : std::uint8_t {
  Send,
  Recv,
  RecvReduceSend,
  RecvReduceCopy,
  RecvReduceCopySend,
  RecvCopySend,
  CopySend,
  LocalReduceCopy,
  LocalCopy,
  RecvReduceCopyAll,
};
const char* primitiveName(Primitive primitive);

// One primitive call in the generic shape every primitive of
// algorithms/primitives.h fits, applied in this order:
//   receive one message (receives, from `from`), or one from every other rank of a
//   fan-in (fanIn non-empty, this rank's own place taking pre(in[in..]));
//   read in[in..] (through pre() if preInput) and reduce it into what was
//   received, or take it alone when nothing was;
//   post() the result; write it to out[out..]; send it (sends) to `to`.
// Only where the data goes is recorded: the tags are computed when the
// steps of all ranks are played against each other (simulator.h).
struct Step {
  Primitive primitive = Primitive::Send;
  bool receives = false;
  bool sends = false;
  int from = -1;
  int to = -1;
  bool readsInput = false;
  bool preInput = false;
  bool post = false;
  bool writesOutput = false;
  std::size_t in = 0;
  std::size_t out = 0;
  std::size_t size = 0;
  std::vector<int> fanIn;  // recvReduceCopyAll's order
  int fanInSelf = -1;      // and the rank it says it is (checked against the caller)
};

// The primitives type the schedules are instantiated with. One recorder
// stands for one channel of one rank: channels run side by side over their
// own connections, so each is its own sequential program.
class RecordingPrimitives {
 public:
  RecordingPrimitives(int rank, int channel) : rank_(rank), channel_(channel) {}

  void send(int to, std::size_t inOffset, std::size_t count);
  void recv(int from, std::size_t outOffset, std::size_t count);
  void recvReduceSend(int from, int to, std::size_t inOffset, std::size_t count);
  void recvReduceCopy(int from, std::size_t inOffset, std::size_t outOffset, std::size_t count);
  void recvReduceCopySend(int from, int to, std::size_t inOffset, std::size_t outOffset,
                          std::size_t count);
  void recvCopySend(int from, int to, std::size_t outOffset, std::size_t count);
  void copySend(int to, std::size_t inOffset, std::size_t outOffset, std::size_t count);
  void localReduceCopy(std::size_t inOffset, std::size_t outOffset, std::size_t count);
  void localCopy(std::size_t inOffset, std::size_t outOffset, std::size_t count);
  void recvReduceCopyAll(const int* order, int nranks, int self, std::size_t inOffset,
                         std::size_t outOffset, std::size_t count);

  int rank() const { return rank_; }
  int channel() const { return channel_; }
  const std::vector<Step>& steps() const { return steps_; }
  std::vector<Step> takeSteps() { return std::move(steps_); }

 private:
  Step& add(Primitive primitive, std::size_t count);

  int rank_;
  int channel_;
  std::vector<Step> steps_;
};

}  // namespace hora::schedule_test
