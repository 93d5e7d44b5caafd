// Shared pieces of the peer benchmarks in this folder (Gloo, MPI): the
// command line and the result table. Both follow the interface of
// nccl-tests so that hora-perf, Gloo and MPI print tables that one script
// can read column by column:
//
//   size  count  type  redop  root | time algbw busbw #wrong | (same, in-place)
//
// algbw is bytes / time. busbw rescales algbw so that it is comparable
// with the bandwidth of one link whatever the number of ranks: a ring
// all-reduce makes every rank send (and receive) 2(n-1)/n times the buffer,
// so busbw = algbw * 2(n-1)/n.
//
// Header-only on purpose: each peer program is built with one compiler
// call against a system package, without the rest of the project.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench {

struct Options {
  size_t min_bytes = 16u << 20;
  size_t max_bytes = 256u << 20;
  size_t step_factor = 2;
  int iterations = 20;
  int warmup = 5;
  bool check = true;
  // Only for programs that launch their own ranks and offer several
  // algorithms (-p, -a); MPI takes both from mpirun and has one entry point.
  int processes = 2;
  std::string algorithm;
};

// Parses "16M", "8", "1G", "64K" (powers of two, as nccl-tests does).
inline size_t parse_size(const std::string& text) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str()) {
    throw std::invalid_argument("size '" + text + "' is not a number");
  }
  const std::string suffix(end);
  if (suffix.empty()) return value;
  if (suffix == "K" || suffix == "k") return value << 10;
  if (suffix == "M" || suffix == "m") return value << 20;
  if (suffix == "G" || suffix == "g") return value << 30;
  throw std::invalid_argument("size '" + text + "' has an unknown suffix (use K, M or G)");
}

inline void print_usage(const char* program, const char* extra) {
  std::fprintf(stderr,
               "usage: %s [-b minbytes] [-e maxbytes] [-f factor] [-n iters] [-w warmup]\n"
               "          [-c 0|1] [-d float] [-o sum]%s\n"
               "Times an all-reduce of float sums for sizes minbytes..maxbytes, multiplying\n"
               "by factor each step, and prints a table in the format of nccl-tests.\n",
               program, extra);
}

// Returns std::nullopt (after printing why) when the command line is wrong.
// extra_help documents -p and -a for the programs that accept them.
inline std::optional<Options> parse_options(int argc, char** argv, bool self_launched,
                                            const char* extra_help = "") {
  Options options;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string flag = argv[i];
      if (flag == "-h" || flag == "--help") {
        print_usage(argv[0], extra_help);
        return std::nullopt;
      }
      if (i + 1 >= argc) throw std::invalid_argument("option " + flag + " needs a value");
      const std::string value = argv[++i];
      if (flag == "-b") {
        options.min_bytes = parse_size(value);
      } else if (flag == "-e") {
        options.max_bytes = parse_size(value);
      } else if (flag == "-f") {
        options.step_factor = parse_size(value);
      } else if (flag == "-n") {
        options.iterations = std::stoi(value);
      } else if (flag == "-w") {
        options.warmup = std::stoi(value);
      } else if (flag == "-c") {
        options.check = std::stoi(value) != 0;
      } else if (flag == "-d") {
        if (value != "float") throw std::invalid_argument("only -d float is measured here");
      } else if (flag == "-o") {
        if (value != "sum") throw std::invalid_argument("only -o sum is measured here");
      } else if (flag == "-a" && self_launched) {
        options.algorithm = value;
      } else if (flag == "-p" && self_launched) {
        options.processes = std::stoi(value);
      } else {
        throw std::invalid_argument("unknown option " + flag);
      }
    }
    if (options.step_factor < 2) throw std::invalid_argument("-f must be at least 2");
    if (options.processes < 2) throw std::invalid_argument("-p must be at least 2");
    if (options.iterations < 1) throw std::invalid_argument("-n must be at least 1");
    if (options.min_bytes < sizeof(float) || options.min_bytes > options.max_bytes) {
      throw std::invalid_argument("need 4 <= minbytes <= maxbytes");
    }
    // Both peers take the element count as an int.
    if (options.max_bytes / sizeof(float) > static_cast<size_t>(INT_MAX)) {
      throw std::invalid_argument("maxbytes must stay below 8G (the peers count elements in int)");
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: %s\n", argv[0], error.what());
    print_usage(argv[0], extra_help);
    return std::nullopt;
  }
  return options;
}

inline std::vector<size_t> message_sizes(const Options& options) {
  std::vector<size_t> sizes;
  for (size_t bytes = options.min_bytes; bytes <= options.max_bytes;
       bytes *= options.step_factor) {
    sizes.push_back(bytes / sizeof(float) * sizeof(float));
  }
  return sizes;
}

// One timed variant (out-of-place or in-place) of one message size.
struct Measurement {
  bool measured = false;  // false: this variant does not exist for the peer.
  double seconds_per_op = 0;
  long wrong = -1;  // -1: not checked.
};

inline void print_header(const char* title, int ranks) {
  std::printf("# %s, %d ranks\n", title, ranks);
  std::printf("#%51s%-38s%s\n", "", "  out-of-place", "  in-place");
  std::printf("#%11s  %12s  %8s  %6s  %6s  %10s  %7s  %7s  %6s  %10s  %7s  %7s  %6s\n",
              "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
              "time", "algbw", "busbw", "#wrong");
  std::printf("#%11s  %12s  %8s  %6s  %6s  %10s  %7s  %7s  %6s  %10s  %7s  %7s  %6s\n", "(B)",
              "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
              "(GB/s)", "");
}

