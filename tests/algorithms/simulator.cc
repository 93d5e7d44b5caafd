#include "simulator.h"

#include <cstdint>
#include <optional>
#include <sstream>
#include <utility>

namespace hora::schedule_test {

namespace {

// Enough to locate a bug; more would only repeat its consequences.
constexpr std::size_t kMaxErrors = 12;

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finalizer
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Reduction-tree signatures: a leaf per rank; a binary reduction is
// commutative (a+b and b+a give the same bits) but not associative, so the
// pair is ordered before hashing and nesting is kept.
std::uint64_t leafShape(int rank) { return mix(0x1000 + static_cast<std::uint64_t>(rank)); }
std::uint64_t joinShapes(std::uint64_t a, std::uint64_t b) {
  if (a > b) std::swap(a, b);
  return mix(mix(a) ^ (b * 0x2545F4914F6CDD1Dull));
}

struct Message {
  std::size_t size;
  Tag tag;
};

// A queue that never moves its elements: receives advance `head`.
struct Queue {
  std::vector<Message> items;
  std::size_t head = 0;
  bool empty() const { return head == items.size(); }
};

// True when [offset, offset + size) lies inside a buffer of `limit`
// elements, without overflowing near 2^64.
bool inside(std::size_t offset, std::size_t size, std::size_t limit) {
  return offset <= limit && size <= limit - offset;
}

class Simulation {
 public:
  Simulation(const Layout& layout, const std::vector<std::vector<Step>>& recordings)
      : layout_(layout),
        queues_(static_cast<std::size_t>(layout.channels) * layout.nranks * layout.nranks) {
    outcome_.ranks.resize(layout.nranks);
    for (int rank = 0; rank < layout.nranks; ++rank)
      for (int channel = 0; channel < layout.channels; ++channel)
        processes_.push_back(
            {rank, channel, &recordings[static_cast<std::size_t>(rank) * layout.channels + channel]});
  }

  Outcome run() {
    // Round robin: each process runs until it needs a message not yet sent.
    for (;;) {
      bool progress = false, allDone = true;
      for (Process& p : processes_) {
        while (!stopped_ && p.pc < p.steps->size()) {
          const Step& step = (*p.steps)[p.pc];
          if (!ready(p, step)) break;
          execute(p, step);
          ++p.pc;
          progress = true;
        }
        allDone = allDone && p.pc == p.steps->size();
      }
      if (stopped_) return std::move(outcome_);
      if (allDone) break;
      if (!progress) {
        reportDeadlock();
        return std::move(outcome_);
      }
    }
    reportUnreceived();
    return std::move(outcome_);
  }

 private:
  struct Process {
    int rank;
    int channel;
    const std::vector<Step>* steps;
    std::size_t pc = 0;
  };

  Queue& queue(int channel, int from, int to) {
    return queues_[(static_cast<std::size_t>(channel) * layout_.nranks + from) * layout_.nranks + to];
  }

  void error(std::string text) {
    outcome_.errors.push_back(std::move(text));
    if (outcome_.errors.size() >= kMaxErrors) {
      outcome_.errors.push_back("(stopped after " + std::to_string(kMaxErrors) + " errors)");
      stopped_ = true;
    }
  }

  // "rank 2 channel 1 call 5 (recvReduceSend from 1 to 3, in 128, 64 elements)"
  std::string where(const Process& p, const Step& s) const {
    std::ostringstream text;
    text << "rank " << p.rank << " channel " << p.channel << " call " << p.pc << " ("
         << primitiveName(s.primitive);
    if (s.receives) text << " from " << s.from;
    if (!s.fanIn.empty()) {
      text << " over order {";
      for (std::size_t k = 0; k < s.fanIn.size(); ++k) text << (k ? "," : "") << s.fanIn[k];
      text << "} self " << s.fanInSelf;
    }
    if (s.sends) text << " to " << s.to;
    if (s.readsInput || !s.fanIn.empty()) text << ", in " << s.in;
    if (s.writesOutput) text << ", out " << s.out;
    text << ", " << s.size << " elements)";
    return text.str();
  }

