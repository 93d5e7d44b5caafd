// The step trace (core/step_trace.h): its file, its bound on records, and
// what two ranks over shared memory record with HORA_TRACE set: every
// operation in order, and waits that lie inside the operation they belong
// to. An unwritable file costs nothing but a warning.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/step_trace.h"
#include "nccl.h"
#include "support/rank_threads.h"
#include "support/scoped_env.h"

namespace hora::core {
namespace {

namespace fs = std::filesystem;

struct Row {
  std::uint64_t start;
  long long duration;
  std::string record, what;
  std::uint64_t op, bytes;
  unsigned polls, yields, sleeps;
};

struct TraceFile {
  std::string title;
  std::string header;
  std::vector<Row> rows;
};

TraceFile readTrace(const fs::path& path) {
  std::ifstream in(path);
  TraceFile file;
  std::getline(in, file.title);
  std::getline(in, file.header);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    Row row;
    std::getline(fields >> row.start >> row.duration >> std::ws, row.record, '\t');
    std::getline(fields, row.what, '\t');
    fields >> row.op >> row.bytes >> row.polls >> row.yields >> row.sleeps;
    EXPECT_FALSE(fields.fail()) << path << ": " << line;
    file.rows.push_back(row);
  }
  return file;
}

// A fresh folder for one test's files, removed at the end.
struct Folder {
  fs::path path = fs::temp_directory_path() / ("hora-trace-test-" + std::to_string(::getpid()) + "-" +
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  Folder() { fs::create_directories(path); }
  ~Folder() { fs::remove_all(path); }
  // The one file in it whose name starts with `start`.
  fs::path only(const std::string& start) const {
    std::vector<fs::path> found;
    for (const auto& entry : fs::directory_iterator(path))
      if (entry.path().filename().string().rfind(start, 0) == 0) found.push_back(entry.path());
    EXPECT_EQ(found.size(), 1u) << "files starting with " << start << " in " << path;
    return found.empty() ? fs::path() : found.front();
  }
};


TEST(StepTrace, WritesItsRecordsInOrder) {
  Folder folder;
  const fs::path path = folder.path / "unit.tsv";
  {
    StepTrace trace(path.string(), 3, 4, 100);
    trace.beginOp("AllReduce", 4096);
    trace.wait("receiving from a peer", 10, 25, 512, WaitCounts{2, 1, 0});
    trace.endOp();
    trace.beginOp("Broadcast", 8);
    trace.endOp();
  }
  const TraceFile file = readTrace(path);
  EXPECT_NE(file.title.find("rank 3 of 4"), std::string::npos) << file.title;
  EXPECT_NE(file.title.find("3 records, 0 dropped"), std::string::npos) << file.title;
  EXPECT_EQ(file.header, "start_ns\tduration_ns\trecord\twhat\top\tbytes\tpolls\tyields\tsleeps");
  ASSERT_EQ(file.rows.size(), 3u);
  EXPECT_EQ(file.rows[0].record, "op");
  EXPECT_EQ(file.rows[0].what, "AllReduce");
  EXPECT_EQ(file.rows[0].op, 1u);
  EXPECT_EQ(file.rows[0].bytes, 4096u);
  EXPECT_GE(file.rows[0].duration, 0);
  EXPECT_EQ(file.rows[1].record, "wait");
  EXPECT_EQ(file.rows[1].what, "receiving from a peer");
  EXPECT_EQ(file.rows[1].start, 10u);
  EXPECT_EQ(file.rows[1].duration, 15);
  EXPECT_EQ(file.rows[1].op, 1u);
  EXPECT_EQ(file.rows[1].bytes, 512u);
  EXPECT_EQ(file.rows[1].polls, 2u);
  EXPECT_EQ(file.rows[1].yields, 1u);
  EXPECT_EQ(file.rows[2].what, "Broadcast");
  EXPECT_EQ(file.rows[2].op, 2u);
}

TEST(StepTrace, KeepsAtMostTheRecordsAskedForAndCountsTheRest) {
  Folder folder;
  const fs::path path = folder.path / "bounded.tsv";
  {
    StepTrace trace(path.string(), 0, 1, 3);
    for (int i = 0; i < 3; ++i) {
      trace.beginOp("AllGather", 64);
      trace.wait("receiving from a peer", 1, 2, 0, {});
      trace.endOp();
    }
  }
  const TraceFile file = readTrace(path);
  EXPECT_NE(file.title.find("3 records, 3 dropped"), std::string::npos) << file.title;
  ASSERT_EQ(file.rows.size(), 3u);
  // The second operation began with room left and keeps its end; the
  // third found none, and its wait did not join the second's.
  EXPECT_EQ(file.rows[2].record, "op");
  EXPECT_EQ(file.rows[2].op, 2u);
  EXPECT_GE(file.rows[2].duration, 0);
}

TEST(StepTrace, AnOperationStillOpenHasNoDuration) {
  Folder folder;
  const fs::path path = folder.path / "open.tsv";
  { StepTrace(path.string(), 0, 1, 10).beginOp("AllReduce", 8); }
  const TraceFile file = readTrace(path);
  ASSERT_EQ(file.rows.size(), 1u);
  EXPECT_EQ(file.rows[0].duration, -1);
}

// Two ranks as threads over shared memory, each with a trace file.
TEST(StepTrace, TwoRanksRecordEveryOperationAndTheWaitsInsideIt) {
  Folder folder;
  const test_support::ScopedEnv trace("HORA_TRACE", (folder.path / "job").string());
  const test_support::ScopedEnv transport("HORA_TRANSPORT", "shm");
  constexpr int kRanks = 2;
  constexpr std::size_t kCount = 1 << 18;  // 1 MiB of floats: several slices
  std::vector<ncclComm_t> comms(kRanks, nullptr);
  ASSERT_EQ(ncclCommInitAll(comms.data(), kRanks, nullptr), ncclSuccess);
  test_support::onEachRank(kRanks, [&](int rank) {
    std::vector<float> data(kCount * kRanks, 1.0f);
    for (int i = 0; i < 3; ++i)
      ASSERT_EQ(ncclAllReduce(data.data(), data.data(), kCount, ncclFloat, ncclSum, comms[rank], nullptr),
                ncclSuccess);
    ASSERT_EQ(ncclAllGather(data.data(), data.data() + kCount * kRanks / 2, 16, ncclFloat, comms[rank], nullptr),
              ncclSuccess);
    const int peer = 1 - rank;
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(ncclSend(data.data(), 100, ncclFloat, peer, comms[rank], nullptr), ncclSuccess);
    ASSERT_EQ(ncclRecv(data.data() + 100, 100, ncclFloat, peer, comms[rank], nullptr), ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  });
  for (ncclComm_t comm : comms) EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);

  std::size_t waits = 0;
  for (int rank = 0; rank < kRanks; ++rank) {
    const TraceFile file = readTrace(folder.only("job.rank" + std::to_string(rank) + "."));
    EXPECT_NE(file.title.find("rank " + std::to_string(rank) + " of 2"), std::string::npos) << file.title;
    std::vector<Row> ops;
    for (const Row& row : file.rows)
      if (row.record == "op") ops.push_back(row);
    ASSERT_EQ(ops.size(), 5u) << "rank " << rank;
    const std::vector<std::string> names = {"AllReduce", "AllReduce", "AllReduce", "AllGather", "point-to-point"};
    const std::vector<std::uint64_t> bytes = {kCount * 4, kCount * 4, kCount * 4, 64, 800};
    for (std::size_t i = 0; i < ops.size(); ++i) {
      EXPECT_EQ(ops[i].what, names[i]) << "rank " << rank << ", operation " << i + 1;
      EXPECT_EQ(ops[i].op, i + 1);
      EXPECT_EQ(ops[i].bytes, bytes[i]);
      EXPECT_GE(ops[i].duration, 0);
      if (i > 0) {
        EXPECT_GE(ops[i].start, ops[i - 1].start + ops[i - 1].duration);
      }
    }
    for (const Row& row : file.rows) {
      if (row.record != "wait") continue;
      ++waits;
      ASSERT_GE(row.op, 1u);
      ASSERT_LE(row.op, ops.size());
      const Row& op = ops[row.op - 1];
      EXPECT_GE(row.duration, 0);
      EXPECT_GE(row.start, op.start) << row.what;
      EXPECT_LE(row.start + row.duration, op.start + op.duration) << row.what;
      EXPECT_GE(row.polls, 1u);
    }
  }
  // 1 MiB goes in several slices: a rank waits for its peer's at least once.
  EXPECT_GT(waits, 0u);
}

TEST(StepTrace, AFileThatCannotBeWrittenIsOnlyAWarning) {
  const test_support::ScopedEnv trace("HORA_TRACE", "/nonexistent-hora-folder/trace");
  std::vector<ncclComm_t> comms(2, nullptr);
  ASSERT_EQ(ncclCommInitAll(comms.data(), 2, nullptr), ncclSuccess);
  test_support::onEachRank(2, [&](int rank) {
    float value = 1;
    EXPECT_EQ(ncclAllReduce(&value, &value, 1, ncclFloat, ncclSum, comms[rank], nullptr), ncclSuccess);
    EXPECT_EQ(value, 2);
  });
  for (ncclComm_t comm : comms) EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(StepTrace, ABadRecordBoundIsRefusedAtInit) {
  const test_support::ScopedEnv trace("HORA_TRACE", "/tmp/unused");
  const test_support::ScopedEnv records("HORA_TRACE_RECORDS", "0");
  std::vector<ncclComm_t> comms(2, nullptr);
  EXPECT_EQ(ncclCommInitAll(comms.data(), 2, nullptr), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("HORA_TRACE_RECORDS"), std::string::npos)
      << ncclGetLastError(nullptr);
}

}  // namespace
}  // namespace hora::core
