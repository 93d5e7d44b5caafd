#include "support/stranger.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

namespace hora::test_support {

namespace {

// The 16 bytes every hora connection starts with (greeting.h).
struct Greeting {
  std::uint64_t magic;
  std::uint16_t version;
  std::uint16_t purpose;
  std::uint32_t bodyBytes;
};
constexpr std::uint16_t kWireVersion = 3;

int connectTo(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    throw std::runtime_error("a stranger could not connect to port " + std::to_string(port));
  }
  return fd;
}

void sendBytes(int fd, const void* data, std::size_t bytes) {
  if (::send(fd, data, bytes, MSG_NOSIGNAL) != static_cast<ssize_t>(bytes))
    throw std::runtime_error("a stranger could not send its bytes");
}

}  // namespace

std::string kindName(StrangerKind kind) {
  switch (kind) {
    case StrangerKind::ConnectAndClose: return "ConnectAndClose";
    case StrangerKind::RandomBytes: return "RandomBytes";
    case StrangerKind::Silent: return "Silent";
    case StrangerKind::HugeLength: return "HugeLength";
    case StrangerKind::WrongMagic: return "WrongMagic";
    case StrangerKind::Reset: return "Reset";
  }
  return "?";
}

std::string listenerName(Listener listener) {
  switch (listener) {
    case Listener::Root: return "Root";
    case Listener::Ring: return "Ring";
    case Listener::Transport: return "Transport";
  }
  return "?";
}

Stranger::Stranger(StrangerKind kind, int port, Listener listener, std::uint64_t magic)
    : fd_(connectTo(port)) {
  const auto purpose = static_cast<std::uint16_t>(listener);
  switch (kind) {
    case StrangerKind::ConnectAndClose:
      ::close(fd_);
      fd_ = -1;
      break;
    case StrangerKind::RandomBytes: {
      std::mt19937 random(port);
      std::vector<unsigned char> junk(64);
      for (auto& byte : junk) byte = static_cast<unsigned char>(random());
      sendBytes(fd_, junk.data(), junk.size());
      break;
    }
    case StrangerKind::Silent:
      break;
    case StrangerKind::HugeLength: {
      Greeting greeting{magic, kWireVersion, purpose, 0xffffffffu};
      sendBytes(fd_, &greeting, sizeof(greeting));
      break;
    }
    case StrangerKind::WrongMagic: {
      // Followed by enough zeroes to fill any message that may follow, so
      // that only the secret tells it apart.
      Greeting greeting{magic ^ 0x5a5a5a5a5a5a5a5aull, kWireVersion, purpose, 0};
      std::vector<unsigned char> bytes(sizeof(greeting) + 1024, 0);
      std::memcpy(bytes.data(), &greeting, sizeof(greeting));
      sendBytes(fd_, bytes.data(), bytes.size());
      break;
    }
    case StrangerKind::Reset: {
      linger abortive{1, 0};  // close() sends RST instead of FIN
      ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &abortive, sizeof(abortive));
      ::close(fd_);
      fd_ = -1;
      break;
    }
  }
}

Stranger::~Stranger() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace hora::test_support
