#include "byte_size.h"
#include "options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hora::perf {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

Options parse(std::vector<std::string> arguments, std::string_view program = "hora-perf") {
  return parseOptions(arguments, program);
}

// The message of the UsageError that parsing `arguments` throws.
std::string usageErrorOf(std::vector<std::string> arguments, std::string_view program = "hora-perf") {
  try {
    parseOptions(arguments, program);
  } catch (const UsageError& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
    return error.what();
  }
  ADD_FAILURE() << "no UsageError";
  return "";
}

TEST(Options, DefaultsAreNcclTests) {
  const Options options = parse({"all_reduce"});
  EXPECT_EQ(options.collective, Collective::AllReduce);
  EXPECT_EQ(options.sizes.minBytes, 32u << 20);
  EXPECT_EQ(options.sizes.maxBytes, 32u << 20);
  EXPECT_EQ(options.sizes.stepBytes, 1u << 20);
  EXPECT_EQ(options.sizes.stepFactor, 1);
  EXPECT_EQ(options.iters, 20);
  EXPECT_EQ(options.warmupIters, 1);  // nccl-tests' default
  EXPECT_EQ(options.checkIters, 1);
  EXPECT_EQ(options.ops, std::vector<ncclRedOp_t>{ncclSum});
  EXPECT_EQ(options.types, std::vector<ncclDataType_t>{ncclFloat32});
  EXPECT_EQ(options.root, 0);
  EXPECT_EQ(options.threads, 1);
  EXPECT_EQ(options.ranksPerThread, 1);
  EXPECT_EQ(options.average, AverageMode::Mean);
  EXPECT_EQ(options.blocking, 0);
  EXPECT_EQ(options.registration, Registration::None);
  EXPECT_FALSE(options.showHelp);
}

TEST(Options, ShortFlags) {
  const Options options =
      parse({"reduce", "-b", "8",        "-e", "1M", "-f", "4", "-n", "7", "-w", "2", "-c", "3", "-o",
             "max",    "-d", "bfloat16", "-r", "2",  "-z", "1", "-t", "3", "-g", "2", "-a", "3", "-R", "2"});
  EXPECT_EQ(options.collective, Collective::Reduce);
  EXPECT_EQ(options.sizes.minBytes, 8u);
  EXPECT_EQ(options.sizes.maxBytes, 1u << 20);
  EXPECT_EQ(options.sizes.stepFactor, 4);
  EXPECT_EQ(options.iters, 7);
  EXPECT_EQ(options.warmupIters, 2);
  EXPECT_EQ(options.checkIters, 3);
  EXPECT_EQ(options.ops, std::vector<ncclRedOp_t>{ncclMax});
  EXPECT_EQ(options.types, std::vector<ncclDataType_t>{ncclBfloat16});
  EXPECT_EQ(options.root, 2);
  EXPECT_EQ(options.blocking, 1);
  EXPECT_EQ(options.threads, 3);
  EXPECT_EQ(options.ranksPerThread, 2);
  EXPECT_EQ(options.ranksInProcess(), 6);
  EXPECT_EQ(options.average, AverageMode::Max);
  EXPECT_EQ(options.registration, Registration::Window);
}

TEST(Options, LongFlagsWithSpaceOrEquals) {
  const Options options = parse({"--minbytes=1K",
                                 "--maxbytes",
                                 "2G",
                                 "--stepbytes=512M",
                                 "--iters",
                                 "3",
                                 "--warmup_iters=0",
                                 "--check",
                                 "0",
                                 "--op=avg",
                                 "--datatype",
                                 "f8e5m2",
                                 "--root=all",
                                 "--blocking=0",
                                 "--nthreads",
                                 "4",
                                 "--ngpus=1",
                                 "--average",
                                 "0",
                                 "--local_register=1",
                                 "broadcast"});
  EXPECT_EQ(options.collective, Collective::Broadcast);
  EXPECT_EQ(options.sizes.minBytes, 1024u);
  EXPECT_EQ(options.sizes.maxBytes, std::size_t{2} << 30);
  EXPECT_EQ(options.sizes.stepBytes, 512u << 20);
  EXPECT_EQ(options.iters, 3);
  EXPECT_EQ(options.warmupIters, 0);
  EXPECT_EQ(options.checkIters, 0);
  EXPECT_EQ(options.ops, std::vector<ncclRedOp_t>{ncclAvg});
  EXPECT_EQ(options.types, std::vector<ncclDataType_t>{ncclFloat8e5m2});
  EXPECT_FALSE(options.root.has_value());
  EXPECT_FALSE(parseOptions({"broadcast", "-r", "-1"}).root.has_value()) << "nccl-tests' -1 means every root";
  EXPECT_EQ(options.threads, 4);
  EXPECT_EQ(options.average, AverageMode::Rank0);
  EXPECT_EQ(options.registration, Registration::Local);
}

