// Which RDMA devices and ports the verbs backend may use: NCCL_IB_HCA (or
// HORA_IB_HCA, which wins), in NCCL's syntax, so a job script written for
// NCCL selects the same NICs under hora.
//
//   mlx5                 every device whose name starts with "mlx5", any port
//   mlx5_0:1,mlx5_1:1    port 1 of the devices starting with mlx5_0 / mlx5_1
//   =mlx5_0,mlx5_1       exactly mlx5_0 and mlx5_1 ('=' makes the whole list exact)
//   ^mlx5_2              everything except the devices starting with mlx5_2
//   ^=mlx5_0:1           everything except port 1 of exactly mlx5_0
//
// The leading '^' and '=' apply to the whole list, in that order ('^='),
// never to one entry. Prefix matching is NCCL's default and a trap worth
// knowing: "mlx5_1" also matches mlx5_10 and mlx5_11; '=' avoids it.
//
// Stricter than NCCL where NCCL silently guesses: a port that is not a
// number from 1 to 255, an entry without a device name, or a list that names
// nothing is an InvalidArgument error naming the variable and the entry.
// Empty entries ("mlx5_0,,mlx5_1", a trailing comma) are skipped and blanks
// around entries are ignored, as a hand-written list often has them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hora::transport::rdma::verbs {

class HcaFilter {
 public:
  static constexpr int kAnyPort = -1;

  struct Entry {
    std::string name;      // a prefix of the device name, or the exact name
    int port = kAnyPort;   // 1-255, or any port
  };

  // A filter that allows every device and port (the variable unset).
  HcaFilter() = default;

  // Parses `text` in NCCL_IB_HCA's syntax; `variable` names the setting in
  // error messages.
  static HcaFilter parse(std::string_view text, std::string_view variable = "NCCL_IB_HCA");

  // HORA_IB_HCA, else NCCL_IB_HCA; neither set: every device.
  static HcaFilter fromEnvironment();

  // Whether port `port` (numbered from 1) of device `deviceName` may be used.
  bool allows(std::string_view deviceName, int port) const;

  bool restricts() const { return !entries_.empty(); }
  bool excludes() const { return exclude_; }
  bool exact() const { return exact_; }
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  bool matches(const Entry& entry, std::string_view deviceName, int port) const;

  std::vector<Entry> entries_;  // empty: no filter
  bool exclude_ = false;
  bool exact_ = false;
};

}  // namespace hora::transport::rdma::verbs
