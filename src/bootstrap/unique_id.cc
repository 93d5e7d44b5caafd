#include "bootstrap/unique_id.h"

#include <arpa/inet.h>

#include <cstring>
#include <random>

#include "base/env.h"
#include "base/error.h"
#include "base/log.h"
#include "bootstrap/root_server.h"

namespace hora::bootstrap {

namespace {
constexpr char kSignature[4] = {'H', 'O', 'R', 'A'};
constexpr std::uint32_t kFormat = 1;

// Layout of the 128 bytes (all integers little-endian as written by this host):
//   0  signature "HORA"   4  format   8  magic
//   16 address family     18 port (network order)   20 address (4 or 16 bytes)
struct Packed {
  char signature[4];
  std::uint32_t format;
  std::uint64_t magic;
  std::uint16_t family;
  std::uint16_t portNetworkOrder;
  unsigned char address[16];
};
static_assert(sizeof(Packed) <= kUniqueIdBytes);

std::uint64_t hashText(const std::string& text) {
  std::uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

std::optional<env::Variable> commIdVariable() { return env::find({"HORA_COMM_ID", "NCCL_COMM_ID"}); }
}  // namespace

void encode(const UniqueId& id, char (&bytes)[kUniqueIdBytes]) {
  std::memset(bytes, 0, kUniqueIdBytes);
  Packed packed{};
  std::memcpy(packed.signature, kSignature, 4);
  packed.format = kFormat;
  packed.magic = id.magic;
  packed.family = static_cast<std::uint16_t>(id.root.family());
  if (id.root.family() == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(id.root.storage);
    packed.portNetworkOrder = in.sin_port;
    std::memcpy(packed.address, &in.sin_addr, 4);
  } else {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(id.root.storage);
    packed.portNetworkOrder = in6.sin6_port;
    std::memcpy(packed.address, &in6.sin6_addr, 16);
  }
  std::memcpy(bytes, &packed, sizeof(packed));
}

UniqueId decode(const char (&bytes)[kUniqueIdBytes]) {
  Packed packed;
  std::memcpy(&packed, bytes, sizeof(packed));
  if (std::memcmp(packed.signature, kSignature, 4) != 0 || packed.format != kFormat ||
      (packed.family != AF_INET && packed.family != AF_INET6) || packed.portNetworkOrder == 0)
    fail(ErrorKind::InvalidArgument,
         "the ncclUniqueId is not valid (it was not made by ncclGetUniqueId, or was corrupted "
         "while being passed between processes)");
  UniqueId id;
  id.magic = packed.magic;
  if (packed.family == AF_INET) {
    auto& in = reinterpret_cast<sockaddr_in&>(id.root.storage);
    in.sin_family = AF_INET;
    in.sin_port = packed.portNetworkOrder;
    std::memcpy(&in.sin_addr, packed.address, 4);
    id.root.length = sizeof(sockaddr_in);
  } else {
    auto& in6 = reinterpret_cast<sockaddr_in6&>(id.root.storage);
    in6.sin6_family = AF_INET6;
    in6.sin6_port = packed.portNetworkOrder;
    std::memcpy(&in6.sin6_addr, packed.address, 16);
    id.root.length = sizeof(sockaddr_in6);
  }
  return id;
}

UniqueId uniqueIdForAddress(const SocketAddress& root) {
  UniqueId id;
  id.root = root;
  id.magic = hashText("hora-root:" + root.toString());
  return id;
}

bool rootHostedByRankZero() { return commIdVariable().has_value(); }

namespace {
// The root's address NCCL_COMM_ID/HORA_COMM_ID names, refused with the
// variable's name where it names none (a port of 0 would let the root
// listen anywhere, where no rank could find it).
SocketAddress commIdAddress(const env::Variable& variable) {
  const std::string& text = variable.value;
  SocketAddress address;
  try {
    address = SocketAddress::parse(text);
  } catch (const Error& error) {
    fail(ErrorKind::InvalidArgument, variable.name, "='", text, "' is not a host:port address: ", error.what());
  }
  if (address.port() == 0)
    fail(ErrorKind::InvalidArgument, variable.name, "='", text,
         "': port 0 names no port every rank can find (give one)");
  return address;
}
}  // namespace

void checkCommIdVariable() {
  if (auto fixed = commIdVariable()) (void)commIdAddress(*fixed);
}

namespace {
UniqueId startRoot(SocketAddress address, const std::string& interfaceName,
                   std::chrono::milliseconds rootTimeout = env::defaultTimeout()) {
  address.setPort(0);
  Socket listener = Socket::listen(address);
  UniqueId id;
  id.root = listener.localAddress();
  std::random_device random;
  id.magic = (static_cast<std::uint64_t>(random()) << 32) ^ random();
  HORA_LOG(Info, "bootstrap root listening at ", id.root.toString(), " (interface ",
           interfaceName, ")");
  (void)startRootServer(std::move(listener), id.magic, rootTimeout);
  return id;
}
}  // namespace

UniqueId createUniqueId() {
  if (auto fixed = commIdVariable()) return uniqueIdForAddress(commIdAddress(*fixed));
  NetworkInterface interface = chooseInterface(nullptr);
  return startRoot(interface.address, interface.name);
}

UniqueId createUniqueIdAt(const SocketAddress& address) { return startRoot(address, address.toString()); }

UniqueId createUniqueIdHere(std::chrono::milliseconds rootTimeout) {
  NetworkInterface interface = chooseInterface(nullptr);
  return startRoot(interface.address, interface.name, rootTimeout);
}

UniqueId createLocalUniqueId() {
  return startRoot(SocketAddress::resolve("127.0.0.1", 0), "loopback");
}

}  // namespace hora::bootstrap
