// How fast two CPUs of this machine hand data to each other, with nothing
// but libc and threads: the ceiling under every collective through shared
// memory, where one rank's core writes a buffer and another rank's core
// reads it.
//
// Why it is measured next to the collectives: on a virtual machine the
// host decides where the guest's vCPUs really run. It may place two vCPUs
// on neighbouring cores one minute and far apart (another socket, another
// cache) the next, and keep them there for tens of seconds. In the far
// state a cache line takes several times longer to cross from one vCPU to
// the other, and a copy from one to the other runs several times slower
// (on a 2-vCPU KVM guest, for one: about 60 ns against 260 ns, and 15-30
// GB/s against 2-4 GB/s), and every shared-memory collective slows down
// with it, whichever library runs it. Measuring this state right
// before each launch lets the reader of a comparison tell a slow machine
// from a slow library.
//
// Two threads, each pinned to its own CPU, run:
//
//  latency  a cache-line ping-pong: one thread writes a counter, the other
//           waits to see it and writes the next value back, and so on.
//           One-way latency = time / (2 x round trips): the time for one
//           write to become visible on the other CPU. Median of the
//           repeats.
//  copy     a producer/consumer copy through a ring of blocks, as a
//           shared-memory transport moves data: the producer memcpy's its
//           source into a free block of the ring and publishes it, the
//           consumer memcpy's each published block into its destination
//           and frees it. GB/s = bytes moved / time from the producer's
//           start to the consumer's end. Median of the repeats.
//
// The last line sums it up for scripts, in the style of mem_bandwidth's:
//   # core-to-core: cpus A,B, latency X ns, copy Y GB/s
// (the medians). On an idle machine it takes under half a second
// in either state.
//
// Usage: core_to_core [-a cpu] [-b cpu] [-r repeats (5)] [-n round trips (20000)]
//                     [-s bytes moved (64M)] [-k block bytes (256K)] [-d ring blocks (8)]
//   -a and -b choose the two CPUs (default: the first two this process may
//   run on, from its affinity mask, so taskset and cgroup limits hold).
// Build: g++ -O2 -std=c++17 core_to_core.cc -pthread
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_table.h"

namespace {

using Clock = std::chrono::steady_clock;

// Each shared counter owns a whole cache line, so that the only traffic
// between the CPUs is the one being measured (128 bytes: some CPUs fetch
// lines in adjacent pairs).
struct alignas(128) Line {
  std::atomic<uint64_t> value{0};
};

struct Options {
  int cpu_a = -1, cpu_b = -1;  // -1: from the affinity mask
  int repeats = 5;
  long round_trips = 20000;
  size_t bytes = size_t{64} << 20;
  size_t block = size_t{256} << 10;
  size_t depth = 8;
};

// The CPUs this process may run on, in increasing order.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    throw std::runtime_error("sched_getaffinity failed");
  }
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
    throw std::runtime_error("cannot pin a thread to CPU " + std::to_string(cpu));
  }
}

// A failure in one thread (it could not be pinned, say) must not leave the
// other spinning for ever: every wait gives up once this is set.
std::atomic<bool> abandoned{false};

// Runs first() pinned to cpu_a and second() pinned to cpu_b at the same
// time, and rethrows what either threw.
template <typename First, typename Second>
void on_two_cpus(int cpu_a, int cpu_b, First first, Second second) {
  std::exception_ptr error_a, error_b;
  auto side = [](int cpu, auto& work, std::exception_ptr& error) {
    try {
      pin_to(cpu);
      work();
    } catch (...) {
      error = std::current_exception();
      abandoned = true;
    }
  };
  std::thread a([&] { side(cpu_a, first, error_a); });
  std::thread b([&] { side(cpu_b, second, error_b); });
  a.join();
  b.join();
  if (error_a) std::rethrow_exception(error_a);
  if (error_b) std::rethrow_exception(error_b);
}

template <typename Ready>
void spin_until(Ready ready) {
  while (!ready()) {
    if (abandoned.load(std::memory_order_relaxed)) {
      throw std::runtime_error("the other thread failed");
    }
  }
}