TEST(Options, ValueAttachedToShortFlag) {
  const Options options = parse({"all_gather", "-b8", "-e64", "-t2"});
  EXPECT_EQ(options.sizes.minBytes, 8u);
  EXPECT_EQ(options.sizes.maxBytes, 64u);
  EXPECT_EQ(options.threads, 2);
}

TEST(Options, AllOpsAndAllTypes) {
  const Options options = parse({"all_reduce", "-o", "all", "-d", "all"});
  EXPECT_EQ(options.ops, (std::vector<ncclRedOp_t>{ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg}));
  ASSERT_EQ(options.types.size(), static_cast<std::size_t>(ncclNumTypes));
  for (int t = 0; t < ncclNumTypes; ++t) EXPECT_EQ(options.types[static_cast<std::size_t>(t)], t);
}

TEST(Options, EveryCollectiveByNameAndBinaryName) {
  const std::pair<const char*, Collective> names[] = {
      {"all_reduce", Collective::AllReduce}, {"reduce_scatter", Collective::ReduceScatter},
      {"all_gather", Collective::AllGather}, {"broadcast", Collective::Broadcast},
      {"reduce", Collective::Reduce},        {"sendrecv", Collective::SendRecv},
      {"alltoall", Collective::AlltoAll},    {"gather", Collective::Gather},
      {"scatter", Collective::Scatter}};
  for (const auto& [name, collective] : names) {
    EXPECT_EQ(parse({name}).collective, collective) << name;
    EXPECT_EQ(parse({std::string(name) + "_perf"}).collective, collective) << name;
  }
}

TEST(Options, CollectiveFromProgramName) {
  EXPECT_EQ(parse({"-b", "8"}, "/opt/bin/alltoall_perf").collective, Collective::AlltoAll);
  // An explicit collective wins over the program name.
  EXPECT_EQ(parse({"sendrecv"}, "all_gather_perf").collective, Collective::SendRecv);
}

TEST(Options, HelpNeedsNoCollective) {
  EXPECT_TRUE(parse({"-h"}).showHelp);
  EXPECT_TRUE(parse({"--help"}).showHelp);
}

TEST(Options, SizeSuffixesArePowersOf1024) {
  EXPECT_EQ(parseByteSize("0", "-b"), 0u);
  EXPECT_EQ(parseByteSize("8", "-b"), 8u);
  EXPECT_EQ(parseByteSize("3k", "-b"), 3072u);
  EXPECT_EQ(parseByteSize("3K", "-b"), 3072u);
  EXPECT_EQ(parseByteSize("5M", "-b"), 5u << 20);
  EXPECT_EQ(parseByteSize("2g", "-b"), std::size_t{2} << 30);
}

// nccl-tests reads a decimal number and the unit's first letter: scripts
// write fractions, exponents and "MB"; the bytes are rounded down.
TEST(Options, SizesAreSpeltAsNcclTestsReadsThem) {
  EXPECT_EQ(parseByteSize("1.5K", "-b"), 1536u);
  EXPECT_EQ(parseByteSize("0.5M", "-b"), 524288u);
  EXPECT_EQ(parseByteSize("0.3K", "-b"), 307u);  // 307.2
  EXPECT_EQ(parseByteSize("1e3", "-b"), 1000u);
  EXPECT_EQ(parseByteSize("1MB", "-b"), 1048576u);
  EXPECT_EQ(parseByteSize("64KiB", "-b"), 65536u);
  EXPECT_EQ(parseByteSize("8B", "-b"), 8u);
  EXPECT_EQ(parseByteSize("2 G", "-b"), std::size_t{2} << 30);
  EXPECT_EQ(parseByteSize(" 16", "-b"), 16u);
  EXPECT_EQ(parseByteSize("15.99", "-b"), 15u);
}

TEST(Options, SizesMayEndInBOrIBAfterTheUnit) {
  EXPECT_EQ(parseByteSize("1KB", "-b"), 1024u);
  EXPECT_EQ(parseByteSize("1kB", "-b"), 1024u);
  EXPECT_EQ(parseByteSize("3MiB", "-b"), 3u << 20);
  EXPECT_EQ(parseByteSize("1GB", "-b"), std::size_t{1} << 30);
  EXPECT_EQ(parseByteSize("0.25GiB", "-b"), std::size_t{1} << 28);
  EXPECT_EQ(parseByteSize("1.5 KiB", "-b"), 1536u);
  EXPECT_EQ(parseByteSize("0B", "-b"), 0u);
  EXPECT_EQ(parseByteSize("2.5e2K", "-b"), 256000u);
  EXPECT_EQ(parseByteSize(".5K", "-b"), 512u);
  EXPECT_EQ(parseByteSize("1e-3", "-b"), 0u);  // 0.001 bytes, rounded down
}

