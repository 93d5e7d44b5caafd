#include "report.h"

#include <cstdarg>
#include <cstdio>

#include "collectives.h"

namespace hora::perf {
namespace {

// snprintf into a std::string; every line here is short.
std::string format(const char* pattern, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* pattern, ...) {
  char line[512];
  va_list args;
  va_start(args, pattern);
  std::vsnprintf(line, sizeof(line), pattern, args);
  va_end(args);
  return line;
}

// Column layout shared by the header and the rows. The row description is
// 52 characters wide, each result block 32.
constexpr const char* kDescriptionColumns = "%12s  %12s  %8s  %6s  %6s";
constexpr const char* kResultColumns = "  %7s  %6s  %6s %6s";
constexpr const char* kSpreadColumns = "  %8s %8s  %8s %8s";

}  // namespace

std::string optionsLine(const Options& options) {
  const bool geometric = options.sizes.stepFactor > 1;
  const std::string step = geometric ? std::to_string(options.sizes.stepFactor) + "(factor)"
                                     : std::to_string(options.sizes.stepBytes) + "(bytes)";
  return format(
      "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %s warmup iters: %d iters: %d "
      "agg iters: %d validation: %d graph: 0\n",
      options.threads, options.ranksPerThread, options.sizes.minBytes, options.sizes.maxBytes, step.c_str(),
      options.warmupIters, options.iters, options.aggIters, options.checkIters) +
         (options.blocking ? "# Blocking Enabled: wait for completion and barrier after each collective \n" : "");
}

std::string programName(const Options& options) {
  return std::string(collectiveInfo(options.collective).name) + "_perf";
}

std::string rankLine(int rank, long pid, const std::string& host, int device, const std::string& deviceName) {
  if (device < 0) return format("#  Rank %2d Group  0 Pid %6ld on %10s device  host\n", rank, pid, host.c_str());
  return format("#  Rank %2d Group  0 Pid %6ld on %10s device %2d %s\n", rank, pid, host.c_str(), device,
                deviceName.c_str());
}

std::string tableHeader(int sweeps) {
  // The place names sit over their blocks as in nccl-tests.
  // The first column is one narrower so that the leading '#' keeps it in line.
  std::string header = "#";
  header.append(62, ' ').append("out-of-place").append(23, ' ').append("in-place");
  if (sweeps > 1) header.append(9, ' ').append(format("time over %d sweeps", sweeps));
  header += "\n#";
  header += format(kDescriptionColumns, "size", "count", "type", "redop", "root").substr(1);
  header += format(kResultColumns, "time", "algbw", "busbw", "#wrong");
  header += format(kResultColumns, "time", "algbw", "busbw", "#wrong");
  if (sweeps > 1) header += format(kSpreadColumns, "oop-min", "oop-max", "ip-min", "ip-max");
  std::string units = "#";
  units += format(kDescriptionColumns, "(B)", "(elements)", "", "", "").substr(1);
  units += format(kResultColumns, "(us)", "(GB/s)", "(GB/s)", "");
  units += format(kResultColumns, "(us)", "(GB/s)", "(GB/s)", "");
  if (sweeps > 1) units += format(kSpreadColumns, "(us)", "(us)", "(us)", "(us)");
  units.erase(units.find_last_not_of(' ') + 1);
  return header + "\n" + units + "\n";
}

std::string spreadColumns(const PlaceSpread& outOfPlace, const PlaceSpread& inPlace) {
  auto time = [](double seconds) { return formatMicroseconds(seconds * 1.0e6); };
  return format(kSpreadColumns, time(outOfPlace.minSeconds).c_str(), time(outOfPlace.maxSeconds).c_str(),
                time(inPlace.minSeconds).c_str(), time(inPlace.maxSeconds).c_str());
}

std::string rowPrefix(std::size_t bytes, std::size_t count, const char* typeName, const char* redopName,
                      int root) {
  return format("%12zu  %12zu  %8s  %6s  %6d", bytes, count, typeName, redopName, root);
}

std::string formatMicroseconds(double microseconds) {
  if (microseconds > 10000.0) return format("%.0f", microseconds);
  if (microseconds > 100.0) return format("%.1f", microseconds);
  return format("%.2f", microseconds);
}

std::string placeColumns(const PlaceResult& result) {
  const std::string wrong = result.wrong ? std::to_string(*result.wrong) : "N/A";
  return format("  %7s  %6.2f  %6.2f %6s", formatMicroseconds(result.seconds * 1.0e6).c_str(), result.algbw,
                result.busbw, wrong.c_str());
}

bool meetsMinBusbw(double averageBusbw, std::optional<double> minBusbw) {
  return !minBusbw || averageBusbw >= 0.9 * *minBusbw;
}

std::string summaryLines(long long wrongElements, double averageBusbw, std::optional<double> minBusbw) {
  const char* verdict = !minBusbw ? "" : meetsMinBusbw(averageBusbw, minBusbw) ? " OK" : " FAILED";
  return format("# Out of bounds values : %lld %s\n", wrongElements, wrongElements == 0 ? "OK" : "FAILED") +
         format("# Avg bus bandwidth    : %g%s\n", averageBusbw, verdict) + "#\n";
}

}  // namespace hora::perf
