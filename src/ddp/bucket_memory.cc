#include "bucket_memory.h"

#include <cstring>
#include <new>
#include <string>

#include "hora/error.h"

namespace hora::ddp {

namespace {

// Cache-line alignment: a bucket never shares a line with other data, and
// vectorised loops start aligned.
constexpr std::align_val_t kAlignment{64};

class HostMemory final : public BucketMemory {
 public:
  void* allocate(std::size_t bytes) override {
    void* data = ::operator new(bytes == 0 ? 1 : bytes, kAlignment);
    std::memset(data, 0, bytes);
    return data;
  }
  void release(void* data) noexcept override { ::operator delete(data, kAlignment); }
  void zero(void* data, std::size_t bytes) override { std::memset(data, 0, bytes); }
  void copy(void* destination, const void* source, std::size_t bytes) override {
    if (bytes != 0) std::memcpy(destination, source, bytes);
  }
};

}  // namespace

BucketMemory& bucketMemoryFor(MemoryKind kind) {
  static HostMemory host;
  if (kind == MemoryKind::Host) return host;
  throw Error(ErrorKind::InvalidUsage,
              "gradient buckets in memory kind " + std::to_string(static_cast<int>(kind)) +
                  " are not supported by this build (host memory only)");
}

}  // namespace hora::ddp
