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
  EXPECT_FALSE(options.blocking);
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
  EXPECT_TRUE(options.blocking);
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
      {"alltoall", Collective::AlltoAll}};
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

TEST(Options, BadSizesNameTheFlag) {
  EXPECT_THAT(usageErrorOf({"all_reduce", "-b", "8X"}), HasSubstr("-b/--minbytes"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", ""}), HasSubstr("-e/--maxbytes"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "-5"}), HasSubstr("'-5' is negative"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "-1K"}), HasSubstr("is negative"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "+5"}), HasSubstr("is not a size"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "K"}), HasSubstr("is not a size"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "nan"}), HasSubstr("is not a number"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "inf"}), HasSubstr("too large"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "1Mfoo"}), HasSubstr("has 'foo' after its number"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "1 T"}), HasSubstr("has 'T' after its number"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "0x10"}), HasSubstr("after its number"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "99999999999999999999"}), HasSubstr("-e/--maxbytes"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "17179869184G"}), HasSubstr("too large"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-e", "1e300"}), HasSubstr("too large"));
}

TEST(Options, BadNumbersSayTheRange) {
  EXPECT_THAT(usageErrorOf({"all_reduce", "-n", "0"}), HasSubstr("-n/--iters must be between 1"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-w", "-1"}), HasSubstr("-w/--warmup_iters must be between 0"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-t", "two"}), HasSubstr("-t/--nthreads takes a whole number"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-a", "4"}), HasSubstr("-a/--average must be between 0 and 3"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-z", "2"}), HasSubstr("-z/--blocking"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-R", "3"}), HasSubstr("-R/--local_register must be between 0 and 2"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-g", "0"}), HasSubstr("-g/--ngpus"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-r", "-2"}), HasSubstr("-r/--root"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-f", "0"}), HasSubstr("-f/--stepfactor"));
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
  const Options options = parse({"all_reduce", "--minb", "8", "--maxb=1K", "--iter=5", "--warm", "2", "--sw", "3"});
  EXPECT_EQ(options.sizes.minBytes, 8u);
  EXPECT_EQ(options.sizes.maxBytes, 1024u);
  EXPECT_EQ(options.iters, 5);
  EXPECT_EQ(options.warmupIters, 2);
  EXPECT_EQ(options.sweeps, 3);
  EXPECT_THAT(usageErrorOf({"all_reduce", "--st", "2"}),
              AllOf(HasSubstr("'--st' is ambiguous"), HasSubstr("--stepfactor"), HasSubstr("--stepbytes"),
                    HasSubstr("--stream_null")));
  EXPECT_THAT(usageErrorOf({"all_reduce", "--minbytesx=1"}), HasSubstr("unknown option '--minbytesx'"));
}

// nccl-tests' flags for what hora-perf does not do: their "off" value runs,
// any other is refused naming the flag; -K is nccl-tests' per_iter_skip,
// not hora-perf's sweeps (-s).
TEST(Options, NcclTestsFlagsHoraPerfDoesNotImplementTakeOnlyTheirOffValue) {
  const Options options = parse({"all_reduce", "-G", "0", "-p", "0", "-x", "-1", "-V", "16",
                                 "-K", "0", "--memory=0", "-C0"});
  EXPECT_EQ(options.sweeps, 1);
  EXPECT_THAT(usageErrorOf({"all_reduce", "-G", "1"}),
              AllOf(HasSubstr("-G/--cudagraph"), HasSubstr("not supported"), HasSubstr("only 0 is accepted")));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-y", "1"}), AllOf(HasSubstr("-y/--stream_null"), HasSubstr("only 0")));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-K", "2"}), HasSubstr("-K/--per_iter_skip"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-V", "8"}), HasSubstr("only 16"));
  EXPECT_THAT(usageErrorOf({"all_reduce", "-J", "out.json"}),
              AllOf(HasSubstr("-J/--output_file"), Not(HasSubstr("only"))));
}

TEST(Options, RunCyclesCountsAndRefusesForever) {
  EXPECT_EQ(parse({"all_reduce", "-N", "3"}).runCycles, 3);
  EXPECT_EQ(parse({"all_reduce"}).runCycles, 1);
  EXPECT_THAT(usageErrorOf({"all_reduce", "-N", "0"}), HasSubstr("-N/--run_cycles 0 (run until interrupted)"));
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
        "--sweeps", "--unalign", "--run_cycles", "--help"}) {
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