// Every refusal names the flag as the user can find it, and the text.
TEST(Options, BadSizesNameTheFlag) {
  EXPECT_EQ(usageErrorOf({"all_reduce", "-e", "1Mfoo"}),
            "-e/--maxbytes size '1Mfoo' has 'foo' after its number; units are K, M, G (KB, KiB too)");
  EXPECT_EQ(usageErrorOf({"all_reduce", "-b", "-1K"}), "-b/--minbytes size '-1K' is negative");
  EXPECT_THAT(usageErrorOf({"all_reduce", "-i", "lots"}), HasSubstr("-i/--stepbytes size 'lots' is not a size"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "--minbytes=8X"}), HasSubstr("-b/--minbytes size '8X'"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-b", "8X"}), HasSubstr("-b/--minbytes"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", ""}), HasSubstr("-e/--maxbytes"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "   "}), HasSubstr("is not a size"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "-5"}), HasSubstr("'-5' is negative"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "+5"}), HasSubstr("is not a size"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "K"}), HasSubstr("is not a size"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "nan"}), HasSubstr("is not a number"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "inf"}), HasSubstr("too large"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "1 T"}), HasSubstr("has 'T' after its number"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "0x10"}), HasSubstr("after its number"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "1kb"}), HasSubstr("has 'b' after its number"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "1KBx"}), HasSubstr("has 'Bx' after its number"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "8iB"}), HasSubstr("has 'iB' after its number"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "1M B"}), HasSubstr("has ' B' after its number"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "99999999999999999999"}),
              AllOf(HasSubstr("-e/--maxbytes"), HasSubstr("too large")));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "17179869184G"}), HasSubstr("too large"));  // 2^64
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "1e300"}), HasSubstr("too large"));
}

TEST(Options, BadNumbersSayTheRange) {
  EXPECT_THAT(usageErrorOf({"all_reduce", "-n", "0"}), HasSubstr("-n/--iters must be between 1"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-w", "-1"}), HasSubstr("-w/--warmup_iters must be between 0"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-t", "two"}), HasSubstr("-t/--nthreads takes a whole number"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-a", "4"}), HasSubstr("-a/--average must be between 0 and 3"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-z", "4"}), HasSubstr("-z/--blocking must be between 0 and 3"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-R", "3"}), HasSubstr("-R/--local_register must be between 0 and 2"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-g", "0"}), HasSubstr("-g/--ngpus"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-r", "-2"}), HasSubstr("-r/--root"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-f", "0"}), HasSubstr("-f/--stepfactor"));
}

// Whole numbers as nccl-tests' strtol(..., 0) reads them.
TEST(Options, WholeNumbersAreReadAsNcclTestsReadsThem) {
  EXPECT_EQ(parse({"all_reduce", "-n", "010"}).iters, 8);
  EXPECT_EQ(parse({"all_reduce", "-n", "0x10"}).iters, 16);
  EXPECT_EQ(parse({"all_reduce", "-n", "+12"}).iters, 12);
  EXPECT_EQ(parse({"all_reduce", "-z", "3"}).blocking, 3);
  EXPECT_EQ(parse({"all_reduce", "-z", "2"}).blocking, 2);
  for (const char* bad : {"", " 5", "5 ", "08", "0x", "1.5", "5k", "99999999999999999999"}) {
    EXPECT_THAT(usageErrorOf({"all_reduce", "-n", bad}), HasSubstr("-n/--iters")) << "'" << bad << "'";
  }
}

