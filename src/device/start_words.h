// Where the ring kernels of a rank that shares its GPU with other ranks of
// its process record the number of their last collective that started,
// for those ranks to read before they launch (launch_order.h).
//
// The words come from one block of pinned, mapped host memory that the
// process keeps until it exits, not from the communicator's own memory: a
// rank of a program that destroyed one communicator while another rank of
// the process still calls on it then reads a word that stays mapped (given
// back, perhaps to another communicator later: the program is wrong
// either way, and the rank fails at its deadline or goes on), never freed
// memory.
#pragma once

#include <cstdint>

namespace hora::device {

struct StartWord {
  std::uint64_t* host = nullptr;    // null: none left (the caller falls back on its own kernels' ends)
  std::uint64_t* device = nullptr;  // the same word, as kernels on the current device address it
};

// A word set to 0, for the current CUDA device's kernels; none where the
// process has no word left or CUDA refused the memory. Thread-safe.
StartWord takeStartWord();
// Gives a word back (null: nothing). Thread-safe.
void returnStartWord(std::uint64_t* host);

}  // namespace hora::device
