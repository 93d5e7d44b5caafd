// Built without CUDA: there is never a device, so nothing else is called.
#include "device_memory.h"

#include "nccl_failure.h"

namespace hora::perf::device {
namespace {
[[noreturn]] void unreachable() { failAndExit("hora-perf was built without CUDA"); }
}  // namespace

int count() { return 0; }
std::string describe(int) { unreachable(); }
void use(int, int) { unreachable(); }
void* allocate(std::size_t, int) { unreachable(); }
void release(void*) {}
void copyToDevice(void*, const void*, std::size_t, int) { unreachable(); }
void copyToHost(void*, const void*, std::size_t, int) { unreachable(); }
cudaStream_t createStream(int) { unreachable(); }
void destroyStream(cudaStream_t) {}
void synchronize(cudaStream_t, int) { unreachable(); }

}  // namespace hora::perf::device
