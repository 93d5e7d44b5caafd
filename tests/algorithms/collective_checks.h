// What each collective defines its outputs to be, checked against what a
// simulation of its schedule wrote (schedule_cases.h, simulator.h).
#pragma once

#include <string>
#include <vector>

#include "schedule_cases.h"
#include "simulator.h"

namespace hora::schedule_test {

// Everything wrong with the outcome of case c, empty when it is right:
//  - the simulation's own findings (deadlock, unmatched or mismatched
//    messages, reductions of the wrong elements or the same rank twice);
//  - on every rank, the output intervals written cover exactly the elements
//    the collective defines, none twice (so with several channels every
//    element is covered by exactly one channel), and each holds the right
//    logical elements, reduced over the right ranks, post()-finalized
//    exactly when it is a reduction;
//  - all-reduce: every rank reduced every element in the same order, so all
//    hold the same bits;
//  - each channel covers the same elements on every rank;
//  - the elements sent in all are what the algorithm needs (a ring
//    all-reduce sends 2(n-1) counts, a broadcast n-1, ...), no more.
std::vector<std::string> checkCase(const Case& c, const Outcome& outcome);

}  // namespace hora::schedule_test
