#include "report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <vector>

namespace hora::perf {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> result;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) result.push_back(line);
  return result;
}

// The lines nccl-tests 2.19 prints (util.cu's writeResultHeader), byte for
// byte: a script that reads one reads the other.
TEST(Report, TableHeaderMatchesNcclTests) {
  const std::vector<std::string> header = lines(tableHeader());
  ASSERT_EQ(header.size(), 3u);
  EXPECT_EQ(header[0],
            "#                                                              out-of-place                     "
            "  in-place          ");
  EXPECT_EQ(header[1],
            "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   "
            "algbw   busbw  #wrong ");
  EXPECT_EQ(header[2],
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  "
            "(GB/s)  (GB/s)         ");
}

TEST(Report, RowColumnsLineUpWithTheHeader) {
  const std::string row = rowPrefix(1048576, 262144, "float", "sum", -1) +
                          placeColumns({.seconds = 24.13e-6, .algbw = 43.45, .busbw = 65.18, .wrong = 0}) +
                          placeColumns({.seconds = 23.5e-6, .algbw = 44.6, .busbw = 66.9, .wrong = 0});
  EXPECT_EQ(row,
            "     1048576        262144     float     sum      -1    24.13   43.45   65.18       0    23.50   "
            "44.60   66.90       0");
  // Every column ends where its header label ends.
  std::string header = lines(tableHeader())[1];
  header.pop_back();  // the space nccl-tests leaves for its timestamps
  ASSERT_EQ(row.size(), header.size());
  for (std::size_t i = 1; i < header.size(); ++i) {
    if (header[i] != ' ' && (i + 1 == header.size() || header[i + 1] == ' ')) {
      EXPECT_NE(row[i], ' ') << "column ending at " << i;
    }
  }
}

TEST(Report, UncheckedResultsSayNA) {
  EXPECT_EQ(placeColumns({.seconds = 1e-3, .algbw = 1.0, .busbw = 1.0, .wrong = std::nullopt}),
            "  1000.00    1.00    1.00    N/A");  // one narrower than a count, as in nccl-tests
  EXPECT_EQ(placeColumns({.seconds = 1e-3, .algbw = 1.0, .busbw = 1.0, .wrong = 12}),
            "  1000.00    1.00    1.00      12");
  // %g, as nccl-tests prints the count.
  EXPECT_EQ(placeColumns({.seconds = 1e-3, .algbw = 1.0, .busbw = 1.0, .wrong = 1048576}),
            "  1000.00    1.00    1.00  1.04858e+06");
}

// nccl-tests' getFloatStr: two decimals while the number fits its column,
// then one, then none, then an exponent.
TEST(Report, NumbersKeepTheirColumnWidthAsTheyGrow) {
  EXPECT_EQ(formatMicroseconds(5.256), "   5.26");
  EXPECT_EQ(formatMicroseconds(100.0), " 100.00");
  EXPECT_EQ(formatMicroseconds(1234.567), "1234.57");
  EXPECT_EQ(formatMicroseconds(12345.6), "12345.6");
  EXPECT_EQ(formatMicroseconds(1234567.8), "1234568");
  EXPECT_EQ(formatMicroseconds(12345678.0), "1.2e+07");
  const std::string bandwidths =
      placeColumns({.seconds = 1e-6, .algbw = 123.456, .busbw = 1234.5, .wrong = 0});
  EXPECT_EQ(bandwidths, "     1.00  123.46  1234.5       0");
  EXPECT_EQ(placeColumns({.seconds = 1e-6, .algbw = 123456.0, .busbw = 1234567.0, .wrong = 0}),
            "     1.00  123456   1e+06       0");
}

TEST(Report, Summary) {
  EXPECT_EQ(summaryLines(0, 12.5), "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 12.5 \n#\n");
  EXPECT_THAT(summaryLines(7, 0.25), HasSubstr("# Out of bounds values : 7 FAILED\n"));
}

TEST(Report, MinimumBusBandwidthAsNcclTestsJudgesIt) {
  // Met at 0.9 of the minimum and above, as nccl-tests' NCCL_TESTS_MIN_BW.
  EXPECT_TRUE(meetsMinBusbw(9.0, 10.0));
  EXPECT_FALSE(meetsMinBusbw(8.99, 10.0));
  EXPECT_TRUE(meetsMinBusbw(0.0, std::nullopt));
  EXPECT_THAT(summaryLines(0, 9.5, 10.0), HasSubstr("# Avg bus bandwidth    : 9.5 OK\n"));
  EXPECT_THAT(summaryLines(0, 2.5, 10.0), HasSubstr("# Avg bus bandwidth    : 2.5 FAILED\n"));
  EXPECT_EQ(parseMinBusbw(nullptr), std::nullopt);
  EXPECT_EQ(parseMinBusbw("12.5"), 12.5);
  for (const char* bad : {"", "fast", "12GB", "-1", "nan"}) EXPECT_THROW(parseMinBusbw(bad), UsageError) << bad;
}

TEST(Report, RankAndOptionsLines) {
  EXPECT_EQ(rankLine(3, 4242, "node1"), "#  Rank  3 Group  0 Pid   4242 on      node1 device  host\n");
  EXPECT_EQ(rankLine(1, 77, "gpu-node", 2, "[0000:19:00] NVIDIA H100"),
            "#  Rank  1 Group  0 Pid     77 on   gpu-node device  2 [0000:19:00] NVIDIA H100\n");
  Options options;
  options.sizes = {8, 1 << 20, 4, 0};
  options.threads = 3;
  EXPECT_EQ(optionsLine(options),
            "# nThread 3 nGpus 1 minBytes 8 maxBytes 1048576 step: 4(factor) warmup iters: 1 iters: 20 agg "
            "iters: 1 validation: 1 graph: 0 unalign: 0\n");
  options.checkIters = 3;  // nccl-tests prints the -c count
  options.unalign = 5;
  EXPECT_THAT(optionsLine(options), HasSubstr("validation: 3 graph: 0 unalign: 5\n"));
  options.sizes = {0, 100, 1, 10};
  options.checkIters = 0;
  EXPECT_THAT(optionsLine(options), HasSubstr("step: 10(bytes)"));
  EXPECT_THAT(optionsLine(options), HasSubstr("validation: 0"));
  // -z, as nccl-tests says it, on a line of its own.
  EXPECT_THAT(optionsLine(options), Not(HasSubstr("Blocking")));
  options.blocking = 1;
  EXPECT_THAT(optionsLine(options),
              HasSubstr("unalign: 5\n# Blocking Enabled: wait and barrier after each inner iteration (-m) \n"));
  options.blocking = 2;
  EXPECT_THAT(optionsLine(options), HasSubstr("\n# Blocking Enabled: wait after each inner iteration (-m), no barrier \n"));
  options.blocking = 3;
  EXPECT_THAT(optionsLine(options), HasSubstr("\n# Blocking Enabled: wait and barrier after each outer iteration (-n); "
                                              "time excludes barrier \n"));
}

TEST(Report, ProgramNameIsNcclTestsOne) {
  Options options;
  options.collective = Collective::AllReduce;
  EXPECT_EQ(programName(options), "all_reduce_perf");
  options.collective = Collective::AlltoAll;
  EXPECT_EQ(programName(options), "alltoall_perf");
}

}  // namespace
}  // namespace hora::perf
