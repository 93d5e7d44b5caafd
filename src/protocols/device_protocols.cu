// The protocols compiled by nvcc as device code, so that a compile error in
// simple.h, ll.h or device_ordering.h shows at build time rather than when
// an executor first uses them. Each kernel streams `count` messages
// through one FIFO, one side per kernel, the way the CUDA executor does: the
// block's thread 0 waits and publishes (Simple) or waits for room and
// returns credits (LL), every thread of the block copies bytes (Simple) or
// writes and polls a line of its own (LL), and barriers hand the work from
// the one to the others (device_ordering.h says why a barrier and one
// thread's acquire or release suffice). The *Single kernels drive the
// message calls from one thread instead. They are compile checks: the CUDA
// executor moves pieces with its own primitives over the same protocols
// (device/simple_primitives.cuh, device/ll_primitives.cuh).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

#include "protocols/device_ordering.h"
#include "protocols/fifo_handle.h"
#include "protocols/ll.h"
#include "protocols/simple.h"
#include "protocols/status.h"

namespace hora::protocols::device_check {

using Simple = SimpleSender<DeviceOrdering>;
using SimpleIn = SimpleReceiver<DeviceOrdering>;
using LL = LLSender<DeviceOrdering>;
using LLIn = LLReceiver<DeviceOrdering>;

// Messages i of sizes[i] bytes, back to back in `data`.
__global__ void simpleSendBlock(FifoHandle fifo, const char* data, const std::uint32_t* sizes, int count,
                                std::uint64_t timeoutNs, Status* result) {
  __shared__ char* slot;
  __shared__ Status status;
  __shared__ alignas(Simple) unsigned char senderBytes[sizeof(Simple)];
  Simple& sender = *reinterpret_cast<Simple*>(senderBytes);
  if (threadIdx.x == 0) {
    new (&sender) Simple(fifo);
    status = Status::Ok;
  }
  const std::uint64_t deadline = DeviceOrdering::now() + timeoutNs;
  const char* message = data;
  for (int m = 0; m < count; ++m) {
    const std::uint64_t bytes = sizes[m];
    std::uint64_t done = 0;
    do {
      const std::uint64_t piece = bytes - done < fifo.slotBytes ? bytes - done : fifo.slotBytes;
      __syncthreads();
      if (threadIdx.x == 0) status = sender.waitRoom(&slot, deadline);
      __syncthreads();
      if (status != Status::Ok) {
        if (threadIdx.x == 0) *result = status;
        return;
      }
      for (std::uint64_t i = threadIdx.x; i < piece; i += blockDim.x) slot[i] = message[done + i];
      done += piece;
      __syncthreads();  // every thread's bytes are in the slot before it is published
      if (threadIdx.x == 0) sender.publish(piece, done == bytes);
    } while (done != bytes);
    message += bytes;
  }
  if (threadIdx.x == 0) *result = Status::Ok;
}

// Receives `count` messages back to back into `out`; sizes[i] gets each size.
__global__ void simpleRecvBlock(FifoHandle fifo, char* out, std::uint32_t* sizes, int count,
                                std::uint64_t timeoutNs, Status* result) {
  __shared__ SimplePiece piece;
  __shared__ Status status;
  __shared__ alignas(SimpleIn) unsigned char receiverBytes[sizeof(SimpleIn)];
  SimpleIn& receiver = *reinterpret_cast<SimpleIn*>(receiverBytes);
  if (threadIdx.x == 0) new (&receiver) SimpleIn(fifo);
  const std::uint64_t deadline = DeviceOrdering::now() + timeoutNs;
  for (int m = 0; m < count; ++m) {
    std::uint64_t bytes = 0;
    bool last = false;
    while (!last) {
      __syncthreads();
      if (threadIdx.x == 0) status = receiver.waitData(&piece, deadline);
      __syncthreads();  // thread 0's acquire orders the slot's bytes before everyone's reads
      if (status != Status::Ok) {
        if (threadIdx.x == 0) *result = status;
        return;
      }
      for (std::uint64_t i = threadIdx.x; i < piece.bytes; i += blockDim.x) out[bytes + i] = piece.data[i];
      bytes += piece.bytes;
      last = piece.last;
      __syncthreads();  // every read is done before the slot goes back
      if (threadIdx.x == 0) receiver.release();
    }
    if (threadIdx.x == 0) sizes[m] = static_cast<std::uint32_t>(bytes);
    out += bytes;
  }
  if (threadIdx.x == 0) *result = Status::Ok;
}

// LL, one line per thread: thread 0 waits for room for the block's lines (up
// to the slot's end), every thread writes its own line, thread 0 advances.
__global__ void llSendBlock(FifoHandle fifo, const char* data, const std::uint32_t* sizes, int count,
                           std::uint64_t timeoutNs, Status* result) {
  __shared__ Status status;
  __shared__ alignas(LL) unsigned char senderBytes[sizeof(LL)];
  LL& sender = *reinterpret_cast<LL*>(senderBytes);
  if (threadIdx.x == 0) new (&sender) LL(fifo);
  const std::uint64_t deadline = DeviceOrdering::now() + timeoutNs;
  const std::uint64_t perSlot = llLinesPerSlot(fifo);
  const char* message = data;
  for (int m = 0; m < count; ++m) {
    const std::uint32_t bytes = sizes[m];
    const std::uint64_t total = llMessageLines(bytes);
    for (std::uint64_t done = 0; done < total;) {
      __syncthreads();
      const std::uint64_t toSlotEnd = perSlot - sender.sentLines() % perSlot;
      std::uint64_t chunk = total - done < toSlotEnd ? total - done : toSlotEnd;
      chunk = chunk < blockDim.x ? chunk : blockDim.x;
      if (threadIdx.x == 0) status = sender.waitRoom(chunk, deadline);
      __syncthreads();
      if (status != Status::Ok) {
        if (threadIdx.x == 0) *result = status;
        return;
      }
      if (threadIdx.x < chunk) {
        const std::uint64_t j = done + threadIdx.x;
        sender.writeLine(threadIdx.x, j == 0 ? bytes : llWord(message, bytes, j - 1));
      }
      __syncthreads();
      if (threadIdx.x == 0) sender.advance(chunk);
      done += chunk;
    }
    message += bytes;
  }
  if (threadIdx.x == 0) *result = Status::Ok;
}

// LL receiving, one line per thread: every thread waits for its own line of
// the chunk, then thread 0 returns the chunk's lines as credits. A thread
// that fails records it; the block stops at the next barrier.
__global__ void llRecvBlock(FifoHandle fifo, char* out, std::uint32_t* sizes, int count, std::uint64_t timeoutNs,
                            Status* result) {
  __shared__ std::uint32_t failed;  // a Status, as an integer for atomicMax
  __shared__ std::uint32_t size;
  __shared__ alignas(LLIn) unsigned char receiverBytes[sizeof(LLIn)];
  LLIn& receiver = *reinterpret_cast<LLIn*>(receiverBytes);
  if (threadIdx.x == 0) {
    new (&receiver) LLIn(fifo);
    failed = 0;
  }
  const std::uint64_t deadline = DeviceOrdering::now() + timeoutNs;
  const std::uint64_t perSlot = llLinesPerSlot(fifo);
  for (int m = 0; m < count; ++m) {
    __syncthreads();
    if (threadIdx.x == 0) {
      const Status status = receiver.waitLine(0, &size, deadline);
      if (status == Status::Ok) receiver.consume(1);
      else failed = static_cast<std::uint32_t>(status);
    }
    __syncthreads();
    if (failed != 0) break;
    const std::uint32_t bytes = size;
    const std::uint64_t total = llMessageLines(bytes) - 1;  // data lines
    for (std::uint64_t done = 0; done < total;) {
      const std::uint64_t toSlotEnd = perSlot - receiver.receivedLines() % perSlot;
      std::uint64_t chunk = total - done < toSlotEnd ? total - done : toSlotEnd;
      chunk = chunk < blockDim.x ? chunk : blockDim.x;
      if (threadIdx.x < chunk) {
        std::uint32_t word = 0;
        const Status status = receiver.waitLine(threadIdx.x, &word, deadline);
        if (status != Status::Ok) {
          atomicMax(&failed, static_cast<std::uint32_t>(status));
        } else {
          const std::uint64_t at = (done + threadIdx.x) * kLLDataBytes;
          const std::uint64_t n = bytes - at < kLLDataBytes ? bytes - at : kLLDataBytes;
          std::memcpy(out + at, &word, n);
        }
      }
      __syncthreads();  // every line of the chunk read before its credits go back
      if (failed != 0) break;
      if (threadIdx.x == 0) receiver.consume(chunk);
      done += chunk;
      __syncthreads();  // everyone sees the new position
    }
    if (failed != 0) break;
    if (threadIdx.x == 0) sizes[m] = bytes;
    out += bytes;
  }
  if (threadIdx.x == 0) *result = static_cast<Status>(failed);
}

// The message calls from a single thread, both protocols, both sides.
__global__ void simpleSingle(FifoHandle fifo, bool send, char* buffer, std::uint32_t bytes,
                             std::uint64_t timeoutNs, Status* result) {
  const std::uint64_t deadline = DeviceOrdering::now() + timeoutNs;
  std::size_t got = 0;
  *result = send ? Simple(fifo).send(buffer, bytes, deadline) : SimpleIn(fifo).recv(buffer, bytes, &got, deadline);
}
__global__ void llSingle(FifoHandle fifo, bool send, char* buffer, std::uint32_t bytes, std::uint64_t timeoutNs,
                         Status* result) {
  const std::uint64_t deadline = DeviceOrdering::now() + timeoutNs;
  std::size_t got = 0;
  *result = send ? LL(fifo).send(buffer, bytes, deadline) : LLIn(fifo).recv(buffer, bytes, &got, deadline);
}

}  // namespace hora::protocols::device_check
