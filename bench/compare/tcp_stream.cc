// The physical limits that an all-reduce over TCP on one machine works
// against, measured with nothing but the kernel and libc:
//
//  1. memcpy bandwidth of large buffers (bytes copied per second; the memory
//     moves twice that, one read and one write).
//  2. One-direction stream: a forked child writes into a loopback TCP socket
//     as fast as it can, the parent reads and discards. Every byte costs a
//     copy into the kernel and one out of it, on two cores.
//  3. Both directions at once: each process sends to the other and receives
//     from it at the same time (a sender thread and a receiver thread each),
//     which is what each rank of a 2-rank ring does. Reported per direction.
//
// A ring all-reduce with 2 ranks sends, per rank, busbw bytes per second, in
// both directions at once, and must also add the data it receives; so the
// per-direction figure of (3) is the ceiling for its busbw.
//
// The last line sums it up for scripts (best of the repeats, GB/s; both
// directions per direction):
//   # tcp: memcpy X GB/s, one_direction Y GB/s, both_directions Z GB/s
//
// Usage: tcp_stream [-s total_bytes (default 1 GiB)] [-r repeats (default 5)]
// Build: g++ -O2 -std=c++17 tcp_stream.cc -pthread
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// Large user buffers make the per-call cost negligible; the kernel's own
// socket buffers are left to autotuning, as a real transport would.
constexpr size_t kChunkBytes = 4u << 20;
constexpr size_t kMemcpyBytes = 256u << 20;

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Best and median of repeated measurements: on a shared virtual machine the
// spread is wide, and both ends of it are worth seeing.
struct Summary {
  double best = 0;
  double median = 0;
};

Summary summarize(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return {samples.back(), samples[samples.size() / 2]};
}

std::vector<double> memcpy_gbps(int repeats) {
  std::vector<char> source(kMemcpyBytes, 1), target(kMemcpyBytes, 0);
  std::memcpy(target.data(), source.data(), kMemcpyBytes);  // Fault the pages in first.
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    std::memcpy(target.data(), source.data(), kMemcpyBytes);
    samples.push_back(kMemcpyBytes / seconds_since(start) / 1e9);
    source[r] = target[kMemcpyBytes - 1 - r];  // Keep the copy observable.
  }
  return samples;
}

// Prints one line of the table and returns the best figure.
double print_summary(const char* label, const std::vector<double>& samples, const char* unit) {
  const Summary s = summarize(samples);
  std::printf("%-32s best %7.3f  median %7.3f  %s\n", label, s.best, s.median, unit);
  return s.best;
}

void send_all(int fd, size_t total) {
  std::vector<char> buffer(kChunkBytes, 'x');
  for (size_t sent = 0; sent < total;) {
    const ssize_t n = ::send(fd, buffer.data(), std::min(kChunkBytes, total - sent), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("send on the loopback socket failed");
    sent += static_cast<size_t>(n);
  }
}

// Returns the seconds from the first byte received to the last.
double receive_all(int fd, size_t total) {
  std::vector<char> buffer(kChunkBytes);
  Clock::time_point first{};
  for (size_t received = 0; received < total;) {
    const ssize_t n = ::recv(fd, buffer.data(), std::min(kChunkBytes, total - received), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("recv on the loopback socket failed");
    if (received == 0) first = Clock::now();
    received += static_cast<size_t>(n);
  }
  return seconds_since(first);
}

int listen_on_loopback(uint16_t& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) fail("socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;  // Any free port.
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0) fail("bind 127.0.0.1");
  if (::listen(fd, 1) != 0) fail("listen");
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) fail("getsockname");
  port = ntohs(address.sin_port);
  return fd;
}

int connect_to_loopback(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) fail("socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    fail("connect to 127.0.0.1");
  }
  return fd;
}

// What one process does with its end of the connection: send, receive, or
// both at once on two threads. Returns receive seconds (0 if it only sends).
double play(int fd, size_t total, bool sends, bool receives) {
  std::thread sender;
  if (sends) sender = std::thread([&] { send_all(fd, total); });
  const double seconds = receives ? receive_all(fd, total) : 0;
  if (sender.joinable()) sender.join();
  return seconds;
}

// Forks a peer connected over loopback. The parent receives and times; in
// bidirectional mode both send and receive. Returns GB/s per direction.
double stream_gbps(size_t total, bool both_directions) {
  uint16_t port = 0;
  const int listener = listen_on_loopback(port);
  std::fflush(stdout);
  const pid_t child = fork();
  if (child < 0) fail("fork");
  if (child == 0) {
    int status = 0;
    try {
      const int fd = connect_to_loopback(port);
      play(fd, total, /*sends=*/true, /*receives=*/both_directions);
      ::close(fd);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "tcp_stream: peer failed: %s\n", error.what());
      status = 1;
    }
    _exit(status);
  }
  const int fd = ::accept(listener, nullptr, nullptr);
  if (fd < 0) fail("accept");
  ::close(listener);
  const double seconds = play(fd, total, /*sends=*/both_directions, /*receives=*/true);
  ::close(fd);
  int status = 0;
  if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("the sending process failed");
  }
  return total / seconds / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  size_t total = size_t{1} << 30;
  int repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "-s") {
      total = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (flag == "-r") {
      repeats = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: %s [-s total_bytes] [-r repeats]\n", argv[0]);
      return 2;
    }
  }
  if (total == 0 || repeats < 1 || argc % 2 == 0) {
    std::fprintf(stderr, "usage: %s [-s total_bytes] [-r repeats]\n", argv[0]);
    return 2;
  }
  try {
    std::printf("# Physical limits on this machine: %d runs each, %zu bytes per stream run\n",
                repeats, total);
    const double memcpy_best =
        print_summary("memcpy (256 MiB buffers)", memcpy_gbps(repeats), "GB/s");
    const struct {
      const char* label;
      bool both;
    } modes[] = {{"tcp loopback, one direction", false},
                 {"tcp loopback, both directions", true}};
    double stream_best[2] = {};
    for (int m = 0; m < 2; ++m) {
      std::vector<double> samples;
      for (int r = 0; r < repeats; ++r) samples.push_back(stream_gbps(total, modes[m].both));
      stream_best[m] = print_summary(modes[m].label, samples,
                                     modes[m].both ? "GB/s per direction" : "GB/s");
    }
    std::printf("# tcp: memcpy %.3f GB/s, one_direction %.3f GB/s, both_directions %.3f GB/s\n",
                memcpy_best, stream_best[0], stream_best[1]);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "tcp_stream: %s\n", error.what());
    return 1;
  }
  return 0;
}
