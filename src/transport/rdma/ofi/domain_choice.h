// Which libfabric domain a rank opens first, among those a provider
// offers: plain functions of names, so that they are tested without a
// provider that has several.
//
// Hardware providers offer a domain per NIC, named after it ("mlx5_0" for
// verbs; efa adds what it offers on it, "rdmap16s27-rdm"), and the
// topology names the same NICs (topology::rdmaNicsNearest, nearest the
// rank's CPUs first). A rank takes the domain of its nearest NIC, as
// NCCL's network plugins do: with one process per GPU, each bound near
// its GPU, the ranks then spread over the host's NICs instead of all
// sending through the first one libfabric lists.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace hora::transport::rdma::ofi {

// Whether `domain` is the provider's domain on NIC `nic`: its name, or
// its name and a suffix after '-'.
bool domainOnNic(const std::string& domain, const std::string& nic);

// How much this rank wants `domain` (lower first): the one named
// `preferred` (HORA_OFI_DOMAIN, else the bootstrap's interface, which tcp
// names its domains after), then those on `nearest` NICs in that order,
// then any other but loopback, then loopback (which peers on other hosts
// cannot reach).
std::size_t domainPreference(const std::string& domain, const std::string& preferred,
                             const std::vector<std::string>& nearest);

}  // namespace hora::transport::rdma::ofi
