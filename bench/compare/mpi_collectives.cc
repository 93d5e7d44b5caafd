// Times four MPI collectives (float) for comparison with hora-perf: the same
// collective names, command line and table, row for row.
//
//   mpirun -np 2 mpi_collectives <collective> [-b 16M] [-e 256M] [-f 2] [-n 20] [-w 5] [-c 1]
//
//   all_reduce      MPI_Allreduce (sum)
//   all_gather      MPI_Allgather
//   reduce_scatter  MPI_Reduce_scatter_block (sum)
//   broadcast       MPI_Bcast from rank 0
//
// The size column means what it means in hora-perf (and nccl-tests): the
// larger buffer of one rank, so the whole gathered output for all_gather and
// the whole input for reduce_scatter; busbw uses the same factors.
//
// Out of place and in place as MPI defines them: MPI_IN_PLACE for
// all_reduce, all_gather (each rank's piece already sits at its place in
// the output) and reduce_scatter (the whole input in the receive buffer,
// the result left at its start). MPI_Bcast has one buffer only, which is
// nccl's in-place broadcast; its out-of-place columns read N/A.
//
// Run without --mca options, Open MPI picks its own transports (shared
// memory between ranks of one host) and its own algorithms. Options choose
// them instead, e.g. TCP over loopback only:
//
//   mpirun -np 2 --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo
//          mpi_collectives all_reduce -b 16M -e 256M
//
// or shared memory with --mca btl self,vader. Forcing pml ob1 matters: it is
// the layer that uses the btl list; another pml (ucx, cm) would bypass it.
//
// Build: mpicxx -O2 -std=c++17 -DOMPI_SKIP_MPICXX mpi_collectives.cc
#include "bench_table.h"

#include <mpi.h>

#include <algorithm>
#include <limits>

namespace {

using bench::Collective;

template <typename Operation>
bench::Measurement time_operation(const bench::Options& options, int ranks,
                                  Operation&& operation) {
  for (int i = 0; i < options.warmup; ++i) operation();
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int i = 0; i < options.iterations; ++i) operation();
  double seconds = (MPI_Wtime() - start) / options.iterations;
  // The mean over ranks of each rank's own time per operation, as hora-perf
  // reports it by default.
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  bench::Measurement m;
  m.measured = true;
  m.seconds_per_op = seconds / ranks;
  return m;
}

// What each rank puts in, and what each rank must get out, element by
// element. Small whole numbers, so every sum is exact in float whatever
// order MPI adds in; they depend on the block (all_gather, reduce_scatter)
// or the index (broadcast), so data landing in the wrong place is caught.
float input_value(Collective collective, int rank, size_t index, size_t per_rank) {
  switch (collective) {
    case Collective::AllReduce:
    case Collective::AllGather: return bench::contribution(rank);
    // Block b of rank r holds (r+1)(b+1): the sum of block b over n ranks
    // is (b+1) n(n+1)/2.
    case Collective::ReduceScatter:
      return bench::contribution(rank) * static_cast<float>(index / per_rank + 1);
    case Collective::Broadcast: return static_cast<float>(index % 1021 + 1);
  }
  return 0.0f;
}

float expected_value(Collective collective, int rank, int ranks, size_t index, size_t per_rank) {
  switch (collective) {
    case Collective::AllReduce: return bench::expected_sum(ranks);
    case Collective::AllGather: return bench::contribution(static_cast<int>(index / per_rank));
    case Collective::ReduceScatter:
      return bench::expected_sum(ranks) * static_cast<float>(rank + 1);
    case Collective::Broadcast: return static_cast<float>(index % 1021 + 1);
  }
  return 0.0f;
}

// The one MPI call of each collective, out of place or in place. "data" is
// the buffer MPI_IN_PLACE works on; "send" and "recv" the out-of-place ones.
struct Buffers {
  std::vector<float> send, recv, data;
};

class CollectiveRun {
 public:
  CollectiveRun(Collective collective, const bench::CollectiveShape& shape, int rank, int ranks)
      : collective_(collective), shape_(shape), rank_(rank), ranks_(ranks) {
    buffers_.send.resize(shape.send_count);
    buffers_.recv.resize(shape.recv_count);
    // In place, the one buffer must hold the larger of the two arrays.
    buffers_.data.resize(std::max(shape.send_count, shape.recv_count));
  }

