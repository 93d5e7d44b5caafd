#include "transport/rdma/verbs/hca_filter.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "base/env.h"
#include "base/error.h"

namespace hora::transport::rdma::verbs {

namespace {

bool isBlank(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::string_view trim(std::string_view text) {
  while (!text.empty() && isBlank(text.front())) text.remove_prefix(1);
  while (!text.empty() && isBlank(text.back())) text.remove_suffix(1);
  return text;
}

// Parses one `name[:port]` entry (already trimmed, not empty).
HcaFilter::Entry parseEntry(std::string_view entry, std::string_view text, std::string_view variable) {
  auto bad = [&](const auto&... why) {
    fail(ErrorKind::InvalidArgument, variable, "='", text, "': entry '", entry, "' ", why...);
  };
  const auto colon = entry.find(':');
  const std::string_view name = trim(entry.substr(0, colon));
  if (name.empty()) bad("has no device name");
  if (std::any_of(name.begin(), name.end(), isBlank)) bad("has a blank inside the device name");
  if (name.front() == '^' || name.front() == '=')
    bad("starts with '", name.front(), "', which applies to the whole list and must come first (e.g. '^=mlx5_0,mlx5_1')");

  HcaFilter::Entry parsed{std::string(name), HcaFilter::kAnyPort};
  if (colon == std::string_view::npos) return parsed;
  const std::string_view port = trim(entry.substr(colon + 1));
  int number = 0;
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), number);
  if (port.empty() || error != std::errc() || end != port.data() + port.size() || number < 1 || number > 255)
    bad("has port '", port, "', which is not a port number (1-255)");
  parsed.port = number;
  return parsed;
}

}  // namespace

HcaFilter HcaFilter::parse(std::string_view text, std::string_view variable) {
  HcaFilter filter;
  std::string_view rest = trim(text);
  if (!rest.empty() && rest.front() == '^') filter.exclude_ = true, rest.remove_prefix(1);
  if (!rest.empty() && rest.front() == '=') filter.exact_ = true, rest.remove_prefix(1);

  while (true) {
    const auto comma = rest.find(',');
    const std::string_view entry = trim(rest.substr(0, comma));
    if (!entry.empty()) filter.entries_.push_back(parseEntry(entry, text, variable));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  // An empty list would mean "allow all" to NCCL's matcher but "exclude
  // all" once negated: neither is worth guessing.
  if (filter.entries_.empty())
    fail(ErrorKind::InvalidArgument, variable, "='", text, "' names no device (expected e.g. 'mlx5_0:1,mlx5_1')");
  return filter;
}

HcaFilter HcaFilter::fromEnvironment() {
  const auto variable = env::find({"HORA_IB_HCA", "NCCL_IB_HCA"});
  return variable ? parse(variable->value, variable->name) : HcaFilter();
}

bool HcaFilter::matches(const Entry& entry, std::string_view deviceName, int port) const {
  const bool nameMatches = exact_ ? deviceName == entry.name : deviceName.starts_with(entry.name);
  return nameMatches && (entry.port == kAnyPort || entry.port == port);
}

bool HcaFilter::allows(std::string_view deviceName, int port) const {
  if (entries_.empty()) return true;
  const bool listed = std::any_of(entries_.begin(), entries_.end(),
                                  [&](const Entry& entry) { return matches(entry, deviceName, port); });
  return listed != exclude_;
}

}  // namespace hora::transport::rdma::verbs
