#include "device/start_words.h"

#include <cuda_runtime.h>

#include <mutex>
#include <vector>

#include "protocols/fifo_handle.h"

namespace hora::device {
namespace {

// Words on cache lines of their own: each is written by one rank's GPU and
// polled by other threads.
constexpr std::size_t kWordStride = protocols::kCacheLineBytes / sizeof(std::uint64_t);
// Communicators whose GPU another rank of their process shares, alive at
// once in one process; beyond that, ranks fall back on their own kernels'
// ends (LaunchRule::Unfinished with one).
constexpr std::size_t kWords = 1024;

struct Pool {
  std::mutex mutex;
  std::uint64_t* block = nullptr;  // kWords * kWordStride words; never freed
  std::vector<std::uint64_t*> free;
};

Pool& pool() {
  static Pool* const shared = new Pool;  // outlives every communicator, static destructors too
  return *shared;
}

}  // namespace

StartWord takeStartWord() {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  if (p.block == nullptr) {
    void* block = nullptr;
    if (cudaHostAlloc(&block, kWords * protocols::kCacheLineBytes, cudaHostAllocMapped | cudaHostAllocPortable) !=
        cudaSuccess) {
      cudaGetLastError();
      return {};
    }
    p.block = static_cast<std::uint64_t*>(block);
    for (std::size_t i = kWords; i-- > 0;) p.free.push_back(p.block + i * kWordStride);
  }
  if (p.free.empty()) return {};
  StartWord word;
  if (cudaHostGetDevicePointer(reinterpret_cast<void**>(&word.device), p.free.back(), 0) != cudaSuccess) {
    cudaGetLastError();
    return {};
  }
  word.host = p.free.back();
  p.free.pop_back();
  __atomic_store_n(word.host, 0, __ATOMIC_RELEASE);
  return word;
}

void returnStartWord(std::uint64_t* host) {
  if (host == nullptr) return;
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  p.free.push_back(host);
}

}  // namespace hora::device