  // A peer must be another rank of the collective; a step naming anything
  // else cannot be played, so the simulation stops there.
  bool checkPeer(const Process& p, const Step& s, int peer, const char* role) {
    if (peer >= 0 && peer < layout_.nranks && peer != p.rank) return true;
    error(where(p, s) + ": " + role + " rank " + std::to_string(peer) +
          (peer == p.rank ? " is the caller itself" : " is not a rank of the collective"));
    stopped_ = true;
    return false;
  }

  bool ready(const Process& p, const Step& s) {
    if (s.receives) {
      if (!checkPeer(p, s, s.from, "receives from")) return false;
      if (queue(p.channel, s.from, p.rank).empty()) return false;
    }
    if (s.sends) {
      if (!checkPeer(p, s, s.to, "sends to")) return false;
    }
    if (s.primitive == Primitive::RecvReduceCopyAll) {
      if (s.fanInSelf != p.rank) {
        error(where(p, s) + ": says it is rank " + std::to_string(s.fanInSelf));
        stopped_ = true;
        return false;
      }
      unsigned seen = 0;
      for (int r : s.fanIn) {
        if (r == p.rank) continue;
        if (!checkPeer(p, s, r, "fans in from")) return false;
        if (seen & (1u << r)) {
          error(where(p, s) + ": lists rank " + std::to_string(r) + " twice");
          stopped_ = true;
          return false;
        }
        seen |= 1u << r;
      }
      for (int r : s.fanIn)
        if (r != p.rank && queue(p.channel, r, p.rank).empty()) return false;
    }
    return true;
  }

  Tag receive(Process& p, const Step& s, int from) {
    Queue& q = queue(p.channel, from, p.rank);
    const std::size_t index = q.head++;
    const Message& m = q.items[index];
    outcome_.ranks[p.rank].events.push_back({false, from, p.channel, s.size, m.tag});
    if (m.size != s.size)
      error("size mismatch: " + where(p, s) + " receives " + std::to_string(s.size) +
            " elements where message " + std::to_string(index) + " from rank " +
            std::to_string(from) + " on channel " + std::to_string(p.channel) + " has " +
            std::to_string(m.size));
    return m.tag;
  }

  Tag input(const Process& p, const Step& s) {
    if (!inside(s.in, s.size, layout_.inputSize))
      error(where(p, s) + ": reads in[" + std::to_string(s.in) + ", " +
            std::to_string(s.in + s.size) + ") beyond the input of " +
            std::to_string(layout_.inputSize) + " elements");
    return Tag{s.in, static_cast<std::uint16_t>(1u << p.rank), s.preInput ? Stage::Pre : Stage::Raw,
               leafShape(p.rank)};
  }

  // acc (+) next, element by element: both must be pre()-multiplied
  // contributions of the same logical elements from disjoint sets of ranks.
  Tag reduce(const Process& p, const Step& s, const Tag& acc, const Tag& next) {
    auto describe = [](const Tag& t) {
      return "logical " + std::to_string(t.offset) + ".. of ranks " + ranksText(t.mask) + " (" +
             stageName(t.stage) + ")";
    };
    if (acc.stage != Stage::Pre || next.stage != Stage::Pre)
      error(where(p, s) + ": reduces data that is not a pre()-multiplied contribution: " +
            describe(acc) + " with " + describe(next));
    if (acc.offset != next.offset)
      error(where(p, s) + ": reduces different logical elements: " + describe(acc) + " with " +
            describe(next));
    if (acc.mask & next.mask)
      error(where(p, s) + ": adds the contribution of ranks " + ranksText(acc.mask & next.mask) +
            " twice: " + describe(acc) + " with " + describe(next));
    return Tag{acc.offset, static_cast<std::uint16_t>(acc.mask | next.mask), Stage::Pre,
               joinShapes(acc.shape, next.shape)};
  }

