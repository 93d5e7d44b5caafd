// The text hora-perf prints, laid out like nccl-tests' so that scripts which
// read nccl-tests output read hora-perf's too.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "options.h"

namespace hora::perf {

// "# nThread 1 nGpus 1 minBytes 8 maxBytes ... validation: 1 graph: 0 unalign: 0",
// and the line that says what -z does, if it is on.
std::string optionsLine(const Options& options);
// The name nccl-tests' program for the collective has ("all_reduce_perf"),
// which its first and last lines name.
std::string programName(const Options& options);

// "#  Rank  0 Group  0 Pid   1234 on   hostname device  host", or with
// a GPU, as nccl-tests: "... device  0 [0000:19:00] NVIDIA H100".
// `device` is -1 for host memory; `deviceName` then goes unused.
std::string rankLine(int rank, long pid, const std::string& host, int device = -1,
                     const std::string& deviceName = "");

// The three header lines of the table; with sweeps > 1, the spread columns
// (spreadColumns) follow the in-place block.
std::string tableHeader(int sweeps = 1);

// The columns that describe one row: size, count, type, redop, root.
// `redop` is "none" and root -1 where they do not apply.
std::string rowPrefix(std::size_t bytes, std::size_t count, const char* typeName, const char* redopName,
                      int root);

// One out-of-place or in-place result.
struct PlaceResult {
  double seconds = 0;              // per iteration
  double algbw = 0;                // GB/s
  double busbw = 0;                // GB/s
  std::optional<long long> wrong;  // empty: not checked (printed N/A)
  long long failedChecks = 0;      // threads whose check found a wrong element
};

// time, algbw, busbw and #wrong of one result.
std::string placeColumns(const PlaceResult& result);

// The least and greatest time of each place over the sweeps (-s).
struct PlaceSpread {
  double minSeconds = 0;
  double maxSeconds = 0;
};
std::string spreadColumns(const PlaceSpread& outOfPlace, const PlaceSpread& inPlace);

// Microseconds in nccl-tests' 7 characters: two decimals while they fit,
// then fewer (123.45, 12345.6, 1234567).
std::string formatMicroseconds(double microseconds);

// "# Out of bounds values : 0 OK" and "# Avg bus bandwidth    : X ".
// As in nccl-tests the first counts checks, not elements: one for each
// thread whose check of a size and place found a wrong element.
std::string summaryLines(long long failedChecks, double averageBusbw,
                         std::optional<double> minBusbw = std::nullopt);

// Whether an average bus bandwidth meets NCCL_TESTS_MIN_BW (nccl-tests'
// rule: at least 0.9 of it). Always where no minimum is set.
bool meetsMinBusbw(double averageBusbw, std::optional<double> minBusbw);

}  // namespace hora::perf
