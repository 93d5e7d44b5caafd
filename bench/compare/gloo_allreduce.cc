// Times Gloo's ring all-reduce over TCP on the loopback interface, for
// comparison with hora-perf (same command line, same table).
//
// The program launches its own ranks: it forks -p processes (2 by default)
// that meet through a Gloo FileStore in a fresh temporary directory and
// connect a full mesh of TCP pairs bound to 127.0.0.1. Rank 0 prints.
//
// Gloo offers several ring all-reduces; -a picks one:
//   allreduce_ring  gloo::allreduce() with the RING algorithm: the newer
//                   entry point (the one PyTorch's Gloo backend calls),
//                   pipelined in segments of up to 1 MiB; supports
//                   out-of-place and in-place.
//   ring_chunked    gloo::AllreduceRingChunked: reduce-scatter then
//                   all-gather in 2n chunks, double buffered; in-place only.
//   ring            gloo::AllreduceRing: passes the whole buffer around the
//                   ring (n-1 steps of the full size); in-place only.
//
// Build: g++ -O2 -std=c++17 gloo_allreduce.cc -lgloo -pthread
#include "bench_table.h"

#include <gloo/allreduce.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>

namespace {

using Clock = std::chrono::steady_clock;
using ReduceFn = void (*)(void*, const void*, const void*, size_t);

// Generous: a 256 MiB all-reduce over loopback takes well under a second,
// but a lost peer must still end the run instead of hanging it.
constexpr std::chrono::seconds kTimeout{120};

void barrier(const std::shared_ptr<gloo::Context>& context) {
  gloo::BarrierOptions options(context);
  gloo::barrier(options);
}

double sum_over_ranks(const std::shared_ptr<gloo::Context>& context, double value) {
  gloo::AllreduceOptions options(context);
  options.setOutput(&value, 1);
  options.setReduceFunction(static_cast<ReduceFn>(&gloo::sum<double>));
  gloo::allreduce(options);
  return value;
}

bench::Measurement time_operation(const std::shared_ptr<gloo::Context>& context,
                                  const bench::Options& options,
                                  const std::function<void()>& operation) {
  for (int i = 0; i < options.warmup; ++i) operation();
  barrier(context);
  const auto start = Clock::now();
  for (int i = 0; i < options.iterations; ++i) operation();
  const std::chrono::duration<double> elapsed = Clock::now() - start;
  bench::Measurement m;
  m.measured = true;
  // The mean over ranks of each rank's own time per operation, as
  // nccl-tests reports it.
  m.seconds_per_op =
      sum_over_ranks(context, elapsed.count() / options.iterations) / context->size;
  return m;
}

// Runs one all-reduce on inputs of rank+1 and counts the wrong elements of
// the result on this rank; -1 when checking is off.
long check_once(const std::shared_ptr<gloo::Context>& context, const bench::Options& options,
                std::vector<float>& input, std::vector<float>& result,
                const std::function<void()>& operation) {
  if (!options.check) return -1;
  std::fill(input.begin(), input.end(), bench::contribution(context->rank));
  if (&result != &input) std::fill(result.begin(), result.end(), -1.0f);
  operation();
  const long wrong = bench::count_wrong(result.data(), result.size(), context->size);
  // Every rank's result matters: rank 0 prints the total over ranks.
  return static_cast<long>(sum_over_ranks(context, static_cast<double>(wrong)));
}

// Out-of-place and in-place rows for the newer gloo::allreduce() entry point.
void measure_allreduce_ring(const std::shared_ptr<gloo::Context>& context,
                            const bench::Options& options, size_t count,
                            bench::Measurement& out_of_place, bench::Measurement& in_place) {
  std::vector<float> input(count), output(count);
  const auto make = [&](bool in_place_op) {
    auto ar = std::make_shared<gloo::AllreduceOptions>(context);
    ar->setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    if (!in_place_op) ar->setInput(input.data(), count);
    ar->setOutput(in_place_op ? input.data() : output.data(), count);
    ar->setReduceFunction(static_cast<ReduceFn>(&gloo::sum<float>));
    ar->setTimeout(kTimeout);
    return ar;
  };
  const auto oop = make(false);
  const auto ip = make(true);
  const auto run_oop = [&] { gloo::allreduce(*oop); };
  const auto run_ip = [&] { gloo::allreduce(*ip); };

  const long oop_wrong = check_once(context, options, input, output, run_oop);
  std::fill(input.begin(), input.end(), bench::contribution(context->rank));
  out_of_place = time_operation(context, options, run_oop);
  out_of_place.wrong = oop_wrong;

  const long ip_wrong = check_once(context, options, input, input, run_ip);
  // Repeated in-place sums of zeros stay zero: no overflow to inf across
  // iterations, and floating-point adds of zeros cost what any others do.
  std::fill(input.begin(), input.end(), 0.0f);
  in_place = time_operation(context, options, run_ip);
  in_place.wrong = ip_wrong;
}

// In-place row for the classic algorithm objects (AllreduceRing and
// AllreduceRingChunked), which only reduce in place.
template <typename Algorithm>
void measure_classic(const std::shared_ptr<gloo::Context>& context,
                     const bench::Options& options, size_t count,
                     bench::Measurement& in_place) {
  std::vector<float> data(count);
  Algorithm algorithm(context, std::vector<float*>{data.data()}, static_cast<int>(count));
  const auto run = [&] { algorithm.run(); };
  const long wrong = check_once(context, options, data, data, run);
  std::fill(data.begin(), data.end(), 0.0f);
  in_place = time_operation(context, options, run);
  in_place.wrong = wrong;
}

int run_rank(int rank, const bench::Options& options, const std::string& store_dir) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";  // Loopback only: the comparison is TCP on one machine.
  attr.ai_family = AF_INET;
  auto device = gloo::transport::tcp::CreateDevice(attr);

