// The API suites' names for the shared test helpers: ranks as forked
// processes (tests/support/child_process.h) and free ports.
#pragma once

#include "support/child_process.h"
#include "support/free_port.h"

namespace hora_api_test {

using hora::test_support::ChildExit;
using hora::test_support::ChildProcess;
using hora::test_support::freeLoopbackPort;
using hora::test_support::Reporter;
using hora::test_support::setEnvironment;

}  // namespace hora_api_test
