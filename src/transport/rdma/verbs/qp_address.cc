#include "transport/rdma/verbs/qp_address.h"

#include <cstring>

#include "base/error.h"

namespace hora::transport::rdma::verbs {

namespace {

constexpr std::uint8_t kFormat = 1;
constexpr std::size_t kBytes = 1 + 1 + 1 + 2 + 4 + 4 + 16;

template <typename Integer>
void put(std::vector<char>& out, Integer value) {
  for (std::size_t i = 0; i < sizeof(Integer); ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

template <typename Integer>
Integer take(const char*& in) {
  Integer value = 0;
  for (std::size_t i = 0; i < sizeof(Integer); ++i)
    value |= static_cast<Integer>(static_cast<Integer>(static_cast<std::uint8_t>(*in++)) << (8 * i));
  return value;
}

}  // namespace

std::vector<char> serialize(const QpAddress& address) {
  std::vector<char> out;
  out.reserve(kBytes);
  put<std::uint8_t>(out, kFormat);
  put<std::uint8_t>(out, static_cast<std::uint8_t>(address.linkLayer));
  put<std::uint8_t>(out, address.mtu);
  put<std::uint16_t>(out, address.lid);
  put<std::uint32_t>(out, address.qpNumber);
  put<std::uint32_t>(out, address.psn);
  out.insert(out.end(), address.gid.begin(), address.gid.end());
  return out;
}

QpAddress parseQpAddress(const std::vector<char>& bytes, const char* peer) {
  if (bytes.size() != kBytes || static_cast<std::uint8_t>(bytes[0]) != kFormat)
    fail(ErrorKind::Remote, "verbs: ", peer, " sent a queue pair address of ", bytes.size(), " bytes, format ",
         bytes.empty() ? -1 : static_cast<int>(static_cast<std::uint8_t>(bytes[0])), " (expected ", kBytes,
         " bytes, format ", static_cast<int>(kFormat), "): a different hora version?");
  const char* in = bytes.data() + 1;
  QpAddress address;
  const auto layer = take<std::uint8_t>(in);
  address.mtu = take<std::uint8_t>(in);
  address.lid = take<std::uint16_t>(in);
  address.qpNumber = take<std::uint32_t>(in);
  address.psn = take<std::uint32_t>(in);
  std::memcpy(address.gid.data(), in, address.gid.size());
  if (layer > static_cast<std::uint8_t>(LinkLayer::Ethernet) || address.mtu < 1 ||
      address.mtu > 5)  // IBV_MTU_256 ... IBV_MTU_4096
    fail(ErrorKind::Remote, "verbs: ", peer, " sent a queue pair address with link layer ", static_cast<int>(layer),
         " and MTU code ", static_cast<int>(address.mtu));
  address.linkLayer = static_cast<LinkLayer>(layer);
  return address;
}

}  // namespace hora::transport::rdma::verbs
