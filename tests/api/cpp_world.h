// Ranks as threads of this process, through hora's C++ API: every rank's
// Communicator comes from fromInitMethod, created concurrently (init is
// collective), and onEachRank runs one function per rank on its own thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hora/communicator.h"
#include "support/rank_threads.h"

namespace hora_api_test {

using World = std::vector<std::unique_ptr<hora::Communicator>>;

// Creates `size` communicators with fromInitMethod(initMethod, rank, size);
// rethrows the first rank's error, if any.
World makeWorld(const std::string& initMethod, int size, const hora::CommunicatorOptions& options = {});

// "tcp://127.0.0.1:<a free port>".
std::string freeTcpInitMethod();

// Runs body(rank) on one thread per rank and joins them.
using hora::test_support::onEachRank;

// Waits for `work` up to `timeout` polling test(), so that a hang fails the
// test instead of blocking it; then returns its error (null on success).
std::exception_ptr finishWithin(hora::Work& work, std::chrono::milliseconds timeout);

}  // namespace hora_api_test
