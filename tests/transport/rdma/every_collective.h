// Every collective of nccl.h on one rank of a communicator, each result
// compared with a reference computed here: what the RDMA transports' tests
// (the fake device, libfabric) run through them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "nccl.h"

namespace hora::transport::rdma::testing {

// Runs body(rank, comm) on one thread per rank over fresh communicators of
// `nranks` ranks in this process (ncclCommInitAll), then destroys them.
void onEachRank(int nranks, const std::function<void(int rank, ncclComm_t comm)>& body);

// Rank r's element i: small integers, so sums are exact in any order.
std::int32_t input(int rank, std::size_t i);

// All-reduce, reduce-scatter, all-gather, broadcast, reduce (root: the last
// rank), gather and scatter (root: rank 0), all-to-all and a send/recv
// ring, for each count; gtest failures name the rank, count and
// collective. Call from every rank's thread.
void checkEveryCollective(int rank, int nranks, ncclComm_t comm, const std::vector<std::size_t>& counts);

}  // namespace hora::transport::rdma::testing
