// Ranks in separate processes on one GPU: each child process (this program
// again, started with --rank) joins a communicator through nccl.h and
// all-reduces device buffers; the next rank's FIFOs reach it through CUDA
// IPC, or, for ranks told they are on different hosts (NCCL_HOSTID), through
// the network proxy (pinned host FIFOs relayed over TCP). The parent starts the children before it touches CUDA itself, so
// they own fresh CUDA state, and checks their exit codes. Processes on one
// GPU take turns on it (time slices) unless MPS runs, so the sizes are
// small.
#include <cuda.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "device/driver_api.h"
#include "device/vmm_memory.h"
#include "log_watch.h"
#include "nccl.h"

extern char** environ;

namespace {

std::string hexOf(const ncclUniqueId& id) {
  std::string text;
  char digits[3];
  for (char c : id.internal) {
    std::snprintf(digits, sizeof(digits), "%02x", static_cast<unsigned char>(c));
    text += digits;
  }
  return text;
}

ncclUniqueId idOf(const std::string& text) {
  ncclUniqueId id{};
  for (std::size_t i = 0; i < sizeof(id.internal); ++i)
    id.internal[i] = static_cast<char>(std::stoi(text.substr(2 * i, 2), nullptr, 16));
  return id;
}

// One rank: 0 on success, else a line on stderr and 1.
int runRank(int rank, int nranks, const ncclUniqueId& id) {
  auto fail = [&](const char* what, const char* why) {
    std::fprintf(stderr, "rank %d: %s: %s\n", rank, what, why);
    return 1;
  };
  if (cudaSetDevice(0) != cudaSuccess) return fail("cudaSetDevice", "no device");
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) return fail("init", ncclGetLastError(nullptr));
  const std::size_t count = (1 << 18) + 3;
  std::vector<int> input(count), output(count);
  for (std::size_t i = 0; i < count; ++i) input[i] = static_cast<int>(i % 1000) * (rank + 1);
  int* buffer = nullptr;
  cudaStream_t stream = nullptr;
  cudaMalloc(&buffer, count * sizeof(int));
  cudaStreamCreate(&stream);
  for (int round = 0; round < 3; ++round) {
    cudaMemcpy(buffer, input.data(), count * sizeof(int), cudaMemcpyHostToDevice);
    if (ncclAllReduce(buffer, buffer, count, ncclInt32, ncclSum, comm, stream) != ncclSuccess)
      return fail("ncclAllReduce", ncclGetLastError(comm));
    if (cudaStreamSynchronize(stream) != cudaSuccess) return fail("cudaStreamSynchronize", "failed");
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm, &async);
    if (async != ncclSuccess) return fail("async error", ncclGetLastError(comm));
    cudaMemcpy(output.data(), buffer, count * sizeof(int), cudaMemcpyDeviceToHost);
    const int ranksSum = nranks * (nranks + 1) / 2;
    for (std::size_t i = 0; i < count; ++i)
      if (output[i] != static_cast<int>(i % 1000) * ranksSum) return fail("result", "wrong element");
  }
  ncclCommDestroy(comm);
  return 0;
}

// A rank whose peer process dies while its kernel waits for that peer:
// rank 1 joins, then kills itself; rank 0's all-reduce waits for its data.
// With HORA_TIMEOUT at 120 s, rank 0 must learn of it within seconds, from
// ncclCommGetAsyncError, with an error that names rank 1.
int runSurvivor(const ncclUniqueId& id) {
  auto fail = [&](const char* what, const char* why) {
    std::fprintf(stderr, "survivor: %s: %s\n", what, why);
    return 1;
  };
  ::setenv("HORA_TIMEOUT", "120000", 1);
  if (cudaSetDevice(0) != cudaSuccess) return fail("cudaSetDevice", "no device");
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, 2, id, 0) != ncclSuccess) return fail("init", ncclGetLastError(nullptr));
  int* buffer = nullptr;
  cudaStream_t stream = nullptr;
  cudaMalloc(&buffer, 1024 * sizeof(int));
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (ncclAllReduce(buffer, buffer, 1024, ncclInt32, ncclSum, comm, stream) != ncclSuccess)
    return fail("ncclAllReduce", ncclGetLastError(comm));
  const auto started = std::chrono::steady_clock::now();
  ncclResult_t async = ncclSuccess;
  while (std::chrono::steady_clock::now() - started < std::chrono::seconds(30)) {
    if (ncclCommGetAsyncError(comm, &async) != ncclSuccess) return fail("ncclCommGetAsyncError", "failed");
    if (async != ncclSuccess) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const std::string text = ncclGetLastError(comm);
  std::fprintf(stderr, "survivor: after %.2f s: %s: %s\n", seconds, ncclGetErrorString(async), text.c_str());
  if (async == ncclSuccess) return fail("the peer's death", "not reported within 30 s");
  // On this host the process watch sees the exit; across hosts the network
  // proxy's connection to it fails.
  const bool acrossHosts = std::getenv("NCCL_HOSTID") != nullptr;
  if (text.find("rank 1") == std::string::npos || (!acrossHosts && text.find("exited") == std::string::npos))
    return fail("the error", "does not name rank 1 (or, on one host, say that it exited)");
  if (seconds > 5) return fail("the peer's death", "reported later than 5 s after the call");
  ncclCommAbort(comm);
  return 0;
}