  gloo::rendezvous::FileStore store(store_dir);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, options.processes);
  context->setTimeout(kTimeout);
  context->connectFullMesh(store, device);

  if (rank == 0) {
    const std::string title = "Gloo " + options.algorithm + " all-reduce, tcp over 127.0.0.1";
    bench::print_header(title.c_str(), options.processes);
  }
  for (const size_t bytes : bench::message_sizes(options)) {
    const size_t count = bytes / sizeof(float);
    bench::Measurement out_of_place, in_place;
    if (options.algorithm == "allreduce_ring") {
      measure_allreduce_ring(context, options, count, out_of_place, in_place);
    } else if (options.algorithm == "ring_chunked") {
      measure_classic<gloo::AllreduceRingChunked<float>>(context, options, count, in_place);
    } else {
      measure_classic<gloo::AllreduceRing<float>>(context, options, count, in_place);
    }
    if (rank == 0) bench::print_row(bytes, options.processes, out_of_place, in_place);
    barrier(context);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* extra_help =
      "\n          [-p processes (default 2)] [-a allreduce_ring|ring_chunked|ring]";
  auto parsed = bench::parse_options(argc, argv, /*self_launched=*/true, extra_help);
  if (!parsed) return 2;
  bench::Options options = *parsed;
  if (options.algorithm.empty()) options.algorithm = "allreduce_ring";
  if (options.algorithm != "allreduce_ring" && options.algorithm != "ring_chunked" &&
      options.algorithm != "ring") {
    std::fprintf(stderr, "%s: unknown algorithm '%s'\n", argv[0], options.algorithm.c_str());
    bench::print_usage(argv[0], extra_help);
    return 2;
  }

  // A fresh directory per run: FileStore keys from an earlier run would
  // make the ranks meet addresses that no longer listen.
  std::string store_dir = (std::filesystem::temp_directory_path() / "gloo-bench-XXXXXX").string();
  if (mkdtemp(store_dir.data()) == nullptr) {
    std::perror("gloo_allreduce: cannot create a rendezvous directory");
    return 1;
  }

  std::fflush(stdout);
  std::vector<pid_t> children;
  for (int rank = 0; rank < options.processes; ++rank) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("gloo_allreduce: fork failed");
      return 1;
    }
    if (pid == 0) {
      int status = 1;
      try {
        status = run_rank(rank, options, store_dir);
      } catch (const std::exception& error) {
        std::fprintf(stderr, "gloo_allreduce: rank %d failed: %s\n", rank, error.what());
      }
      std::fflush(stdout);
      _exit(status);
    }
    children.push_back(pid);
  }

  int failures = 0;
  for (const pid_t pid : children) {
    int status = 0;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failures;
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(store_dir, ignored);
  if (failures > 0) {
    std::fprintf(stderr, "gloo_allreduce: %d of %d ranks failed\n", failures, options.processes);
    return 1;
  }
  return 0;
}
