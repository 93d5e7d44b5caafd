#include "byte_size.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

#include "options.h"

namespace hora::perf {
namespace {

// 2^10, 2^20, 2^30 for K, M, G in either case; 0 for anything else.
double unitOf(char letter) {
  switch (std::tolower(static_cast<unsigned char>(letter))) {
    case 'k': return 1024.0;
    case 'm': return 1024.0 * 1024.0;
    case 'g': return 1024.0 * 1024.0 * 1024.0;
    default: return 0.0;
  }
}

std::string_view withoutLeadingSpaces(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  return text;
}

}  // namespace

std::size_t parseByteSize(std::string_view text, std::string_view flag) {
  const auto refuse = [&](const std::string& why) {
    throw UsageError(std::string(flag) + " size '" + std::string(text) + "' " + why);
  };
  const std::string_view number = withoutLeadingSpaces(text);
  double value = 0.0;
  const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || error == std::errc::invalid_argument || number.front() == '+')
    refuse("is not a size: give bytes, with an optional K, M or G (powers of 1024)");
  if (std::isnan(value)) refuse("is not a number");
  if (error == std::errc::result_out_of_range || std::isinf(value)) refuse("is too large");
  if (value < 0.0) refuse("is negative");

  std::string_view rest = withoutLeadingSpaces(number.substr(static_cast<std::size_t>(end - number.data())));
  double unit = 1.0;
  if (!rest.empty() && unitOf(rest.front()) != 0.0) {
    unit = unitOf(rest.front());
    rest.remove_prefix(1);
    if (rest == "iB") rest = {};
  }
  if (rest == "B") rest = {};  // "8B", "1MB"
  if (!rest.empty()) refuse("has '" + std::string(rest) + "' after its number; units are K, M, G (KB, KiB too)");

  const double bytes = std::floor(value * unit);
  // 2^64 is the first double beyond size_t.
  if (bytes >= 18446744073709551616.0) refuse("is too large");
  return static_cast<std::size_t>(bytes);
}

}  // namespace hora::perf