  void out_of_place() {
    const int count = static_cast<int>(shape_.count);
    float* send = buffers_.send.data();
    float* recv = buffers_.recv.data();
    switch (collective_) {
      case Collective::AllReduce:
        MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
      case Collective::AllGather:
        MPI_Allgather(send, count, MPI_FLOAT, recv, count, MPI_FLOAT, MPI_COMM_WORLD);
        break;
      case Collective::ReduceScatter:
        MPI_Reduce_scatter_block(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
      case Collective::Broadcast: break;  // No such form; never called.
    }
  }

  void in_place() {
    const int count = static_cast<int>(shape_.count);
    float* data = buffers_.data.data();
    switch (collective_) {
      case Collective::AllReduce:
        MPI_Allreduce(MPI_IN_PLACE, data, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
      case Collective::AllGather:
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, count, MPI_FLOAT, MPI_COMM_WORLD);
        break;
      case Collective::ReduceScatter:
        MPI_Reduce_scatter_block(MPI_IN_PLACE, data, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
      case Collective::Broadcast:
        MPI_Bcast(data, count, MPI_FLOAT, bench::root_of(collective_), MPI_COMM_WORLD);
        break;
    }
  }

  bool has_out_of_place() const { return collective_ != Collective::Broadcast; }

  // Fills the inputs for a checked call and poisons the outputs with NaN,
  // which equals nothing: an element MPI never writes counts as wrong.
  void fill_for_check(bool in_place) {
    const float poison = std::numeric_limits<float>::quiet_NaN();
    const size_t per_rank = per_rank_count();
    if (!in_place) {
      for (size_t i = 0; i < buffers_.send.size(); ++i) {
        buffers_.send[i] = send_value(i, per_rank);
      }
      std::fill(buffers_.recv.begin(), buffers_.recv.end(), poison);
      return;
    }
    std::vector<float>& data = buffers_.data;
    std::fill(data.begin(), data.end(), poison);
    switch (collective_) {
      case Collective::AllReduce:
      case Collective::ReduceScatter:
        for (size_t i = 0; i < data.size(); ++i) data[i] = send_value(i, per_rank);
        break;
      case Collective::AllGather: {
        // Only this rank's own piece, at its place in the output.
        const size_t first = static_cast<size_t>(rank_) * per_rank;
        for (size_t i = 0; i < per_rank; ++i) data[first + i] = send_value(i, per_rank);
        break;
      }
      case Collective::Broadcast:
        if (rank_ == bench::root_of(collective_)) {
          for (size_t i = 0; i < data.size(); ++i) data[i] = send_value(i, per_rank);
        }
        break;
    }
  }

  // Wrong elements of this rank's result after a call filled by fill_for_check.
  long count_wrong(bool in_place) const {
    const std::vector<float>& result = in_place ? buffers_.data : buffers_.recv;
    // An in-place reduce_scatter leaves its result at the buffer's start.
    const size_t result_count = shape_.recv_count;
    const size_t per_rank = per_rank_count();
    long wrong = 0;
    for (size_t i = 0; i < result_count; ++i) {
      wrong += !(result[i] == expected_value(collective_, rank_, ranks_, i, per_rank));
    }
    return wrong;
  }

  // Zeros while timing: repeated in-place sums of zeros cannot overflow,
  // and adding zeros costs what adding any other floats does.
  void fill_for_timing() {
    std::fill(buffers_.send.begin(), buffers_.send.end(), 0.0f);
    std::fill(buffers_.recv.begin(), buffers_.recv.end(), 0.0f);
    std::fill(buffers_.data.begin(), buffers_.data.end(), 0.0f);
  }

 private:
  size_t per_rank_count() const {
    return collective_ == Collective::AllGather || collective_ == Collective::ReduceScatter
               ? shape_.count
               : shape_.send_count;
  }

  float send_value(size_t index, size_t per_rank) const {
    return input_value(collective_, rank_, index, per_rank);
  }

  Collective collective_;
  bench::CollectiveShape shape_;
  int rank_;
  int ranks_;
  Buffers buffers_;
};

long wrong_over_all_ranks(long wrong) {
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  return wrong;
}

void measure(const bench::Options& options, Collective collective,
             const bench::CollectiveShape& shape, int rank, int ranks,
             bench::Measurement& out_of_place, bench::Measurement& in_place) {
  CollectiveRun run(collective, shape, rank, ranks);
  if (run.has_out_of_place()) {
    long wrong = -1;
    if (options.check) {
      run.fill_for_check(/*in_place=*/false);
      run.out_of_place();
      wrong = wrong_over_all_ranks(run.count_wrong(/*in_place=*/false));
    }
    run.fill_for_timing();
    out_of_place = time_operation(options, ranks, [&] { run.out_of_place(); });
    out_of_place.wrong = wrong;
  }
  long wrong = -1;
  if (options.check) {
    run.fill_for_check(/*in_place=*/true);
    run.in_place();
    wrong = wrong_over_all_ranks(run.count_wrong(/*in_place=*/true));
  }
  run.fill_for_timing();
  in_place = time_operation(options, ranks, [&] { run.in_place(); });
  in_place.wrong = wrong;
}

const char* mpi_function(Collective collective) {
  switch (collective) {
    case Collective::AllReduce: return "MPI_Allreduce";
    case Collective::AllGather: return "MPI_Allgather";
    case Collective::ReduceScatter: return "MPI_Reduce_scatter_block";
    case Collective::Broadcast: return "MPI_Bcast";
  }
  return "?";
}

constexpr const char* kCollectiveHelp =
    "\nThe first argument names the collective: all_reduce, all_gather, reduce_scatter\n"
    "or broadcast (MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block, MPI_Bcast).";

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);

