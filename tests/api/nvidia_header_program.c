/* A program written for NVIDIA's NCCL: compiled against NVIDIA's nccl.h
 * (which includes cuda_runtime.h), linked to hora's libnccl.so.2 and run on
 * host memory with a NULL stream. It checks what such a program depends on:
 * version, communicator creation with and without a config, a grouped
 * all-reduce across ranks driven from one thread, queries, error strings and
 * clean destruction. Exits 0 on success, 1 with a message otherwise. */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CUDART_VERSION
#error "compile this program against NVIDIA's nccl.h"
#endif

#define NRANKS 3
#define COUNT 1000

static int failures = 0;

#define EXPECT(condition, ...)                                  \
  do {                                                          \
    if (!(condition)) {                                         \
      fprintf(stderr, "FAILED %s:%d: %s: ", __FILE__, __LINE__, #condition); \
      fprintf(stderr, __VA_ARGS__);                             \
      fprintf(stderr, "\n");                                    \
      ++failures;                                               \
    }                                                           \
  } while (0)

#define CHECK_NCCL(call)                                                                      \
  do {                                                                                        \
    ncclResult_t result_ = (call);                                                            \
    if (result_ != ncclSuccess) {                                                             \
      fprintf(stderr, "FAILED %s:%d: %s returned %d (%s): %s\n", __FILE__, __LINE__, #call,   \
              (int)result_, ncclGetErrorString(result_), ncclGetLastError(NULL));             \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

static void checkVersion(void) {
  int version = 0;
  CHECK_NCCL(ncclGetVersion(&version));
  EXPECT(version == NCCL_VERSION_CODE, "library reports %d, header has %d", version, NCCL_VERSION_CODE);
}

/* Each rank r contributes r + 1 + i/7 at element i; the sum is known. */
static void checkGroupedAllReduce(ncclComm_t* comms) {
  float* send[NRANKS];
  float* recv[NRANKS];
  for (int r = 0; r < NRANKS; ++r) {
    send[r] = malloc(COUNT * sizeof(float));
    recv[r] = malloc(COUNT * sizeof(float));
    for (int i = 0; i < COUNT; ++i) {
      send[r][i] = (float)(r + 1) + (float)(i % 7);
      recv[r][i] = -1.0f;
    }
  }
  CHECK_NCCL(ncclGroupStart());
  for (int r = 0; r < NRANKS; ++r)
    CHECK_NCCL(ncclAllReduce(send[r], recv[r], COUNT, ncclFloat, ncclSum, comms[r], (cudaStream_t)0));
  CHECK_NCCL(ncclGroupEnd());
  int wrong = 0;
  for (int r = 0; r < NRANKS; ++r)
    for (int i = 0; i < COUNT; ++i) {
      float expected = (float)(NRANKS * (NRANKS + 1) / 2) + (float)(NRANKS * (i % 7));
      if (recv[r][i] != expected && wrong++ < 5)
        fprintf(stderr, "rank %d element %d: got %g, expected %g\n", r, i, recv[r][i], expected);
    }
  EXPECT(wrong == 0, "%d wrong elements after the grouped all-reduce", wrong);
  for (int r = 0; r < NRANKS; ++r) {
    free(send[r]);
    free(recv[r]);
  }
}

static void checkQueries(ncclComm_t* comms) {
  for (int r = 0; r < NRANKS; ++r) {
    int count = 0, rank = -1, device = 0;
    CHECK_NCCL(ncclCommCount(comms[r], &count));
    CHECK_NCCL(ncclCommUserRank(comms[r], &rank));
    CHECK_NCCL(ncclCommCuDevice(comms[r], &device));
    EXPECT(count == NRANKS, "ncclCommCount gave %d", count);
    EXPECT(rank == r, "ncclCommUserRank gave %d for rank %d", rank, r);
    EXPECT(device == -1, "a host communicator reports CUDA device %d", device);
    ncclResult_t async = ncclInternalError;
    CHECK_NCCL(ncclCommGetAsyncError(comms[r], &async));
    EXPECT(async == ncclSuccess, "async error %d on a healthy communicator", (int)async);
  }
}

static void checkErrorStrings(void) {
  for (int result = ncclSuccess; result < ncclNumResults; ++result) {
    const char* text = ncclGetErrorString((ncclResult_t)result);
    EXPECT(text != NULL && text[0] != '\0', "no text for result %d", result);
  }
  /* An argument error: the code NVIDIA's header names, and a reason. */
  ncclResult_t result = ncclAllReduce(NULL, NULL, 1, ncclFloat, ncclSum, NULL, (cudaStream_t)0);
  EXPECT(result == ncclInvalidArgument, "NULL communicator gave %d", (int)result);
  EXPECT(strstr(ncclGetLastError(NULL), "NULL") != NULL, "last error '%s'", ncclGetLastError(NULL));
}

/* A one-rank communicator made with NVIDIA's NCCL_CONFIG_INITIALIZER: the
 * config struct crosses the ABI as NVIDIA's header lays it out. */
static void checkInitWithConfig(void) {
  ncclUniqueId id;
  CHECK_NCCL(ncclGetUniqueId(&id));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  config.commName = "conformance";
  ncclComm_t comm = NULL;
  CHECK_NCCL(ncclCommInitRankConfig(&comm, 1, id, 0, &config));
  double value = 2.5, result = 0.0;
  CHECK_NCCL(ncclAllReduce(&value, &result, 1, ncclDouble, ncclMax, comm, (cudaStream_t)0));
  EXPECT(result == 2.5, "one-rank all-reduce gave %g", result);
  CHECK_NCCL(ncclCommFinalize(comm));
  CHECK_NCCL(ncclCommDestroy(comm));

  config.magic = 0; /* not made by the initializer */
  ncclResult_t bad = ncclCommInitRankConfig(&comm, 1, id, 0, &config);
  EXPECT(bad == ncclInvalidArgument, "a config with a bad magic gave %d", (int)bad);
}

int main(void) {
  checkVersion();
  ncclComm_t comms[NRANKS];
  CHECK_NCCL(ncclCommInitAll(comms, NRANKS, NULL));
  checkQueries(comms);
  checkGroupedAllReduce(comms);
  for (int r = 0; r < NRANKS; ++r) CHECK_NCCL(ncclCommDestroy(comms[r]));
  checkErrorStrings();
  checkInitWithConfig();
  if (failures > 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("a program built with NVIDIA's nccl.h %d.%d.%d ran on hora\n", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
  return 0;
}