TEST(Options, BadNamesListTheChoices) {
  EXPECT_THAT(usageErrorOf({"all_reduce", "-o", "mean"}), HasSubstr("sum, prod, min, max, avg or all"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-d", "float128"}), HasSubstr("bfloat16"));
  EXPECT_THAT(usageErrorOf({"allreduce"}),
              HasSubstr("unknown collective 'allreduce'; choose one of all_reduce"));
}

TEST(Options, UnknownAndMalformedFlags) {
  EXPECT_THAT(usageErrorOf({"all_reduce", "-q"}), HasSubstr("unknown option '-q'"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "--frobnicate=1"}), HasSubstr("unknown option '--frobnicate'"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-b"}), HasSubstr("-b/--minbytes needs a value"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "--help=yes"}), HasSubstr("takes no value"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "broadcast"}), HasSubstr("the collective was already given"));
}

// getopt_long, nccl-tests' parser, takes any prefix of a long option that
// only one option starts with.
TEST(Options, LongOptionsMayBeShortenedToAUniquePrefix) {
  const Options options = parse({"all_reduce", "--minb", "8", "--maxb=1K", "--iter=5", "--warm", "2", "--sw", "3",
                                 "--dat", "half", "--per_iter_s", "0", "--he"});
  EXPECT_EQ(options.sizes.minBytes, 8u);
  EXPECT_EQ(options.sizes.maxBytes, 1024u);
  EXPECT_EQ(options.iters, 5);
  EXPECT_EQ(options.warmupIters, 2);
  EXPECT_EQ(options.sweeps, 3);
  EXPECT_EQ(options.types, std::vector<ncclDataType_t>{ncclFloat16});
  EXPECT_TRUE(options.showHelp);
  EXPECT_EQ(usageErrorOf({"all_reduce", "--st", "2"}),
            "option '--st' is ambiguous: it could be --stepfactor, --stepbytes, --stream_null");
  EXPECT_THAT(usageErrorOf({"all_reduce", "--per=0"}),
              AllOf(HasSubstr("'--per' is ambiguous"), HasSubstr("--per_iter_timing, --per_iter_skip")));
  EXPECT_THAT(usageErrorOf({"all_reduce", "--minbytesx=1"}), HasSubstr("unknown option '--minbytesx'"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "--=8"}), HasSubstr("unknown option '--'"));
}

// nccl-tests' flags for what hora-perf does not do: their "off" value runs
// and does nothing, any other is refused naming the flag; -K is nccl-tests'
// per_iter_skip, not hora-perf's sweeps (-s).
TEST(Options, NcclTestsFlagsHoraPerfDoesNotImplementTakeOnlyTheirOffValue) {
  struct Inert {
    const char* shortName;
    const char* longName;
    const char* off;
    const char* other;
  };
  const Inert inert[] = {
      {"-p", "parallel_init", "0", "1"},       {"-y", "stream_null", "0", "1"},
      {"-T", "timeout", "0", "30"},            {"-G", "cudagraph", "0", "1"},
      {"-C", "report_cputime", "0", "1"},      {"-S", "report_timestamps", "0", "1"},
      {"-x", "cta_policy", "-1", "0"},         {"-D", "device_implementation", "0", "1"},
      {"-V", "device_cta_count", "16", "8"},   {"-M", "memory", "0", "1"},
      {"-I", "per_iter_timing", "0", "1"},     {"-K", "per_iter_skip", "0", "2"},
  };
  for (const Inert& flag : inert) {
    SCOPED_TRACE(flag.longName);
    const Options byShort = parse({"all_reduce", flag.shortName, flag.off});
    EXPECT_EQ(byShort.sweeps, 1);
    EXPECT_EQ(byShort.runCycles, 1);
    parse({"all_reduce", std::string("--") + flag.longName + "=" + flag.off});
    const std::string shown = std::string(flag.shortName) + "/--" + flag.longName;
    EXPECT_THAT(usageErrorOf({"all_reduce", flag.shortName, flag.other}),
                ::testing::StartsWith(shown + ": hora-perf does not support nccl-tests' "));
    EXPECT_THAT(usageErrorOf({"all_reduce", std::string("--") + flag.longName, flag.other}),
                HasSubstr(std::string("; only ") + flag.shortName + " " + flag.off + " is accepted"));
    EXPECT_THAT(usageErrorOf({"all_reduce", flag.shortName, "off"}), HasSubstr(shown));
  }
  EXPECT_EQ(usageErrorOf({"all_reduce", "-G", "1"}),
            "-G/--cudagraph: hora-perf does not support nccl-tests' CUDA-graph launches; only -G 0 is accepted");
  parse({"all_reduce", "-G00", "-T", "-0"});  // numbers, as nccl-tests reads them
  EXPECT_THAT(usageErrorOf({"all_reduce", "-J", "x"}),
              AllOf(HasSubstr("-J/--output_file: hora-perf does not support"), Not(HasSubstr("only"))));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-J", "0"}), HasSubstr("-J/--output_file"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-J"}), HasSubstr("-J/--output_file needs a value"));
}