  // The collective comes first, as in hora-perf; the options after it are
  // those of the other peer programs. Only rank 0 explains a wrong command line.
  const std::optional<Collective> collective =
      argc > 1 ? bench::parse_collective(argv[1]) : std::nullopt;
  if (!collective) {
    if (rank == 0) {
      const bool help = argc > 1 && (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help");
      if (!help) {
        std::fprintf(stderr, "%s: %s\n", argv[0],
                     argc > 1 ? ("unknown collective '" + std::string(argv[1]) + "'").c_str()
                              : "name a collective first");
      }
      bench::print_usage((std::string(argv[0]) + " <collective>").c_str(), kCollectiveHelp);
    }
    MPI_Finalize();
    return 2;
  }
  // parse_options reads flags from argv[1]; hand it the rest, behind a
  // name that says which collective its messages are about.
  std::string program = std::string(argv[0]) + " " + argv[1];
  argv[1] = program.data();
  const auto options = bench::parse_options(argc - 1, argv + 1, /*self_launched=*/false,
                                            rank == 0 ? kCollectiveHelp : "");
  if (!options) {
    MPI_Finalize();
    return 2;
  }
  if (ranks < 2) {
    if (rank == 0) std::fprintf(stderr, "%s: run it with at least 2 ranks (mpirun -np 2)\n", argv[0]);
    MPI_Finalize();
    return 2;
  }

  if (rank == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    const std::string first_line(version, std::find(version, version + length, ','));
    const std::string title = std::string(mpi_function(*collective)) + " as " +
                              bench::collective_name(*collective) + " (" + first_line + ")";
    bench::print_header(title.c_str(), ranks);
  }
  long total_wrong = 0;
  for (const size_t requested : bench::message_sizes(*options)) {
    const bench::CollectiveShape shape = bench::collective_shape(*collective, requested, ranks);
    if (shape.count == 0) continue;  // Too small to give every rank an element.
    bench::Measurement out_of_place, in_place;
    measure(*options, *collective, shape, rank, ranks, out_of_place, in_place);
    total_wrong += std::max(0L, out_of_place.wrong) + std::max(0L, in_place.wrong);
    if (rank == 0) bench::print_collective_row(*collective, shape, ranks, out_of_place, in_place);
  }
  if (rank == 0) {
    std::printf("# Out of bounds values : %ld %s\n", total_wrong, total_wrong == 0 ? "OK" : "FAILED");
  }
  MPI_Finalize();
  // As hora-perf: a wrong result is a failed run.
  return total_wrong == 0 ? 0 : 1;
}