int runVictim(const ncclUniqueId& id) {
  if (cudaSetDevice(0) != cudaSuccess) return 1;
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, 2, id, 1) != ncclSuccess) return 1;
  std::this_thread::sleep_for(std::chrono::seconds(1));  // rank 0's kernel is waiting by then
  ::kill(::getpid(), SIGKILL);
  return 1;
}

// This program's environment, and NCCL_HOSTID=<host> when `host` is not
// empty (the rank then counts as on a host of that name).
struct Environment {
  explicit Environment(const std::string& host) {
    for (char** variable = environ; *variable != nullptr; ++variable)
      if (std::strncmp(*variable, "NCCL_HOSTID=", 12) != 0) strings.emplace_back(*variable);
    if (!host.empty()) strings.push_back("NCCL_HOSTID=" + host);
    for (std::string& text : strings) pointers.push_back(text.data());
    pointers.push_back(nullptr);
  }
  std::vector<std::string> strings;
  std::vector<char*> pointers;
};

void checkAPeerThatDiesStopsTheSurvivor(bool acrossHosts) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<pid_t> children;
  for (const char* role : {"--survivor", "--victim"}) {
    std::string self = "/proc/self/exe", roleArg = role, idArg = hexOf(id);
    char* argv[] = {self.data(), roleArg.data(), idArg.data(), nullptr};
    Environment environment(acrossHosts ? std::string("node") + role : std::string());
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, environment.pointers.data()), 0);
    children.push_back(pid);
  }
  int status = 0;
  ASSERT_EQ(waitpid(children[0], &status, 0), children[0]);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the survivor failed (its stderr says why)";
  ASSERT_EQ(waitpid(children[1], &status, 0), children[1]);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

TEST(DeviceProcesses, APeerProcessThatDiesStopsTheKernelWaitingForIt) { checkAPeerThatDiesStopsTheSurvivor(false); }

// The same across "hosts": the survivor's kernel waits on its network
// proxy, whose connection to the dead rank fails.
TEST(DeviceProcesses, APeerOnAnotherHostThatDiesStopsTheKernelWaitingForIt) {
  checkAPeerThatDiesStopsTheSurvivor(true);
}

// 2 and 3 ranks, each a process of its own on this GPU, all-reduce exactly;
// with `hostPerRank`, each on a host of its own (NCCL_HOSTID).
// With NCCL_P2P_DISABLE=1 and an INFO log in HORA_DEBUG_FILE (the gpu
// suite's device_processes_host_fifos run), ranks of one host must also say
// that their FIFOs are in pinned host memory, which the others open from
// their processes.
void checkRanksInSeparateProcesses(bool hostPerRank) {
  const bool hostFifos = !hostPerRank && p2pDisabledAndLogged();
  for (int nranks : {2, 3}) {
    const LogWatch log;
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    std::vector<pid_t> children;
    for (int rank = 0; rank < nranks; ++rank) {
      std::string self = "/proc/self/exe", rankArg = std::to_string(rank), sizeArg = std::to_string(nranks),
                  idArg = hexOf(id);
      char flag[] = "--rank";
      char* argv[] = {self.data(), flag, rankArg.data(), sizeArg.data(), idArg.data(), nullptr};
      Environment environment(hostPerRank ? "node" + std::to_string(rank) : std::string());
      pid_t pid = 0;
      ASSERT_EQ(posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, environment.pointers.data()), 0);
      children.push_back(pid);
    }
    for (int rank = 0; rank < nranks; ++rank) {
      int status = 0;
      ASSERT_EQ(waitpid(children[rank], &status, 0), children[rank]);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << nranks << " ranks: rank " << rank << " failed";
    }
    if (hostFifos) {
      EXPECT_EQ(log.linesWith(kFifosInHostMemoryLine), nranks);
    }
  }
}

