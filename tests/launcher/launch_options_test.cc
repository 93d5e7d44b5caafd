#include "launch_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hora::launcher {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

LaunchOptions parse(const std::vector<std::string>& arguments) { return parse_launch_options(arguments); }

// The message of the UsageError parse() throws, or "" if it accepts them.
std::string usage_error_of(const std::vector<std::string>& arguments) {
  try {
    parse(arguments);
  } catch (const UsageError& error) {
    return error.what();
  }
  return "";
}

TEST(LaunchOptionsTest, DefaultsFollowTorchrun) {
  LaunchOptions options = parse({"train"});
  EXPECT_EQ(options.nproc_per_node, 1);
  EXPECT_EQ(options.nnodes, 1);
  EXPECT_EQ(options.node_rank, 0);
  EXPECT_EQ(options.master_addr, "127.0.0.1");
  EXPECT_FALSE(options.master_port.has_value());
  EXPECT_FALSE(options.tag_output);
  EXPECT_FALSE(options.keep_going);
  EXPECT_DOUBLE_EQ(options.kill_timeout_seconds, 5.0);
  EXPECT_FALSE(options.timeout_seconds.has_value());
  EXPECT_FALSE(options.show_help);
  EXPECT_THAT(options.command, ElementsAre("train"));
}

TEST(LaunchOptionsTest, EverySpellingOfTheRankCountIsAccepted) {
  for (const auto& arguments : std::vector<std::vector<std::string>>{
           {"-n", "4", "p"},
           {"-n4", "p"},
           {"-n=4", "p"},
           {"--nproc-per-node", "4", "p"},
           {"--nproc-per-node=4", "p"},
           {"--nproc_per_node", "4", "p"},
           {"--nproc_per_node=4", "p"},
       }) {
    EXPECT_EQ(parse(arguments).nproc_per_node, 4) << ::testing::PrintToString(arguments);
  }
}

TEST(LaunchOptionsTest, ValuedOptionsInBothForms) {
  LaunchOptions options = parse({"--nnodes=3", "--node_rank", "2", "--master-addr=node0.example", "--master_port",
                                 "1234", "--kill-timeout", "0.5", "--timeout=30", "--tag-output", "prog"});
  EXPECT_EQ(options.nnodes, 3);
  EXPECT_EQ(options.node_rank, 2);
  EXPECT_EQ(options.master_addr, "node0.example");
  EXPECT_EQ(options.master_port, 1234);
  EXPECT_DOUBLE_EQ(options.kill_timeout_seconds, 0.5);
  ASSERT_TRUE(options.timeout_seconds.has_value());
  EXPECT_DOUBLE_EQ(*options.timeout_seconds, 30.0);
  EXPECT_TRUE(options.tag_output);

  LaunchOptions underscores = parse({"--node-rank=1", "--nnodes", "2", "--master_addr", "h", "--master-port=9",
                                     "--kill_timeout=0", "prog"});
  EXPECT_EQ(underscores.node_rank, 1);
  EXPECT_EQ(underscores.master_addr, "h");
  EXPECT_EQ(underscores.master_port, 9);
  EXPECT_DOUBLE_EQ(underscores.kill_timeout_seconds, 0.0);
}

TEST(LaunchOptionsTest, PrefixIsTagOutput) { EXPECT_TRUE(parse({"--prefix", "prog"}).tag_output); }

TEST(LaunchOptionsTest, KeepGoingInBothSpellings) {
  EXPECT_TRUE(parse({"--keep-going", "prog"}).keep_going);
  EXPECT_TRUE(parse({"--keep_going", "prog"}).keep_going);
  EXPECT_FALSE(parse({"prog", "--keep-going"}).keep_going) << "an argument of the program";
}

