// What this machine's memory can carry, with nothing but libc and threads:
// the ceiling for collectives through shared memory between ranks of one
// host, where every byte is copied (or read, added and written) by a CPU.
//
//  copy  memcpy between two large buffers. "copied" is bytes copied per
//        second; the memory moves twice that (one read, one write).
//  add   a[i] += b[i] over two float arrays, as a reduction does. "per
//        buffer" is bytes of b added per second; the memory moves three
//        times that (read a, read b, write a).
//
// Each runs with 1 thread, and with 2 threads at once on their own buffers,
// as the two ranks of a 2-rank job copy at the same time; the 2-thread
// figures are the aggregate of both. Every buffer is written once by the
// thread that uses it before any timing (so its pages are mapped, and on a
// NUMA machine placed near that thread), and each figure is the best of
// several repeats, with the median beside it.
//
// The last line sums it up for scripts:
//   # memory: copy_1t X GB/s, copy_2t Y GB/s (aggregate), add_1t Z GB/s, add_2t W GB/s (aggregate)
// in bytes copied (copy) or bytes of b added (add) per second, best of the repeats.
//
// Usage: mem_bandwidth [-s bytes per buffer (default 256M)] [-r repeats (default 5)]
// Build: g++ -O3 -std=c++17 mem_bandwidth.cc -pthread
//        (-O3 so that the add loop is vectorised, as a library's reduction is)
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_table.h"

namespace {

using Clock = std::chrono::steady_clock;

enum class Test { Copy, Add };

// Lets threads start each repeat together and wait for each other at the
// end of it (C++17 has no std::barrier).
class Barrier {
 public:
  explicit Barrier(int parties) : parties_(parties) {}

  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const long generation = generation_;
    if (++arrived_ == parties_) {
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
      return;
    }
    changed_.wait(lock, [&] { return generation_ != generation; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  const int parties_;
  int arrived_ = 0;
  long generation_ = 0;
};

void add_into(float* __restrict a, const float* __restrict b, size_t count) {
  for (size_t i = 0; i < count; ++i) a[i] += b[i];
}

struct Window {
  Clock::time_point start, end;
};

// One thread's part: its own two buffers, touched before timing, then the
// test run once per repeat between two barriers.
void run_thread(Test test, size_t bytes, int repeats, Barrier& barrier, std::vector<Window>& windows,
                bool& correct) {
  const size_t count = bytes / sizeof(float);
  std::unique_ptr<float[]> a(new float[count]), b(new float[count]);
  std::fill(a.get(), a.get() + count, 0.0f);
  std::fill(b.get(), b.get() + count, 1.0f);
  for (int r = 0; r < repeats; ++r) {
    barrier.arrive_and_wait();
    windows[r].start = Clock::now();
    if (test == Test::Copy) {
      std::memcpy(a.get(), b.get(), count * sizeof(float));
    } else {
      add_into(a.get(), b.get(), count);
    }
    windows[r].end = Clock::now();
    barrier.arrive_and_wait();
  }
  // Reading the result keeps the work observable, and proves it was done.
  const float expected = test == Test::Copy ? 1.0f : static_cast<float>(repeats);
  correct = a[0] == expected && a[count / 2] == expected && a[count - 1] == expected;
}

// Bytes per second (copied, or of b added) per repeat, summed over threads:
// each repeat lasts from the first thread's start to the last one's end.
std::vector<double> measure(Test test, int threads, size_t bytes, int repeats) {
  Barrier barrier(threads);
  std::vector<std::vector<Window>> windows(threads, std::vector<Window>(repeats));
  std::unique_ptr<bool[]> correct(new bool[threads]());
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back(run_thread, test, bytes, repeats, std::ref(barrier), std::ref(windows[t]),
                         std::ref(correct[t]));
  }
  for (std::thread& worker : workers) worker.join();
  for (int t = 0; t < threads; ++t) {
    if (!correct[t]) throw std::runtime_error("a thread's buffer does not hold the expected result");
  }
  std::vector<double> rates;
  for (int r = 0; r < repeats; ++r) {
    Clock::time_point start = windows[0][r].start, end = windows[0][r].end;
    for (int t = 1; t < threads; ++t) {
      start = std::min(start, windows[t][r].start);
      end = std::max(end, windows[t][r].end);
    }
    const double seconds = std::chrono::duration<double>(end - start).count();
    rates.push_back(static_cast<double>(bytes) * threads / seconds);
  }
  return rates;
}

struct Figures {
  double best = 0;
  double median = 0;
};

Figures summarize(std::vector<double> rates) {
  std::sort(rates.begin(), rates.end());
  return {rates.back(), rates[rates.size() / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  size_t bytes = 256u << 20;
  int repeats = 5;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string flag = argv[i];
      if (flag == "-h" || flag == "--help") {
        std::printf("usage: %s [-s bytes per buffer (256M)] [-r repeats (5)]\n", argv[0]);
        return 0;
      }
      if (i + 1 >= argc) throw std::invalid_argument("option " + flag + " needs a value");
      const std::string value = argv[++i];
      if (flag == "-s") {
        bytes = bench::parse_size(value);
      } else if (flag == "-r") {
        repeats = std::stoi(value);
      } else {
        throw std::invalid_argument("unknown option " + flag);
      }
    }
    if (bytes < 1024) throw std::invalid_argument("-s must be at least 1K");
    if (repeats < 1) throw std::invalid_argument("-r must be at least 1");
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: %s\nusage: %s [-s bytes per buffer] [-r repeats]\n", argv[0], error.what(),
                 argv[0]);
    return 2;
  }
  bytes = bytes / sizeof(float) * sizeof(float);

  std::printf("# Memory bandwidth: %zu-byte buffers (two per thread), best and median of %d\n", bytes,
              repeats);
  std::printf("# %-6s %8s  %22s  %22s\n", "test", "threads", "copied|added (GB/s)", "moved (GB/s)");
  std::printf("# %-6s %8s  %10s  %10s  %10s  %10s\n", "", "", "best", "median", "best", "median");
  struct Row {
    const char* name;
    Test test;
    int threads;
    double moved_factor;  // memory traffic per byte copied or added
  };
  const Row rows[] = {{"copy", Test::Copy, 1, 2.0}, {"copy", Test::Copy, 2, 2.0},
                      {"add", Test::Add, 1, 3.0},   {"add", Test::Add, 2, 3.0}};
  double best[4] = {};
  try {
    for (int i = 0; i < 4; ++i) {
      const Figures f = summarize(measure(rows[i].test, rows[i].threads, bytes, repeats));
      best[i] = f.best;
      std::printf("  %-6s %8d  %10.3f  %10.3f  %10.3f  %10.3f\n", rows[i].name, rows[i].threads,
                  f.best / 1e9, f.median / 1e9, f.best * rows[i].moved_factor / 1e9,
                  f.median * rows[i].moved_factor / 1e9);
      std::fflush(stdout);
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: %s\n", argv[0], error.what());
    return 1;
  }
  std::printf("# 2 threads: the sum of both, each on its own buffers at the same time.\n");
  std::printf(
      "# memory: copy_1t %.3f GB/s, copy_2t %.3f GB/s (aggregate), add_1t %.3f GB/s, "
      "add_2t %.3f GB/s (aggregate)\n",
      best[0] / 1e9, best[1] / 1e9, best[2] / 1e9, best[3] / 1e9);
  return 0;
}