// Both threads leave together: each says it is ready, then waits for the other.
void meet(Line& arrivals, uint64_t generation) {
  arrivals.value.fetch_add(1, std::memory_order_acq_rel);
  spin_until([&] { return arrivals.value.load(std::memory_order_acquire) >= 2 * generation; });
}

// One-way latency in ns of each repeat. No pause instruction in the
// loops: it would add its own delay to every handoff.
std::vector<double> ping_pong(const Options& options) {
  Line ball, arrivals;
  std::vector<double> samples;
  const long warmup = options.round_trips / 10 + 1;
  auto serve = [&](bool first) {
    uint64_t count = 0;  // the value each side last wrote or saw
    for (int r = 0; r <= options.repeats; ++r) {  // repeat 0 warms up
      const long trips = r == 0 ? warmup : options.round_trips;
      meet(arrivals, static_cast<uint64_t>(r) + 1);
      const auto start = Clock::now();
      for (long i = 0; i < trips; ++i) {
        if (first) {
          ball.value.store(++count, std::memory_order_release);
          ++count;
          spin_until([&] { return ball.value.load(std::memory_order_acquire) == count; });
        } else {
          ++count;
          spin_until([&] { return ball.value.load(std::memory_order_acquire) == count; });
          ball.value.store(++count, std::memory_order_release);
        }
      }
      if (first && r > 0) {
        const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
        samples.push_back(ns / (2.0 * static_cast<double>(trips)));
      }
    }
  };
  on_two_cpus(options.cpu_a, options.cpu_b, [&] { serve(true); }, [&] { serve(false); });
  return samples;
}

// GB/s moved through the ring in each repeat.
std::vector<double> ring_copy(const Options& options) {
  const size_t blocks = options.bytes / options.block;
  const size_t bytes = blocks * options.block;
  // The ring and the two sides' buffers; each side writes its own buffer
  // once before timing, so that its pages are mapped (and, on a NUMA
  // machine, placed near the CPU that uses them).
  std::unique_ptr<char[]> ring(new char[options.depth * options.block]);
  std::unique_ptr<char[]> source(new char[bytes]), target(new char[bytes]);
  Line produced, consumed, arrivals;
  std::vector<Clock::time_point> starts(static_cast<size_t>(options.repeats)),
      ends(static_cast<size_t>(options.repeats));

  auto producer = [&] {
    for (size_t i = 0; i < bytes; ++i) source[i] = static_cast<char>(i * 7 + i / 4096);
    std::memset(ring.get(), 0, options.depth * options.block);
    uint64_t sent = 0;
    for (int r = 0; r < options.repeats; ++r) {
      meet(arrivals, static_cast<uint64_t>(r) + 1);
      starts[static_cast<size_t>(r)] = Clock::now();
      for (size_t b = 0; b < blocks; ++b, ++sent) {
        spin_until(
            [&] { return sent - consumed.value.load(std::memory_order_acquire) < options.depth; });
        std::memcpy(ring.get() + (sent % options.depth) * options.block,
                    source.get() + b * options.block, options.block);
        produced.value.store(sent + 1, std::memory_order_release);
      }
    }
  };
  auto consumer = [&] {
    std::memset(target.get(), 0, bytes);
    uint64_t received = 0;
    for (int r = 0; r < options.repeats; ++r) {
      meet(arrivals, static_cast<uint64_t>(r) + 1);
      for (size_t b = 0; b < blocks; ++b, ++received) {
        spin_until([&] { return produced.value.load(std::memory_order_acquire) > received; });
        std::memcpy(target.get() + b * options.block,
                    ring.get() + (received % options.depth) * options.block, options.block);
        consumed.value.store(received + 1, std::memory_order_release);
      }
      ends[static_cast<size_t>(r)] = Clock::now();
    }
  };
  on_two_cpus(options.cpu_a, options.cpu_b, producer, consumer);
  // Checking the result keeps the copies observable, and proves they were made.
  if (std::memcmp(source.get(), target.get(), bytes) != 0) {
    throw std::runtime_error("the data that came out of the ring differs from what went in");
  }
  std::vector<double> samples;
  for (size_t r = 0; r < starts.size(); ++r) {
    const double seconds = std::chrono::duration<double>(ends[r] - starts[r]).count();
    samples.push_back(static_cast<double>(bytes) / seconds / 1e9);
  }
  return samples;
}

