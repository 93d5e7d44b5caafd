// Times MPI_Allreduce (float, sum) for comparison with hora-perf: same
// command line, same table. The transport is chosen on the mpirun command
// line, e.g. TCP over loopback only:
//
//   mpirun --allow-run-as-root -np 2 --mca pml ob1 --mca btl tcp,self
//          --mca btl_tcp_if_include lo mpi_allreduce -b 16M -e 256M -f 2
//
// or shared memory with --mca btl self,vader. Forcing pml ob1 matters: it is
// the layer that uses the btl list; another pml (ucx, cm) would bypass it.
//
// Build: mpicxx -O2 -std=c++17 mpi_allreduce.cc
#include "bench_table.h"

#include <mpi.h>

#include <algorithm>

namespace {

template <typename Operation>
bench::Measurement time_operation(const bench::Options& options, int ranks,
                                  Operation&& operation) {
  for (int i = 0; i < options.warmup; ++i) operation();
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int i = 0; i < options.iterations; ++i) operation();
  double seconds = (MPI_Wtime() - start) / options.iterations;
  // The mean over ranks of each rank's own time per operation, as
  // nccl-tests reports it.
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  bench::Measurement m;
  m.measured = true;
  m.seconds_per_op = seconds / ranks;
  return m;
}

// Counts wrong elements over all ranks after one all-reduce of rank+1.
long total_wrong(const std::vector<float>& result, int ranks) {
  long wrong = bench::count_wrong(result.data(), result.size(), ranks);
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  return wrong;
}

void measure(const bench::Options& options, int rank, int ranks, size_t count,
             bench::Measurement& out_of_place, bench::Measurement& in_place) {
  std::vector<float> input(count), output(count);
  const int n = static_cast<int>(count);
  const auto run_oop = [&] {
    MPI_Allreduce(input.data(), output.data(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  };
  const auto run_ip = [&] {
    MPI_Allreduce(MPI_IN_PLACE, input.data(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  };

  std::fill(input.begin(), input.end(), bench::contribution(rank));
  long oop_wrong = -1;
  if (options.check) {
    std::fill(output.begin(), output.end(), -1.0f);
    run_oop();
    oop_wrong = total_wrong(output, ranks);
  }
  out_of_place = time_operation(options, ranks, run_oop);
  out_of_place.wrong = oop_wrong;

  long ip_wrong = -1;
  if (options.check) {
    std::fill(input.begin(), input.end(), bench::contribution(rank));
    run_ip();
    ip_wrong = total_wrong(input, ranks);
  }
  // Repeated in-place sums of zeros stay zero: no overflow to inf across
  // iterations, and adding zeros costs what adding any other floats does.
  std::fill(input.begin(), input.end(), 0.0f);
  in_place = time_operation(options, ranks, run_ip);
  in_place.wrong = ip_wrong;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);

  const auto options = bench::parse_options(argc, argv, /*self_launched=*/false);
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
    const std::string title = "MPI_Allreduce (" + first_line + ")";
    bench::print_header(title.c_str(), ranks);
  }
  for (const size_t bytes : bench::message_sizes(*options)) {
    bench::Measurement out_of_place, in_place;
    measure(*options, rank, ranks, bytes / sizeof(float), out_of_place, in_place);
    if (rank == 0) bench::print_row(bytes, ranks, out_of_place, in_place);
  }
  MPI_Finalize();
  return 0;
}
