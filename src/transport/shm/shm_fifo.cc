#include "transport/shm/shm_fifo.h"

#include <algorithm>
#include <cstring>

namespace hora::transport {

std::size_t ShmFifo::push(const char* src, std::size_t bytes) {
  std::size_t room;
  char* region = writeRegion(&room, bytes);
  const std::size_t n = std::min(bytes, room);
  if (n == 0) return 0;
  std::memcpy(region, src, n);
  commitWrite(n);
  return n;
}

std::size_t ShmFifo::pop(char* dst, std::size_t bytes) {
  std::size_t ready;
  const char* region = readRegion(&ready);
  const std::size_t n = std::min(bytes, ready);
  if (n == 0) return 0;
  std::memcpy(dst, region, n);
  commitRead(n);
  return n;
}

}  // namespace hora::transport