double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  return n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
}

// "#   <label>: each repeat (median m, min a, max b)" with <decimals> digits.
void print_samples(const char* label, const std::vector<double>& samples, int decimals) {
  std::printf("#   %s:", label);
  for (const double sample : samples) std::printf(" %.*f", decimals, sample);
  const auto [low, high] = std::minmax_element(samples.begin(), samples.end());
  std::printf("  (median %.*f, min %.*f, max %.*f)\n", decimals, median(samples), decimals, *low,
              decimals, *high);
}

const char kUsage[] =
    "usage: %s [-a cpu] [-b cpu] [-r repeats (5)] [-n round trips (20000)]\n"
    "          [-s bytes moved (64M)] [-k block bytes (256K)] [-d ring blocks (8)]\n";

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("option " + flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "-a") {
      options.cpu_a = std::stoi(value);
    } else if (flag == "-b") {
      options.cpu_b = std::stoi(value);
    } else if (flag == "-r") {
      options.repeats = std::stoi(value);
    } else if (flag == "-n") {
      options.round_trips = std::stol(value);
    } else if (flag == "-s") {
      options.bytes = bench::parse_size(value);
    } else if (flag == "-k") {
      options.block = bench::parse_size(value);
    } else if (flag == "-d") {
      options.depth = std::stoul(value);
    } else {
      throw std::invalid_argument("unknown option " + flag);
    }
  }
  if (options.repeats < 1) throw std::invalid_argument("-r must be at least 1");
  if (options.round_trips < 1) throw std::invalid_argument("-n must be at least 1");
  if (options.block < 64) throw std::invalid_argument("-k must be at least 64 bytes");
  if (options.depth < 1) throw std::invalid_argument("-d must be at least 1");
  if (options.bytes < options.block) {
    throw std::invalid_argument("-s must be at least one block (-k)");
  }

  const std::vector<int> cpus = allowed_cpus();
  auto allowed = [&](int cpu) { return std::find(cpus.begin(), cpus.end(), cpu) != cpus.end(); };
  for (const int cpu : {options.cpu_a, options.cpu_b}) {
    if (cpu != -1 && !allowed(cpu)) {
      throw std::invalid_argument("CPU " + std::to_string(cpu) +
                                  " is not in this process's affinity mask");
    }
  }
  // Unchosen CPUs: the first allowed ones that the other flag did not take.
  for (int* chosen : {&options.cpu_a, &options.cpu_b}) {
    if (*chosen != -1) continue;
    for (const int cpu : cpus) {
      if (cpu != options.cpu_a && cpu != options.cpu_b) {
        *chosen = cpu;
        break;
      }
    }
    if (*chosen == -1) {
      throw std::invalid_argument("this process may run on " + std::to_string(cpus.size()) +
                                  " CPU(s); two different ones are needed");
    }
  }
  if (options.cpu_a == options.cpu_b) {
    throw std::invalid_argument("-a and -b must be different CPUs");
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0)) {
    std::printf(kUsage, argv[0]);
    return 0;
  }
  Options options;
  try {
    options = parse_options(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: %s\n", argv[0], error.what());
    std::fprintf(stderr, kUsage, argv[0]);
    return 2;
  }
  const size_t moved = options.bytes / options.block * options.block;
  try {
    std::printf("# Core to core: CPU %d and CPU %d, %d repeats\n", options.cpu_a, options.cpu_b,
                options.repeats);
    std::printf("# latency: one-way cache-line handoff, ns, %ld round trips per repeat\n",
                options.round_trips);
    std::fflush(stdout);
    const std::vector<double> latency = ping_pong(options);
    print_samples("ns", latency, 1);
    std::printf("# copy: %zu bytes through a ring of %zu blocks of %zu bytes, GB/s moved\n", moved,
                options.depth, options.block);
    std::fflush(stdout);
    const std::vector<double> copy = ring_copy(options);
    print_samples("GB/s", copy, 2);
    std::printf("# core-to-core: cpus %d,%d, latency %.1f ns, copy %.2f GB/s\n", options.cpu_a,
                options.cpu_b, median(latency), median(copy));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: %s\n", argv[0], error.what());
    return 1;
  }
  return 0;
}
