#include "transport/rdma/ofi/ofi_device.h"

#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>

#include "base/env.h"
#include "base/error.h"
#include "base/log.h"
#include "transport/rdma/multi_rail.h"
#include "transport/rdma/ofi/domain_choice.h"
#include "transport/rdma/ofi/ofi_queue_pair.h"

namespace hora::transport::rdma::ofi {

bool isHardwareProvider(std::string_view provider) {
  // Layered names ("verbs;ofi_rxm") are named after the core provider.
  const std::string_view core = provider.substr(0, provider.find(';'));
  constexpr std::array<std::string_view, 6> kHardware = {"efa", "cxi", "verbs", "psm2", "psm3", "opx"};
  for (std::string_view name : kHardware)
    if (core == name) return true;
  return false;
}

namespace {
// Every progress thread, so that exit can stop them before libfabric's
// destructors run (atexit handlers registered after the library was
// loaded run before it is finalized).
std::mutex threadsMutex;
std::vector<ProgressThread*>& allThreads() {
  static auto* threads = new std::vector<ProgressThread*>();
  return *threads;
}
void stopAllAtExit() {
  std::lock_guard<std::mutex> lock(threadsMutex);
  for (ProgressThread* thread : allThreads()) thread->stop();
}
constexpr std::chrono::milliseconds kProgressPeriod{1};
}  // namespace

ProgressThread::ProgressThread() {
  {
    std::lock_guard<std::mutex> lock(threadsMutex);
    static const bool registered = (std::atexit(stopAllAtExit), true);
    (void)registered;
    allThreads().push_back(this);
  }
  thread_ = std::thread([this] { run(); });
}

ProgressThread::~ProgressThread() {
  stop();
  std::lock_guard<std::mutex> lock(threadsMutex);
  auto& threads = allThreads();
  threads.erase(std::remove(threads.begin(), threads.end(), this), threads.end());
}

void ProgressThread::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void ProgressThread::attach(OfiQueuePair* queuePair) {
  std::lock_guard<std::mutex> lock(mutex_);
  queuePairs_.push_back(queuePair);
}

void ProgressThread::detach(OfiQueuePair* queuePair) {
  std::lock_guard<std::mutex> lock(mutex_);  // waits out a progress call on it
  queuePairs_.erase(std::remove(queuePairs_.begin(), queuePairs_.end(), queuePair), queuePairs_.end());
}

void ProgressThread::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, kProgressPeriod);
    if (stopping_) break;
    for (OfiQueuePair* queuePair : queuePairs_) queuePair->progressIfUnattended();
  }
}

OfiDevice::OfiDevice(const FabricLibrary& library, fi_info* info) : library_(library), info_(info) {
  int rc = library_.fabric(info_->fabric_attr, &fabric_, nullptr);
  if (rc != 0) fail(ErrorKind::System, "ofi: ", library_.explain("fi_fabric", rc));
  rc = fi_domain(fabric_, info_, &domain_, nullptr);
  if (rc != 0) {
    fi_close(&fabric_->fid);
    fail(ErrorKind::System, "ofi: ", library_.explain("fi_domain", rc));
  }
}

OfiDevice::~OfiDevice() {
  if (domain_ != nullptr) fi_close(&domain_->fid);
  if (fabric_ != nullptr) fi_close(&fabric_->fid);
  library_.freeinfo(info_);
}

std::string OfiDevice::name() const {
  return strCat("libfabric provider ", info_->fabric_attr->prov_name, " (domain ", info_->domain_attr->name, ")");
}

std::unique_ptr<QueuePair> OfiDevice::createQueuePair() {
  return std::make_unique<OfiQueuePair>(shared_from_this());
}

std::uint64_t OfiDevice::nextKey() { return nextKey_.fetch_add(1); }

namespace {

// What the credit protocol needs of a provider, as fi_getinfo hints.
fi_info* protocolHints(const FabricLibrary& library) {
  fi_info* hints = library.dupinfo(nullptr);
  HORA_ENFORCE(hints != nullptr, "ofi: fi_dupinfo could not allocate hints");
  hints->caps = FI_MSG | FI_RMA | FI_WRITE | FI_REMOTE_WRITE | FI_SEND | FI_RECV;
  // Contexts: every operation passes a fi_context2 of its own.
  hints->mode = FI_CONTEXT | FI_CONTEXT2 | FI_RX_CQ_DATA;
  hints->ep_attr->type = FI_EP_RDM;
  // A write with immediate (a send with remote CQ data) must land after
  // the write before it: send-after-write ordering.
  hints->tx_attr->msg_order = FI_ORDER_SAW | FI_ORDER_WAW;
  hints->rx_attr->msg_order = FI_ORDER_SAW | FI_ORDER_WAW;
  // Registration modes hora can work with (ofi_queue_pair.cc honours each).
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  // Ranks that are threads of one process share the domain.
  hints->domain_attr->threading = FI_THREAD_SAFE;
  if (auto provider = env::get({"HORA_OFI_PROVIDER", "FI_PROVIDER"}))
    hints->fabric_attr->prov_name = ::strdup(provider->c_str());
  return hints;
}

}  // namespace

namespace {
// The answer to take among fi_getinfo's: the acceptable one this rank
// wants most (domain_choice.h), libfabric's order (fastest first) among
// equals.
fi_info* chooseInfo(fi_info* found, bool allowSoftware, const std::string& preferred,
                    const std::vector<std::string>& nearest, std::string& skipped) {
  fi_info* best = nullptr;
  std::size_t bestRank = 0;
  for (fi_info* info = found; info != nullptr; info = info->next) {
    const std::string provider = info->fabric_attr->prov_name;
    if (!allowSoftware && !isHardwareProvider(provider)) {
      if (skipped.find(provider) == std::string::npos) skipped += (skipped.empty() ? "" : ", ") + provider;
      continue;
    }
    const std::string domain = info->domain_attr->name != nullptr ? info->domain_attr->name : "";
    const std::size_t rank = domainPreference(domain, preferred, nearest);
    if (best == nullptr || rank < bestRank) {
      best = info;
      bestRank = rank;
    }
  }
  return best;
}
}  // namespace