TEST(DeviceProcesses, RanksInSeparateProcessesShareOneGpu) { checkRanksInSeparateProcesses(false); }

// Every rank on a host of its own: every link of the ring goes through the
// network proxy, and the results must still be exact.
TEST(DeviceProcesses, RanksOnDifferentHostsAllReduceThroughTheNetworkProxy) { checkRanksInSeparateProcesses(true); }

// The child of MemAllocMemoryMapsInAnotherProcessFromAFileDescriptor
// (--import FD BYTES VALUE): maps the memory behind FD on GPU 0, checks
// that every byte is VALUE, writes VALUE + 1 everywhere. 0 on success,
// else a line on stderr and 1.
int runImporter(int fd, std::size_t bytes, int value) {
  using hora::device::driverFunction;
  auto fail = [](const char* what, int why) {
    std::fprintf(stderr, "importer: %s: %d\n", what, why);
    return 1;
  };
  if (cudaSetDevice(0) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) return fail("cudaSetDevice", 0);
  auto* import = driverFunction<CUresult(CUmemGenericAllocationHandle*, void*, CUmemAllocationHandleType)>(
      "cuMemImportFromShareableHandle");
  auto* reserve = driverFunction<CUresult(CUdeviceptr*, std::size_t, std::size_t, CUdeviceptr, unsigned long long)>(
      "cuMemAddressReserve");
  auto* map = driverFunction<CUresult(CUdeviceptr, std::size_t, std::size_t, CUmemGenericAllocationHandle,
                                      unsigned long long)>("cuMemMap");
  auto* setAccess =
      driverFunction<CUresult(CUdeviceptr, std::size_t, const CUmemAccessDesc*, std::size_t)>("cuMemSetAccess");
  auto* properties = driverFunction<CUresult(CUmemAllocationProp*, CUmemGenericAllocationHandle)>(
      "cuMemGetAllocationPropertiesFromHandle");
  auto* granularity =
      driverFunction<CUresult(std::size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags)>(
          "cuMemGetAllocationGranularity");
  if (!import || !reserve || !map || !setAccess || !properties || !granularity)
    return fail("driver entry points", 0);
  CUmemGenericAllocationHandle handle = 0;
  CUresult result = import(&handle, reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)),
                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  if (result != CUDA_SUCCESS) return fail("cuMemImportFromShareableHandle", result);
  // A mapping covers whole granules of the allocation.
  CUmemAllocationProp prop{};
  std::size_t step = 0;
  if ((result = properties(&prop, handle)) != CUDA_SUCCESS) return fail("cuMemGetAllocationPropertiesFromHandle", result);
  if ((result = granularity(&step, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)) != CUDA_SUCCESS)
    return fail("cuMemGetAllocationGranularity", result);
  const std::size_t mapped = (bytes + step - 1) / step * step;
  CUdeviceptr address = 0;
  if ((result = reserve(&address, mapped, step, 0, 0)) != CUDA_SUCCESS) return fail("cuMemAddressReserve", result);
  if ((result = map(address, mapped, 0, handle, 0)) != CUDA_SUCCESS) return fail("cuMemMap", result);
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 0;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if ((result = setAccess(address, mapped, &access, 1)) != CUDA_SUCCESS) return fail("cuMemSetAccess", result);
  void* memory = reinterpret_cast<void*>(static_cast<std::uintptr_t>(address));
  std::vector<unsigned char> seen(bytes);
  if (cudaMemcpy(seen.data(), memory, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) return fail("cudaMemcpy", 0);
  for (std::size_t i = 0; i < bytes; ++i)
    if (seen[i] != value) return fail("byte differs from what the parent wrote, at", static_cast<int>(i));
  if (cudaMemset(memory, value + 1, bytes) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess)
    return fail("cudaMemset", 0);
  return 0;
}

