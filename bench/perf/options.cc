#include "options.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstdint>
#include <functional>
#include <limits>

#include "byte_size.h"
#include "data_types.h"

namespace hora::perf {
namespace {

// One flag of the command line: its short and long names, and what its
// value does to the options.
struct Flag {
  char shortName;
  std::string_view longName;
  bool takesValue;
  std::function<void(Options&, std::string_view value, const std::string& shown)> apply;
};

std::string shownName(const Flag& flag) {
  std::string name = "-";
  name += flag.shortName;
  name += "/--";
  name += flag.longName;
  return name;
}

// Read as nccl-tests reads its integer flags (strtol with base 0): a sign,
// then decimal, 0x hexadecimal or 0 octal digits ("010" is 8).
std::optional<long long> readInteger(std::string_view text) {
  const std::string copy(text);
  if (copy.empty() || std::isspace(static_cast<unsigned char>(copy.front()))) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(copy.c_str(), &end, 0);
  if (errno != 0 || end != copy.c_str() + copy.size()) return std::nullopt;
  return value;
}

long long parseInteger(std::string_view text, const std::string& flag, long long min, long long max) {
  const std::optional<long long> value = readInteger(text);
  if (!value) throw UsageError(flag + " takes a whole number, got '" + std::string(text) + "'");
  if (*value < min || *value > max) {
    throw UsageError(flag + " must be between " + std::to_string(min) + " and " + std::to_string(max) +
                     ", got " + std::string(text));
  }
  return *value;
}

int parseInt(std::string_view text, const std::string& flag, int min,
             int max = std::numeric_limits<int>::max()) {
  return static_cast<int>(parseInteger(text, flag, min, max));
}

std::vector<ncclRedOp_t> parseOps(std::string_view text, const std::string& flag) {
  struct Named {
    std::string_view name;
    ncclRedOp_t op;
  };
  static constexpr Named kOps[] = {
      {"sum", ncclSum}, {"prod", ncclProd}, {"max", ncclMax}, {"min", ncclMin}, {"avg", ncclAvg}};
  if (text == "all") return {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  for (const Named& named : kOps) {
    if (text == named.name) return {named.op};
  }
  throw UsageError(flag + " takes sum, prod, min, max, avg or all, got '" + std::string(text) + "'");
}

std::vector<ncclDataType_t> parseTypes(std::string_view text, const std::string& flag) {
  if (text == "all") {
    std::vector<ncclDataType_t> types;
    for (const DataTypeInfo& info : allDataTypes()) types.push_back(info.type);
    return types;
  }
  if (auto type = parseDataTypeName(text)) return {*type};
  std::string known;
  for (const DataTypeInfo& info : allDataTypes()) known += std::string(info.name) + " ";
  throw UsageError(flag + " takes a type name (" + known + "or all), got '" + std::string(text) + "'");
}

// A flag of nccl-tests that hora-perf knows but does not implement. Scripts
// often pass nccl-tests' defaults explicitly, so its "off" value `off`
// (compared as a number: "00" is 0, as nccl-tests' strtol reads it) is
// taken and does nothing; any other value is refused rather than ignored,
// so that no run silently measures something other than what was asked.
// Without `off` (-J, whose value is a file name) the flag is always refused.
Flag inertFlag(char shortName, std::string_view longName, std::optional<long long> off, const char* what) {
  return {shortName, longName, true,
          [shortName, off, what](Options&, std::string_view value, const std::string& shown) {
            if (off && readInteger(value) == off) return;
            std::string message = shown + ": hora-perf does not support nccl-tests' " + what;
            if (off) message += std::string("; only -") + shortName + " " + std::to_string(*off) + " is accepted";
            throw UsageError(message);
          }};
}

const std::vector<Flag>& flags() {
  static const std::vector<Flag> kFlags = {
      {'b', "minbytes", true,
       [](Options& o, std::string_view v, const std::string& f) { o.sizes.minBytes = parseByteSize(v, f); }},
      {'e', "maxbytes", true,
       [](Options& o, std::string_view v, const std::string& f) { o.sizes.maxBytes = parseByteSize(v, f); }},
      {'f', "stepfactor", true,
       [](Options& o, std::string_view v, const std::string& f) { o.sizes.stepFactor = parseInt(v, f, 1); }},
      {'i', "stepbytes", true,
       [](Options& o, std::string_view v, const std::string& f) { o.sizes.stepBytes = parseByteSize(v, f); }},
      {'n', "iters", true,
       [](Options& o, std::string_view v, const std::string& f) { o.iters = parseInt(v, f, 1); }},
      {'w', "warmup_iters", true,
       [](Options& o, std::string_view v, const std::string& f) { o.warmupIters = parseInt(v, f, 0); }},
      {'c', "check", true,
       [](Options& o, std::string_view v, const std::string& f) { o.checkIters = parseInt(v, f, 0); }},
      {'o', "op", true, [](Options& o, std::string_view v, const std::string& f) { o.ops = parseOps(v, f); }},
      {'d', "datatype", true,
       [](Options& o, std::string_view v, const std::string& f) { o.types = parseTypes(v, f); }},
      {'r', "root", true,
       [](Options& o, std::string_view v, const std::string& f) {
         if (v == "all" || v == "-1") {  // -1: nccl-tests' spelling of every root
           o.root.reset();
         } else {
           o.root = parseInt(v, f, 0);
         }
       }},
      {'z', "blocking", true,
       [](Options& o, std::string_view v, const std::string& f) { o.blocking = parseInt(v, f, 0, 3); }},
      {'t', "nthreads", true,
       [](Options& o, std::string_view v, const std::string& f) { o.threads = parseInt(v, f, 1, 1024); }},
      {'g', "ngpus", true,
       [](Options& o, std::string_view v, const std::string& f) {
         o.ranksPerThread = parseInt(v, f, 1, 1024);
       }},
      {'a', "average", true,
       [](Options& o, std::string_view v, const std::string& f) {
         o.average = static_cast<AverageMode>(parseInt(v, f, 0, 3));
       }},
      {'R', "local_register", true,
       [](Options& o, std::string_view v, const std::string& f) {
         o.registration = static_cast<Registration>(parseInt(v, f, 0, 2));
       }},
      {'m', "agg_iters", true,
       [](Options& o, std::string_view v, const std::string& f) { o.aggIters = parseInt(v, f, 1, 1024); }},
      {'N', "run_cycles", true,  // 0: until the process is interrupted, as in nccl-tests
       [](Options& o, std::string_view v, const std::string& f) { o.runCycles = parseInt(v, f, 0); }},
      {'u', "unalign", true,
       [](Options& o, std::string_view v, const std::string& f) {
         o.unalign = parseInt(v, f, 0, kMaxUnalignElements);
       }},
      {'s', "sweeps", true,
       [](Options& o, std::string_view v, const std::string& f) { o.sweeps = parseInt(v, f, 1, 1000); }},
      {'h', "help", false, [](Options& o, std::string_view, const std::string&) { o.showHelp = true; }},
      // nccl-tests' flags for what hora-perf does not do (see inertFlag).
      inertFlag('p', "parallel_init", 0, "communicators made from parallel threads"),
      inertFlag('y', "stream_null", 0, "launches on the default stream"),
      inertFlag('T', "timeout", 0, "watchdog time limit (hora's own is HORA_TIMEOUT)"),
      inertFlag('G', "cudagraph", 0, "CUDA-graph launches"),
      inertFlag('C', "report_cputime", 0, "CPU-time reports"),
      inertFlag('S', "report_timestamps", 0, "timestamps in the report"),
      inertFlag('J', "output_file", std::nullopt, "JSON output file (the table goes to stdout)"),
      inertFlag('x', "cta_policy", -1, "CTA policies"),
      inertFlag('D', "device_implementation", 0, "device-API implementations"),
      inertFlag('V', "device_cta_count", 16, "device-API CTA counts"),
      inertFlag('M', "memory", 0, "memory-usage report"),
      inertFlag('I', "per_iter_timing", 0, "per-iteration timing"),
      inertFlag('K', "per_iter_skip", 0, "per-iteration timing, whose first samples -K skips"),
  };
  return kFlags;
}

const Flag* findShort(char name) {
  for (const Flag& flag : flags()) {
    if (flag.shortName == name) return &flag;
  }
  return nullptr;
}

// The flag named `name` or, as getopt_long (nccl-tests' parser) allows, by
// a prefix that only one long name starts with; null when none.
const Flag* findLong(std::string_view name) {
  if (name.empty()) return nullptr;  // "--=8": every name would match
  const Flag* found = nullptr;
  std::string candidates;
  for (const Flag& flag : flags()) {
    if (flag.longName == name) return &flag;
    if (!flag.longName.starts_with(name)) continue;
    found = &flag;
    candidates += (candidates.empty() ? "--" : ", --") + std::string(flag.longName);
  }
  if (found != nullptr && candidates.find(',') != std::string::npos)
    throw UsageError("option '--" + std::string(name) + "' is ambiguous: it could be " + candidates);
  return found;
}

std::string_view baseName(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string collectiveList() {
  std::string list;
  for (const CollectiveInfo& info : allCollectives()) {
    if (!list.empty()) list += ", ";
    list += info.name;
  }
  return list;
}

// -s prints one row per size, summarising K whole sweeps; -N prints a row
// for every cycle, and with 0 never ends. Each answers "how steady is this
// figure" its own way, and a row cannot be both, so they are not combined.
void refuseSweepsWithRunCycles(const Options& options) {
  if (options.sweeps == 1 || options.runCycles == 1) return;
  throw UsageError("-s/--sweeps " + std::to_string(options.sweeps) + " and -N/--run_cycles " +
                   std::to_string(options.runCycles) +
                   " do not combine: -s prints one row per size over whole sweeps, -N a row per cycle; "
                   "give one of them");
}

}  // namespace

Options parseOptions(const std::vector<std::string>& arguments, std::string_view programName) {
  Options options;
  std::optional<Collective> collective = parseCollectiveName(baseName(programName));
  bool collectiveGiven = false;

  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const std::string& argument = arguments[i];
    const Flag* flag = nullptr;
    std::optional<std::string_view> value;
    if (argument.starts_with("--") && argument.size() > 2) {
      std::string_view name = std::string_view(argument).substr(2);
      if (const auto equals = name.find('='); equals != std::string_view::npos) {
        value = name.substr(equals + 1);
        name = name.substr(0, equals);
      }
      flag = findLong(name);
      if (flag == nullptr) throw UsageError("unknown option '--" + std::string(name) + "'");
    } else if (argument.starts_with("-") && argument.size() > 1) {
      flag = findShort(argument[1]);
      if (flag == nullptr) throw UsageError("unknown option '" + argument.substr(0, 2) + "'");
      if (argument.size() > 2) value = std::string_view(argument).substr(2);  // "-b8"
    } else {
      if (collectiveGiven) {
        throw UsageError("unexpected argument '" + argument + "': the collective was already given");
      }
      collective = parseCollectiveName(argument);
      if (!collective) {
        throw UsageError("unknown collective '" + argument + "'; choose one of " + collectiveList());
      }
      collectiveGiven = true;
      continue;
    }

    const std::string shown = shownName(*flag);
    if (!flag->takesValue) {
      if (value) throw UsageError(shown + " takes no value");
      flag->apply(options, {}, shown);
      continue;
    }
    if (!value) {
      if (i + 1 >= arguments.size()) throw UsageError(shown + " needs a value");
      value = arguments[++i];
    }
    flag->apply(options, *value, shown);
  }

  if (options.showHelp) return options;
  if (!collective) throw UsageError("no collective given; choose one of " + collectiveList());
  refuseSweepsWithRunCycles(options);
  options.collective = *collective;
  try {
    sizeSequence(options.sizes);
  } catch (const Error& error) {
    throw UsageError(error.what());
  }
  return options;
}

std::optional<double> parseMinBusbw(const char* text) {
  if (text == nullptr) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(value >= 0.0))
    throw UsageError(std::string("NCCL_TESTS_MIN_BW=") + text + " is not a bandwidth in GB/s");
  return value;
}

std::string usageText() {
  return R"(Usage: hora-perf <collective> [options]

Measures the time and bandwidth of one NCCL collective over a range of message
sizes, and checks every result. Buffers are device memory where a CUDA GPU
is usable (as nccl-tests), host memory otherwise.

Collectives: all_reduce reduce_scatter all_gather broadcast reduce sendrecv
             alltoall gather scatter (nccl-tests' names such as
             all_reduce_perf work too)

Ranks:
  -t, --nthreads N        threads in this process (default 1)
  -g, --ngpus N           ranks each thread drives in one group (default 1)
                          Under hora-run, each process is one rank and -t/-g
                          must stay 1.
Sizes:
  -b, --minbytes SIZE     smallest size (default 32M)
  -e, --maxbytes SIZE     largest size (default 32M)
  -f, --stepfactor F      multiply the size by F each step (default: off)
  -i, --stepbytes SIZE    add SIZE each step when -f is off (default 1M)
  SIZE is bytes as nccl-tests reads them: a number, which may have a fraction
  or an exponent, then optionally K, M or G (2^10, 2^20, 2^30, either case),
  which may be followed by B or iB: 8, 1.5K (1536), 1e3, 1MB, 64KiB, 8B.
  Fractions of a byte are dropped (0.3K is 307). Anything else after the
  number is refused.
Operation:
  -o, --op OP             sum, prod, min, max, avg or all (default sum)
  -d, --datatype TYPE     int8 uint8 int32 uint32 int64 uint64 half float double
                          bfloat16 f8e4m3 f8e5m2, or all (default float)
  -r, --root R            root rank of broadcast and reduce, or all (or -1) (default 0)
Measurement:
  -n, --iters N           timed iterations per size (default 20)
  -w, --warmup_iters N    untimed iterations before them (default 1)
  -c, --check N           iterations whose results are checked, 0 for none
                          (default 1)
  -a, --average M         time reported across ranks: 0 rank 0, 1 mean,
                          2 min, 3 max (default 1)
  -z, --blocking 0-3      as nccl-tests: 1 wait for each iteration's calls,
                          then every rank meets (timed); 2 wait, no meeting;
                          3 wait, and meet between iterations outside the
                          time (default 0; host collectives return complete,
                          so there only the meetings differ)
  -m, --agg_iters N       calls per iteration, in one group; times are per
                          call (default 1)
  -N, --run_cycles N      run each type's, op's and root's sizes N times over,
                          a row each time; 0: over and over until the process
                          is interrupted (default 1)
  -s, --sweeps K          hora-perf's own: run the whole sweep K times; each
                          row then shows the sweep with the median time, and
                          four more columns: the least and greatest time of
                          each place over the K sweeps (default 1; 1 to 1000;
                          not with -N other than 1)
Buffers:
  -R, --local_register R  0: plain memory (default); 1: ncclMemAlloc
                          and ncclCommRegister; 2: ncclMemAlloc and
                          ncclCommWindowRegister (symmetric windows: ranks
                          of one host then work in each other's buffers)
  -u, --unalign N         both buffers start N elements past their allocation,
                          so they are aligned to the element only; results
                          are checked there too (0 to 1024, default 0)
  -h, --help              print this text

Long options take their value after a space or '=', and may be shortened to
any prefix only one of them starts with (--minb 8, --iter=5).

nccl-tests' other flags are known, but hora-perf does not do what they ask:
each takes only its "off" value below, and then does nothing, so that
scripts that pass the defaults run; any other value is refused.
  -p, --parallel_init 0        -y, --stream_null 0
  -T, --timeout 0              -G, --cudagraph 0
  -C, --report_cputime 0       -S, --report_timestamps 0
  -x, --cta_policy -1          -D, --device_implementation 0
  -V, --device_cta_count 16    -M, --memory 0
  -I, --per_iter_timing 0      -K, --per_iter_skip 0
  -J, --output_file: always refused (the table goes to stdout)

Environment:
  HORA_PERF_MEMORY=host|device  host buffers even with a GPU, or insist on
                          device buffers
  HORA_PERF_DEVICE=N      every rank of this process on GPU N (hora lets
                          ranks share a GPU)
  NCCL_TESTS_DEVICE=N     as in nccl-tests: rank i of this process on GPU N+i
  NCCL_TESTS_MIN_BW=B     as in nccl-tests: the run fails (exit status 1, and
                          FAILED after the average) when the average bus
                          bandwidth is below 0.9 x B GB/s
  Otherwise rank i of the process is on GPU (local rank x ranks + i) modulo
  the number of GPUs.

Exit status: 0 when every result was right, 1 when a result was wrong, an
NCCL call failed or the average missed NCCL_TESTS_MIN_BW, 2 for a command line hora-perf cannot run.
)";
}

}  // namespace hora::perf
