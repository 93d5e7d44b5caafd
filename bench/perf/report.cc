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

// Column layout shared by the header and the rows, as nccl-tests prints
// them: the row description is 52 characters wide, each result block 33.
constexpr const char* kDescriptionColumns = "%12s  %12s  %8s  %6s  %6s";
constexpr const char* kResultColumns = "  %7s  %6s  %6s  %6s";
constexpr const char* kSpreadColumns = "  %8s %8s  %8s %8s";

// `value` in `width` characters with as many of two decimals as fit, then
// in exponent form, as nccl-tests' getFloatStr: 193.30, 12345.6, 1234.5.
std::string fitted(double value, int width) {
  char text[32];
  for (const char* pattern : {"%*.2f", "%*.1f", "%*.0f"}) {
    if (std::snprintf(text, static_cast<std::size_t>(width) + 1, pattern, width, value) <= width) return text;
  }
  std::snprintf(text, static_cast<std::size_t>(width) + 1, width >= 7 ? "%*.1e" : "%*.0e", width, value);
  return text;
}

}  // namespace

std::string optionsLine(const Options& options) {
  const bool geometric = options.sizes.stepFactor > 1;
  const std::string step = geometric ? std::to_string(options.sizes.stepFactor) + "(factor)"
                                     : std::to_string(options.sizes.stepBytes) + "(bytes)";
  static constexpr const char* kBlocking[] = {
      "",
      "# Blocking Enabled: wait and barrier after each inner iteration (-m) \n",
      "# Blocking Enabled: wait after each inner iteration (-m), no barrier \n",
      "# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes barrier \n",
  };
  return format(
             "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %s warmup iters: %d iters: %d "
             "agg iters: %d validation: %d graph: 0 unalign: %d\n",
             options.threads, options.ranksPerThread, options.sizes.minBytes, options.sizes.maxBytes, step.c_str(),
             options.warmupIters, options.iters, options.aggIters, options.checkIters, options.unalign) +
         kBlocking[options.blocking];
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
  // nccl-tests' lines, "# " then the first column two narrower; each ends
  // in a space where nccl-tests leaves room for its timestamp column.
  std::string header = "# " + format(kDescriptionColumns, "", "", "", "", "").substr(2) +
                       "           out-of-place                       in-place          ";
  if (sweeps > 1) header += format("time over %d sweeps", sweeps);
  std::string names = "# " + format(kDescriptionColumns, "size", "count", "type", "redop", "root").substr(2) +
                      format(kResultColumns, "time", "algbw", "busbw", "#wrong") +
                      format(kResultColumns, "time", "algbw", "busbw", "#wrong");
  std::string units = "# " + format(kDescriptionColumns, "(B)", "(elements)", "", "", "").substr(2) +
                      format(kResultColumns, "(us)", "(GB/s)", "(GB/s)", "") +
                      format(kResultColumns, "(us)", "(GB/s)", "(GB/s)", "");
  if (sweeps > 1) {
    names += format(kSpreadColumns, "oop-min", "oop-max", "ip-min", "ip-max");
    units += format(kSpreadColumns, "(us)", "(us)", "(us)", "(us)");
  } else {
    names += " ";
    units += " ";
  }
  return header + "\n" + names + "\n" + units + "\n";
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

std::string formatMicroseconds(double microseconds) { return fitted(microseconds, 7); }

std::string placeColumns(const PlaceResult& result) {
  const std::string time = formatMicroseconds(result.seconds * 1.0e6);
  const std::string algbw = fitted(result.algbw, 6);
  const std::string busbw = fitted(result.busbw, 6);
  if (!result.wrong) return format("  %7s  %6s  %6s    N/A", time.c_str(), algbw.c_str(), busbw.c_str());
  return format("  %7s  %6s  %6s  %6g", time.c_str(), algbw.c_str(), busbw.c_str(),
                static_cast<double>(*result.wrong));
}

bool meetsMinBusbw(double averageBusbw, std::optional<double> minBusbw) {
  return !minBusbw || averageBusbw >= 0.9 * *minBusbw;
}

std::string summaryLines(long long failedChecks, double averageBusbw, std::optional<double> minBusbw) {
  const char* verdict = !minBusbw ? "" : meetsMinBusbw(averageBusbw, minBusbw) ? "OK" : "FAILED";
  return format("# Out of bounds values : %lld %s\n", failedChecks, failedChecks == 0 ? "OK" : "FAILED") +
         format("# Avg bus bandwidth    : %g %s\n", averageBusbw, verdict) + "#\n";
}

}  // namespace hora::perf