  void execute(Process& p, const Step& s) {
    ++outcome_.steps;
    std::optional<Tag> value;
    if (s.receives) value = receive(p, s, s.from);
    if (s.readsInput) {
      const Tag mine = input(p, s);
      value = value ? reduce(p, s, *value, mine) : mine;
    }
    // A fan-in reduces in the listed order, this rank's input at its place.
    for (int r : s.fanIn) {
      const Tag next = r == p.rank ? input(p, s) : receive(p, s, r);
      value = value ? reduce(p, s, *value, next) : next;
    }
    if (!value) {  // a fan-in over no ranks
      error(where(p, s) + ": has no data to write");
      return;
    }
    if (s.post) {
      if (value->stage != Stage::Pre)
        error(where(p, s) + ": applies post() to " + stageName(value->stage) + " data");
      value->stage = Stage::Final;
    }
    if (s.writesOutput) {
      if (!inside(s.out, s.size, layout_.outputSize))
        error(where(p, s) + ": writes out[" + std::to_string(s.out) + ", " +
              std::to_string(s.out + s.size) + ") beyond the output of " +
              std::to_string(layout_.outputSize) + " elements");
      else if (s.size > 0)
        outcome_.ranks[p.rank].writes.push_back({s.out, s.size, *value, p.channel});
    }
    if (s.sends) {
      queue(p.channel, p.rank, s.to).items.push_back({s.size, *value});
      outcome_.ranks[p.rank].events.push_back({true, s.to, p.channel, s.size, *value});
    }
  }

  void reportDeadlock() {
    for (const Process& p : processes_) {
      if (p.pc == p.steps->size()) continue;
      const Step& s = (*p.steps)[p.pc];
      std::string waits;
      if (s.receives) waits = "a message from rank " + std::to_string(s.from);
      for (int r : s.fanIn)
        if (r != p.rank && queue(p.channel, r, p.rank).empty())
          waits += (waits.empty() ? "a message from rank " : ", rank ") + std::to_string(r);
      error("deadlock: " + where(p, s) + " (of " + std::to_string(p.steps->size()) +
            " calls) waits for " + waits);
      if (stopped_) return;
    }
  }

  void reportUnreceived() {
    for (int channel = 0; channel < layout_.channels; ++channel)
      for (int from = 0; from < layout_.nranks; ++from)
        for (int to = 0; to < layout_.nranks; ++to) {
          const Queue& q = queue(channel, from, to);
          if (q.empty() || stopped_) continue;
          error("rank " + std::to_string(from) + " channel " + std::to_string(channel) + " sent " +
                std::to_string(q.items.size() - q.head) + " message(s) to rank " +
                std::to_string(to) + " that were never received (the first of " +
                std::to_string(q.items[q.head].size) + " elements)");
        }
  }

  Layout layout_;
  std::vector<Queue> queues_;
  std::vector<Process> processes_;
  Outcome outcome_;
  bool stopped_ = false;
};

}  // namespace

Outcome simulate(const Layout& layout, const std::vector<std::vector<Step>>& recordings) {
  if (layout.nranks < 1 || layout.nranks > 16 || layout.channels < 1 ||
      recordings.size() != static_cast<std::size_t>(layout.nranks) * layout.channels) {
    Outcome outcome;
    outcome.errors.push_back("layout: " + std::to_string(layout.nranks) + " ranks (1 to 16) and " +
                             std::to_string(layout.channels) + " channels with " +
                             std::to_string(recordings.size()) + " recordings");
    return outcome;
  }
  return Simulation(layout, recordings).run();
}

std::string ranksText(unsigned mask) {
  std::string text = "{";
  for (int r = 0; r < 32; ++r) {
    if (!(mask & (1u << r))) continue;
    if (text.size() > 1) text += ',';
    text += std::to_string(r);
  }
  text += '}';
  return text;
}

}  // namespace hora::schedule_test