// torchrun's spellings of a single-node job and of the rendezvous, so that
// a torchrun command line runs as it is.
TEST(LaunchOptionsTest, TorchrunsRendezvousSpellingsAreUnderstood) {
  LaunchOptions standalone = parse({"--standalone", "--nproc_per_node=2", "prog"});
  EXPECT_EQ(standalone.nnodes, 1);
  EXPECT_EQ(standalone.nproc_per_node, 2);
  EXPECT_FALSE(standalone.master_port) << "a free local port, as torchrun --standalone";
  LaunchOptions endpoint =
      parse({"--rdzv_backend", "c10d", "--rdzv_endpoint=10.0.0.7:29400", "--max_restarts", "0", "prog"});
  EXPECT_EQ(endpoint.master_addr, "10.0.0.7");
  EXPECT_EQ(endpoint.master_port, 29400);
  LaunchOptions v6 = parse({"--rdzv-endpoint", "[fe80::1]:1234", "prog"});
  EXPECT_EQ(v6.master_addr, "fe80::1");
  EXPECT_EQ(v6.master_port, 1234);
  LaunchOptions hostOnly = parse({"--rdzv-endpoint", "node7", "prog"});
  EXPECT_EQ(hostOnly.master_addr, "node7");
  EXPECT_FALSE(hostOnly.master_port);
}

TEST(LaunchOptionsTest, ArgumentsAfterTheProgramBelongToIt) {
  LaunchOptions options = parse({"-n", "2", "prog", "-n", "3", "--help", "--", "x"});
  EXPECT_EQ(options.nproc_per_node, 2);
  EXPECT_FALSE(options.show_help);
  EXPECT_THAT(options.command, ElementsAre("prog", "-n", "3", "--help", "--", "x"));
}

TEST(LaunchOptionsTest, DoubleDashEndsLauncherOptions) {
  EXPECT_THAT(parse({"-n", "2", "--", "--odd-program", "a"}).command, ElementsAre("--odd-program", "a"));
}

TEST(LaunchOptionsTest, HelpNeedsNoProgram) {
  EXPECT_TRUE(parse({"--help"}).show_help);
  EXPECT_TRUE(parse({"-h"}).show_help);
  EXPECT_TRUE(parse({"-n", "0", "-h"}).show_help) << "help wins over arguments that would not validate";
}

TEST(LaunchOptionsTest, RankArithmetic) {
  LaunchOptions options = parse({"--nnodes", "3", "--node-rank", "2", "-n", "4", "prog"});
  EXPECT_EQ(options.world_size(), 12);
  EXPECT_EQ(options.global_rank(0), 8);
  EXPECT_EQ(options.global_rank(3), 11);
}

struct BadArguments {
  std::vector<std::string> arguments;
  std::string message_part;  // the message must name what is wrong
};

class LaunchOptionsRejectTest : public ::testing::TestWithParam<BadArguments> {};

TEST_P(LaunchOptionsRejectTest, ThrowsUsageErrorNamingTheProblem) {
  std::string message = usage_error_of(GetParam().arguments);
  ASSERT_FALSE(message.empty()) << "accepted: " << ::testing::PrintToString(GetParam().arguments);
  EXPECT_THAT(message, HasSubstr(GetParam().message_part));
}