TEST(Options, RunCyclesCountAndZeroMeansUntilInterrupted) {
  EXPECT_EQ(parse({"all_reduce", "-N", "3"}).runCycles, 3);
  EXPECT_EQ(parse({"all_reduce", "--run_cycles=0"}).runCycles, 0);
  EXPECT_EQ(parse({"all_reduce"}).runCycles, 1);
  EXPECT_THAT(usageErrorOf({"all_reduce", "-N", "-1"}), HasSubstr("-N/--run_cycles must be between 0"));
}

// -s summarises whole sweeps in one row per size, -N prints a row per
// cycle: a row cannot be both, whichever order they come in.
TEST(Options, SweepsAndRunCyclesDoNotCombine) {
  EXPECT_EQ(parse({"all_reduce", "-s", "3"}).sweeps, 3);
  EXPECT_EQ(parse({"all_reduce", "-s", "3", "-N", "1"}).sweeps, 3);
  EXPECT_EQ(parse({"all_reduce", "-s", "1", "-N", "2"}).runCycles, 2);
  const std::string message =
      "-s/--sweeps 3 and -N/--run_cycles 2 do not combine: -s prints one row per size over whole sweeps, -N a row "
      "per cycle; give one of them";
  EXPECT_EQ(usageErrorOf({"all_reduce", "-s", "3", "-N", "2"}), message);
  EXPECT_EQ(usageErrorOf({"all_reduce", "-N", "2", "-s", "3"}), message);
  EXPECT_THAT(usageErrorOf({"all_reduce", "-N", "0", "-s", "2"}), HasSubstr("-N/--run_cycles 0 do not combine"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-s", "0"}), HasSubstr("-s/--sweeps must be between 1 and 1000"));
}

TEST(Options, UnalignIsBounded) {
  EXPECT_EQ(parse({"all_reduce", "-u", "3"}).unalign, 3);
  EXPECT_EQ(parse({"all_reduce"}).unalign, 0);
  EXPECT_THAT(usageErrorOf({"all_reduce", "-u", "1025"}), HasSubstr("-u/--unalign must be between 0 and 1024"));
}

TEST(Options, MissingCollective) { EXPECT_THAT(usageErrorOf({"-b", "8"}), HasSubstr("no collective given")); }

TEST(Options, SizeRangeIsValidated) {
  EXPECT_THAT(usageErrorOf({"all_reduce", "-b", "2M", "-e", "1M"}), HasSubstr("larger than maximum"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-b", "0", "-e", "1M", "-f", "2"}), HasSubstr("minimum size of 0"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-b", "0", "-e", "1M", "-i", "0"}), HasSubstr("at least 1 byte"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-b", "1", "-e", "1G", "-i", "1"}), HasSubstr("more than"));
}

TEST(Options, UsageTextListsEveryFlag) {
  const std::string text = usageText();
  for (const char* flag :
       {"--minbytes", "--maxbytes", "--stepfactor", "--stepbytes", "--iters", "--warmup_iters", "--check",
        "--op", "--datatype", "--root", "--blocking", "--nthreads", "--ngpus", "--average", "--local_register",
        "--sweeps", "--unalign", "--run_cycles", "--agg_iters", "--help", "--parallel_init", "--stream_null",
        "--timeout", "--cudagraph", "--report_cputime", "--report_timestamps", "--output_file", "--cta_policy",
        "--device_implementation", "--device_cta_count", "--memory", "--per_iter_timing", "--per_iter_skip"}) {
    EXPECT_THAT(text, HasSubstr(flag));
  }
}

// The line of the usage text that describes `flag`.
std::string usageLineOf(const std::string& flag) {
  const std::string text = usageText();
  const size_t at = text.find(flag);
  if (at == std::string::npos) return "";
  const size_t begin = text.rfind('\n', at) + 1;
  return text.substr(begin, text.find('\n', at) - begin);
}

// The help is what users read to know what a run without flags measures:
// a default printed there must be the one parsing applies.
TEST(Options, UsageTextStatesTheRealDefaults) {
  const Options defaults = parse({"all_reduce"});
  EXPECT_THAT(usageLineOf("--iters N"), HasSubstr("(default " + std::to_string(defaults.iters) + ")"));
  EXPECT_THAT(usageLineOf("--warmup_iters N"),
              HasSubstr("(default " + std::to_string(defaults.warmupIters) + ")"));
  EXPECT_THAT(usageLineOf("--nthreads N"), HasSubstr("(default " + std::to_string(defaults.threads) + ")"));
  EXPECT_THAT(usageLineOf("--ngpus N"), HasSubstr("(default " + std::to_string(defaults.ranksPerThread) + ")"));
}

}  // namespace
}  // namespace hora::perf
