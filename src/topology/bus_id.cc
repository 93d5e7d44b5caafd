#include "topology/bus_id.h"

#include <cstdio>
#include <vector>

namespace hora::topology {

namespace {

// Parses one hex field of at most maxDigits digits; false if empty or too long.
bool parseHexField(std::string_view text, std::size_t maxDigits, unsigned& value) {
  if (text.empty() || text.size() > maxDigits) return false;
  unsigned result = 0;
  for (char c : text) {
    int digit;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    else return false;
    result = result * 16 + static_cast<unsigned>(digit);
  }
  value = result;
  return true;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

}  // namespace

std::optional<PciAddress> parseBusId(std::string_view text) {
  PciAddress address;
  std::string_view slotAndFunction;
  auto fields = split(text, ':');
  if (fields.size() == 3) {
    if (!parseHexField(fields[0], 8, address.domain)) return std::nullopt;
    fields.erase(fields.begin());
  }
  if (fields.size() != 2) return std::nullopt;
  if (!parseHexField(fields[0], 2, address.bus)) return std::nullopt;
  slotAndFunction = fields[1];
  auto dot = slotAndFunction.find('.');
  if (!parseHexField(slotAndFunction.substr(0, dot), 2, address.device)) return std::nullopt;
  if (address.device > 0x1f) return std::nullopt;
  if (dot != std::string_view::npos) {
    if (!parseHexField(slotAndFunction.substr(dot + 1), 1, address.function)) return std::nullopt;
    if (address.function > 7) return std::nullopt;
  }
  return address;
}

std::string formatBusId(const PciAddress& address) {
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.%x", address.domain, address.bus,
                address.device, address.function);
  return text;
}

std::optional<std::string> canonicalBusId(std::string_view text) {
  auto address = parseBusId(text);
  if (!address) return std::nullopt;
  return formatBusId(*address);
}

}  // namespace hora::topology