namespace {

std::string domainOf(const fi_info& info) {
  return info.domain_attr->name != nullptr ? info.domain_attr->name : "";
}
std::string fabricOf(const fi_info& info) {
  return info.fabric_attr->name != nullptr ? info.fabric_attr->name : "";
}

// The rails besides `first` among the provider's answers `found` (see
// openOfiDevice): one per wanted domain, in the order wanted.
std::vector<std::shared_ptr<OfiDevice>> openFurtherRails(const FabricLibrary& library, fi_info* found,
                                                          const fi_info& first,
                                                          const std::vector<std::string>& nearestNics) {
  const std::optional<std::vector<std::string>> listed = env::getList({"HORA_OFI_RAILS"});
  const std::vector<std::string>& wanted = listed ? *listed : nearestNics;
  const std::string provider = first.fabric_attr->prov_name;
  std::vector<std::shared_ptr<OfiDevice>> rails;
  std::vector<std::string> taken{domainOf(first)};
  for (const std::string& domain : wanted) {
    if (std::find(taken.begin(), taken.end(), domain) != taken.end()) continue;
    fi_info* match = nullptr;
    for (fi_info* info = found; info != nullptr && match == nullptr; info = info->next)
      if (provider == info->fabric_attr->prov_name && (listed ? domainOf(*info) == domain : domainOnNic(domainOf(*info), domain)))
        match = info;
    if (match == nullptr) {
      if (listed) HORA_LOG(Info, "ofi: HORA_OFI_RAILS names ", domain, ", which provider ", provider, " does not offer");
      continue;
    }
    // A NIC on another fabric could not reach the peers the first reaches;
    // rails a user lists are taken as given.
    if (!listed && fabricOf(*match) != fabricOf(first)) {
      HORA_LOG(Info, "ofi: ", domain, " is as near as ", domainOf(first), " but on another fabric: not a rail");
      continue;
    }
    try {
      rails.push_back(std::make_shared<OfiDevice>(library, library.dupinfo(match)));
      taken.push_back(domain);
    } catch (const Error& error) {
      HORA_LOG(Info, "ofi: the rail ", domain, " did not open: ", error.what());
    }
  }
  return rails;
}

}  // namespace

OfiOpening openOfiDevice(bool allowSoftware, const std::string& interfaceName, const std::vector<std::string>& railNics,
                         const std::vector<std::string>& nearestNics) {
  OfiOpening opening;
  const FabricLibrary* library = fabricLibrary(opening.why);
  if (library == nullptr) return opening;
  fi_info* hints = protocolHints(*library);
  fi_info* found = nullptr;
  const int rc = library->getinfo(FI_VERSION(1, 5), nullptr, nullptr, 0, hints, &found);
  library->freeinfo(hints);
  if (rc != 0 || found == nullptr) {
    opening.why = strCat("no libfabric provider offers reliable datagrams with ordered RMA writes (",
                         library->explain("fi_getinfo", rc), ")");
    return opening;
  }
  std::string skipped;
  // HORA_OFI_DOMAIN names the domain (a NIC: "mlx5_0", "efa0"; an
  // interface for tcp); else the bootstrap's interface is preferred.
  const std::string preferred = env::get({"HORA_OFI_DOMAIN"}).value_or(interfaceName);
  fi_info* best = chooseInfo(found, allowSoftware, preferred, nearestNics, skipped);
  if (best == nullptr) {
    library->freeinfo(found);
    opening.why = strCat("only software providers (", skipped,
                         "), which hora's tcp transport outruns; HORA_TRANSPORT=ofi uses them anyway");
    return opening;
  }
  const std::string domain = best->domain_attr->name != nullptr ? best->domain_attr->name : "";
  if (auto asked = env::get({"HORA_OFI_DOMAIN"}); asked && *asked != domain)
    HORA_LOG(Warn, "HORA_OFI_DOMAIN names ", *asked, ", which provider ", best->fabric_attr->prov_name,
             " does not offer; using domain ", domain);
  if (domain == "lo" && !interfaceName.empty() && interfaceName != "lo") {
    // Only loopback: peers on other hosts could not reach this address.
    opening.why = strCat("provider ", best->fabric_attr->prov_name, " offers no domain on interface ", interfaceName,
                         ", only loopback");
    library->freeinfo(found);
    return opening;
  }
  fi_info* chosen = library->dupinfo(best);
  try {
    opening.device = std::make_shared<OfiDevice>(*library, chosen);
  } catch (const Error& error) {
    opening.why = error.what();
  }
  if (opening.device) opening.moreRails = openFurtherRails(*library, found, *best, railNics);
  library->freeinfo(found);
  return opening;
}

void prepareOfi(bool forced, bool disabled, const std::string& interfaceName, const std::vector<std::string>& railNics,
                const std::vector<std::string>& nearestNics) {
  installOnce(TransportKind::Ofi, disabled, [&](std::string& why) -> std::shared_ptr<Device> {
    OfiOpening opening = openOfiDevice(/*allowSoftware=*/forced, interfaceName, railNics, nearestNics);
    why = opening.why;
    return combineRails(opening.device, opening.moreRails);
  });
}

}  // namespace hora::transport::rdma::ofi
