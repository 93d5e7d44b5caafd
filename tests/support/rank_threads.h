// Ranks as threads of the test process: a blocking collective returns only
// when every rank called it, so each rank needs a thread of its own.
#pragma once

#include <functional>

namespace hora::test_support {

// Runs body(rank) for rank in [0, ranks), each on its own thread, and returns
// when all have ended. If bodies threw, rethrows the lowest rank's exception
// then (an exception escaping a thread would end the whole test program).
void onEachRank(int ranks, const std::function<void(int rank)>& body);

}  // namespace hora::test_support
