#include "transport/rdma/ofi/domain_choice.h"

namespace hora::transport::rdma::ofi {

bool domainOnNic(const std::string& domain, const std::string& nic) {
  if (nic.empty() || domain.compare(0, nic.size(), nic) != 0) return false;
  return domain.size() == nic.size() || domain[nic.size()] == '-';
}

std::size_t domainPreference(const std::string& domain, const std::string& preferred,
                             const std::vector<std::string>& nearest) {
  if (!preferred.empty() && domain == preferred) return 0;
  for (std::size_t i = 0; i < nearest.size(); ++i)
    if (domainOnNic(domain, nearest[i])) return 1 + i;
  return domain != "lo" ? 1 + nearest.size() : 2 + nearest.size();
}

}  // namespace hora::transport::rdma::ofi