// The time, algbw, busbw and #wrong columns of one variant. busbw_factor
// turns algbw into busbw; it depends on the collective (bus_factor below).
inline void print_measurement(size_t bytes, double busbw_factor, const Measurement& m) {
  if (!m.measured) {
    std::printf("  %10s  %7s  %7s  %6s", "N/A", "N/A", "N/A", "N/A");
    return;
  }
  const double algbw = bytes / m.seconds_per_op / 1e9;
  char wrong[24];
  if (m.wrong < 0) {
    std::snprintf(wrong, sizeof wrong, "N/A");
  } else {
    std::snprintf(wrong, sizeof wrong, "%ld", m.wrong);
  }
  std::printf("  %10.2f  %7.3f  %7.3f  %6s", m.seconds_per_op * 1e6, algbw, algbw * busbw_factor,
              wrong);
}

// Every rank contributes rank+1 in every element, so every element of a
// correct sum is n(n+1)/2: small integers, exact in float.
inline float contribution(int rank) { return static_cast<float>(rank + 1); }
inline float expected_sum(int ranks) { return ranks * (ranks + 1) / 2.0f; }

inline long count_wrong(const float* data, size_t count, int ranks) {
  const float expected = expected_sum(ranks);
  long wrong = 0;
  for (size_t i = 0; i < count; ++i) wrong += data[i] != expected;
  return wrong;
}

// --- Several collectives --------------------------------------------------
// mpi_collectives times four collectives; gloo_allreduce prints its
// all-reduce rows through the same code. Everything below mirrors hora-perf,
// so that its tables and theirs line up row by row: the same size column,
// count column, redop, root and busbw.

enum class Collective { AllReduce, AllGather, ReduceScatter, Broadcast };

inline const char* collective_name(Collective collective) {
  switch (collective) {
    case Collective::AllReduce: return "all_reduce";
    case Collective::AllGather: return "all_gather";
    case Collective::ReduceScatter: return "reduce_scatter";
    case Collective::Broadcast: return "broadcast";
  }
  return "unknown";
}

inline std::optional<Collective> parse_collective(const std::string& name) {
  for (const Collective collective : {Collective::AllReduce, Collective::AllGather,
                                      Collective::ReduceScatter, Collective::Broadcast}) {
    if (name == collective_name(collective)) return collective;
  }
  return std::nullopt;
}

// nccl-tests' factors: all-reduce moves every element in (reduce) and out
// (distribute) over n links; all-gather and reduce-scatter do one of those
// halves, and their size is the whole array, of which each rank's own 1/n
// never crosses a link; a broadcast sends all data out of the root's one link.
inline double bus_factor(Collective collective, int ranks) {
  switch (collective) {
    case Collective::AllReduce: return 2.0 * (ranks - 1) / ranks;
    case Collective::AllGather:
    case Collective::ReduceScatter: return static_cast<double>(ranks - 1) / ranks;
    case Collective::Broadcast: return 1.0;
  }
  return 0.0;
}

// Element counts of one message size. bytes is what the size column shows:
// for all-gather the whole output, for reduce-scatter the whole input, so
// both are rounded down to a multiple of n elements (0 when the size is too
// small to give every rank an element; such a size is left out).
struct CollectiveShape {
  size_t bytes = 0;        // the size column
  size_t count = 0;        // the count column: the count argument of the call
  size_t send_count = 0;   // elements in each rank's send buffer
  size_t recv_count = 0;   // elements in each rank's receive buffer
};

inline CollectiveShape collective_shape(Collective collective, size_t requested_bytes, int ranks) {
  const size_t count = requested_bytes / sizeof(float);
  // Each rank's piece a multiple of 16 bytes, as hora-perf and nccl-tests cut it.
  constexpr size_t floats_per_16_bytes = 16 / sizeof(float);
  const size_t per_rank = count / static_cast<size_t>(ranks) / floats_per_16_bytes * floats_per_16_bytes;
  const size_t whole = per_rank * static_cast<size_t>(ranks);
  switch (collective) {
    case Collective::AllReduce:
    case Collective::Broadcast: return {count * sizeof(float), count, count, count};
    case Collective::AllGather: return {whole * sizeof(float), per_rank, per_rank, whole};
    case Collective::ReduceScatter: return {whole * sizeof(float), per_rank, whole, per_rank};
  }
  return {};
}

inline const char* redop_name(Collective collective) {
  return collective == Collective::AllReduce || collective == Collective::ReduceScatter ? "sum"
                                                                                        : "none";
}

// Broadcast's root (always rank 0 here); -1 for collectives without one.
inline int root_of(Collective collective) { return collective == Collective::Broadcast ? 0 : -1; }

inline void print_collective_row(Collective collective, const CollectiveShape& shape, int ranks,
                                 const Measurement& out_of_place, const Measurement& in_place) {
  std::printf(" %11zu  %12zu  %8s  %6s  %6d", shape.bytes, shape.count, "float",
              redop_name(collective), root_of(collective));
  print_measurement(shape.bytes, bus_factor(collective, ranks), out_of_place);
  print_measurement(shape.bytes, bus_factor(collective, ranks), in_place);
  std::printf("\n");
  std::fflush(stdout);
}

// One row of an all-reduce table, for the programs that time only that
// (gloo_allreduce); bytes is one of message_sizes().
inline void print_row(size_t bytes, int ranks, const Measurement& out_of_place,
                      const Measurement& in_place) {
  print_collective_row(Collective::AllReduce,
                       collective_shape(Collective::AllReduce, bytes, ranks), ranks,
                       out_of_place, in_place);
}

}  // namespace bench