// ncclMemAlloc gives cuMem memory whose handle leaves the process as a
// file descriptor (hora's exportVmm), where the GPU supports it: a child
// process maps it from the descriptor, sees what this process wrote, and
// this process sees what the child wrote. Last of the program's tests: it
// gives this process CUDA state, which it resets at the end.
TEST(DeviceProcesses, MemAllocMemoryMapsInAnotherProcessFromAFileDescriptor) {
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  auto* getDevice = hora::device::driverFunction<CUresult(CUdevice*, int)>("cuDeviceGet");
  auto* getAttribute =
      hora::device::driverFunction<CUresult(int*, CUdevice_attribute, CUdevice)>("cuDeviceGetAttribute");
  if (getDevice == nullptr || getAttribute == nullptr) GTEST_SKIP() << "the CUDA runtime cannot give driver functions";
  const char* cumem = std::getenv("NCCL_CUMEM_ENABLE");
  if (cumem != nullptr && std::strcmp(cumem, "0") == 0) GTEST_SKIP() << "NCCL_CUMEM_ENABLE=0: ncclMemAlloc uses cudaMalloc";
  CUdevice gpu = 0;
  ASSERT_EQ(getDevice(&gpu, 0), CUDA_SUCCESS);
  int vmm = 0, fdHandles = 0;
  ASSERT_EQ(getAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, gpu), CUDA_SUCCESS);
  ASSERT_EQ(getAttribute(&fdHandles, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, gpu),
            CUDA_SUCCESS);
  if (vmm == 0 || fdHandles == 0) GTEST_SKIP() << "GPU 0 has no cuMem file-descriptor handles: ncclMemAlloc uses cudaMalloc";
  const std::size_t bytes = (3u << 20) + 17;  // not a multiple of the granularity
  void* memory = nullptr;
  ASSERT_EQ(ncclMemAlloc(&memory, bytes), ncclSuccess) << ncclGetLastError(nullptr);
  ASSERT_EQ(cudaMemset(memory, 90, bytes), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const int fd = hora::device::exportVmm(memory);
  ASSERT_GE(fd, 0) << "ncclMemAlloc's memory is not cuMem memory";
  // The descriptor as fd 100 in the child (dup2 clears close-on-exec).
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fd, 100);
  std::string size = std::to_string(bytes);
  char self[] = "/proc/self/exe", flag[] = "--import", fdText[] = "100", value[] = "90";
  char* argv[] = {self, flag, fdText, size.data(), value, nullptr};
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child failed (its stderr says why)";
  std::vector<unsigned char> seen(bytes);
  ASSERT_EQ(cudaMemcpy(seen.data(), memory, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 91), static_cast<std::ptrdiff_t>(bytes));
  close(fd);
  EXPECT_EQ(ncclMemFree(memory), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(cudaDeviceReset(), cudaSuccess);
}

}  // namespace

// A child (--rank R N ID) runs its rank; otherwise the tests run, where
// CUDA sees a device (77, skipped, elsewhere).
int main(int argc, char** argv) {
  if (argc == 5 && std::strcmp(argv[1], "--rank") == 0)
    return runRank(std::atoi(argv[2]), std::atoi(argv[3]), idOf(argv[4]));
  if (argc == 3 && std::strcmp(argv[1], "--survivor") == 0) return runSurvivor(idOf(argv[2]));
  if (argc == 3 && std::strcmp(argv[1], "--victim") == 0) return runVictim(idOf(argv[2]));
  if (argc == 5 && std::strcmp(argv[1], "--import") == 0)
    return runImporter(std::atoi(argv[2]), std::strtoull(argv[3], nullptr, 10), std::atoi(argv[4]));
  int devices = 0;
  // Counting devices in a child keeps the parent free of CUDA state.
  pid_t probe = fork();
  if (probe == 0) _exit(cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0 ? 0 : 1);
  int status = 0;
  waitpid(probe, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::printf("SKIP: no CUDA device here; the GPU tests need one\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
