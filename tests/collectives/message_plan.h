// Point-to-point traffic as data: a step is a list of messages, each rank
// issues its part of every message of the step (ncclSend where it is the
// sender, ncclRecv where it is the receiver, in list order, so messages
// between one pair are matched in that order), and checks what arrived.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"
#include "rank_program.h"

namespace hora_coll_test {

struct Message {
  int from = 0;
  int to = 0;
  ncclDataType_t type = ncclFloat32;
  std::size_t count = 0;
  bool unaligned = false;
  std::uint64_t seed = 0;  // the content: movedInputBits(type, seed, from, i)
  std::string describe() const;
};

struct MessageStep {
  std::vector<Message> messages;
  // Inside ncclGroupStart/End (required whenever a rank both sends and
  // receives); false: each call alone, which suits one message per step.
  bool grouped = true;
};

ProgramFactory messagesProgram(std::vector<MessageStep> steps);

// Plans. Types and alignments vary from message to message.
// Every rank sends to rank + shift (mod n) and receives from rank - shift,
// for every shift 0..n-1 (0: to itself) and every count given.
std::vector<MessageStep> ringShiftSteps(int nranks, const std::vector<std::size_t>& counts,
                                        std::uint64_t seed);
// One message per step, alone (no group), for every ordered pair of ranks.
std::vector<MessageStep> allPairsSteps(int nranks, std::size_t count, std::uint64_t seed);
// One group in which every rank sends to every rank (itself included) a
// count that depends on the pair: an all-to-all with uneven blocks.
MessageStep unevenAllToAllStep(int nranks, std::uint64_t seed);
// Several messages between the same pairs (both directions, and to self),
// of different types and counts, which must be matched in issue order.
MessageStep orderedMessagesStep(int nranks, std::uint64_t seed);

}  // namespace hora_coll_test