INSTANTIATE_TEST_SUITE_P(
    BadCommandLines, LaunchOptionsRejectTest,
    ::testing::Values(BadArguments{{}, "no program"},                                       //
                      BadArguments{{"-n", "2"}, "no program"},                              //
                      BadArguments{{"-n", "0", "p"}, "at least 1"},                         //
                      BadArguments{{"-n", "-3", "p"}, "at least 1"},                        //
                      BadArguments{{"-n", "four", "p"}, "whole number"},                    //
                      BadArguments{{"-n", "4x", "p"}, "whole number"},                      //
                      BadArguments{{"-n", "", "p"}, "whole number"},                        //
                      BadArguments{{"-n", "99999999999", "p"}, "out of range"},             //
                      BadArguments{{"-n"}, "needs a value"},                                //
                      BadArguments{{"--nproc-per-node"}, "needs a value"},                  //
                      BadArguments{{"--nnodes", "0", "p"}, "--nnodes"},                     //
                      BadArguments{{"--nnodes", "1:4", "p"}, "elastic"},                    //
                      BadArguments{{"--nnodes", "2", "--node-rank", "2", "p"}, "--node-rank"},  //
                      BadArguments{{"--node-rank", "-1", "p"}, "--node-rank"},              //
                      BadArguments{{"--node-rank", "1", "p"}, "--node-rank"},               //
                      BadArguments{{"--master-port", "0", "p"}, "--master-port"},           //
                      BadArguments{{"--master-port", "65536", "p"}, "--master-port"},       //
                      BadArguments{{"--master-port=http", "p"}, "whole number"},            //
                      BadArguments{{"--master-addr=", "p"}, "--master-addr"},               //
                      BadArguments{{"--timeout", "0", "p"}, "--timeout"},                   //
                      BadArguments{{"--timeout", "soon", "p"}, "seconds"},                  //
                      BadArguments{{"--kill-timeout", "-1", "p"}, "negative"},              //
                      BadArguments{{"--kill-timeout", "nan", "p"}, "seconds"},              //
                      BadArguments{{"--kill-timeout", "inf", "p"}, "seconds"},              //
                      BadArguments{{"--tag-output=yes", "p"}, "takes no value"},            //
                      BadArguments{{"--bogus", "p"}, "unknown option '--bogus'"},           //
                      BadArguments{{"--max-restarts", "3", "p"}, "does not restart"},       //
                      BadArguments{{"--rdzv-backend", "etcd", "p"}, "c10d and static"},     //
                      BadArguments{{"--rdzv-endpoint", ":29400", "p"}, "names no host"},    //
                      BadArguments{{"-x", "p"}, "unknown option '-x'"},                     //
                      BadArguments{{"--nnodes", "65536", "-n", "65536", "p"}, "too large"}));

TEST(LaunchOptionsTest, UsageTextNamesEveryOption) {
  std::string text = usage_text();
  for (const char* option : {"--nproc-per-node", "--nnodes", "--node-rank", "--master-addr", "--master-port",
                             "--tag-output", "--prefix", "--timeout", "--kill-timeout", "--help"}) {
    EXPECT_THAT(text, HasSubstr(option));
  }
}

// The message check_rank_count_fits() throws for `ranks` local ranks under
// `limits`, or "" if they fit.
std::string rank_count_error_of(int ranks, const ProcessLimits& limits) {
  try {
    check_rank_count_fits(parse({"-n", std::to_string(ranks), "p"}), limits);
  } catch (const UsageError& error) {
    return error.what();
  }
  return "";
}

TEST(LaunchOptionsTest, RankCountAboveTheUserProcessLimitIsRefused) {
  EXPECT_THAT(rank_count_error_of(101, {100, std::nullopt}),
              AllOf(HasSubstr("between 1 and 100"), HasSubstr("RLIMIT_NPROC"), HasSubstr("got 101")));
  EXPECT_EQ(rank_count_error_of(100, {100, std::nullopt}), "");
}

TEST(LaunchOptionsTest, RankCountAbovePidMaxIsRefused) {
  EXPECT_THAT(rank_count_error_of(1000000, {std::nullopt, 32768}),
              AllOf(HasSubstr("between 1 and 32768"), HasSubstr("pid_max"), HasSubstr("got 1000000")));
  EXPECT_EQ(rank_count_error_of(32768, {std::nullopt, 32768}), "");
}

TEST(LaunchOptionsTest, UnknownLimitsRefuseNothing) {
  EXPECT_EQ(rank_count_error_of(1000000, {}), "");
}

TEST(LaunchOptionsTest, ReadsThisProcessLimits) {
  ProcessLimits limits = read_process_limits();
  if (limits.user_processes) {
    EXPECT_GE(*limits.user_processes, 0);
  }
  // Linux always has /proc/sys/kernel/pid_max; its absence means the
  // reading broke.
  ASSERT_TRUE(limits.pid_max.has_value());
  EXPECT_GT(*limits.pid_max, 1);
}

// Scripts branch on hora-run's own exit codes: the help must list each one
// the launcher can return, 126 (found but not runnable) as well as 127.
TEST(LaunchOptionsTest, UsageTextListsEveryExitCode) {
  std::string text = usage_text();
  for (const char* code : {"2 bad arguments", "124 --timeout", "127 program not found", "126 program found but not",
                           "1 other failures"}) {
    EXPECT_THAT(text, HasSubstr(code));
  }
}

}  // namespace
}  // namespace hora::launcher
