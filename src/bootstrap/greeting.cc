#include "bootstrap/greeting.h"

#include <cstring>
#include <vector>

namespace hora::bootstrap {

bool constantTimeEqual(const void* a, const void* b, std::size_t bytes) {
  // Accumulate every difference, never return early; volatile keeps the
  // compiler from turning the loop back into an early-exit memcmp.
  const volatile unsigned char* x = static_cast<const volatile unsigned char*>(a);
  const volatile unsigned char* y = static_cast<const volatile unsigned char*>(b);
  unsigned char difference = 0;
  for (std::size_t i = 0; i < bytes; ++i) difference |= x[i] ^ y[i];
  return difference == 0;
}

void sendGreeting(Socket& socket, std::uint64_t magic, Purpose purpose, const void* body,
                  std::size_t bodyBytes, const Deadline& deadline, const std::atomic<bool>* abort,
                  const std::string& peer) {
  Greeting greeting;
  greeting.magic = magic;
  greeting.purpose = static_cast<std::uint16_t>(purpose);
  greeting.bodyBytes = static_cast<std::uint32_t>(bodyBytes);
  // One buffer, one send: the listener gets the whole greeting in the same
  // breath as the connection, well inside its patience for strangers.
  std::vector<char> message(sizeof(greeting) + bodyBytes);
  std::memcpy(message.data(), &greeting, sizeof(greeting));
  if (bodyBytes > 0) std::memcpy(message.data() + sizeof(greeting), body, bodyBytes);
  socket.sendAll(message.data(), message.size(), deadline, abort, peer);
}

}  // namespace hora::bootstrap
