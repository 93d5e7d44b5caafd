// Programs run side by side: step i of each is issued inside one
// ncclGroupStart/End, so that collectives and point-to-point traffic of
// different programs share a group.
#pragma once

#include <vector>

#include "rank_program.h"

namespace hora_coll_test {

// All programs must have the same number of steps.
ProgramFactory groupedTogether(std::vector<ProgramFactory> programs);

}  // namespace hora_coll_test
