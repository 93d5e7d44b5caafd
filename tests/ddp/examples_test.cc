// The examples, run as users run them: under hora-run, checked by their output.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace {

std::string pathFromEnv(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) ADD_FAILURE() << name << " is not set (the build passes it)";
  return value ? value : "";
}

struct Result {
  int exitCode = -1;
  std::string output;  // stdout and stderr
};

// Runs `hora-run -n ranks program args...` with a wall-clock limit.
Result runUnderHoraRun(int ranks, const std::string& program, const std::string& arguments) {
  const std::string command = pathFromEnv("HORA_RUN") + " -n " + std::to_string(ranks) +
                              " --timeout 60 " + program + " " + arguments + " 2>&1";
  Result result;
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) {
    ADD_FAILURE() << "cannot start: " << command;
    return result;
  }
  char buffer[4096];
  std::size_t got;
  while ((got = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, got);
  const int status = ::pclose(pipe);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string scratchFile(const std::string& name) {
  return ::testing::TempDir() + "hora_ddp_" + name + "_" + std::to_string(::getpid());
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::size_t countOf(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

TEST(DdpLinear, PrintsPyTorchBatchesAndIdenticalCheckpointedWeights) {
  const std::string checkpoint = scratchFile("linear_checkpoint");
  const Result run = runUnderHoraRun(2, pathFromEnv("DDP_LINEAR"), checkpoint);
  std::remove(checkpoint.c_str());
  ASSERT_EQ(run.exitCode, 0) << run.output;
  // torch.utils.data.distributed.DistributedSampler(shuffle=True, seed=0) on
  // a dataset of 4 with 2 replicas: epoch 0 -> [0, 3] / [1, 2], epoch 1 ->
  // [1, 2] / [3, 0]; the dataset holds x = index + 1.
  EXPECT_TRUE(contains(run.output, "epoch 0 rank 0 batch x = [1, 4]")) << run.output;
  EXPECT_TRUE(contains(run.output, "epoch 0 rank 1 batch x = [2, 3]")) << run.output;
  EXPECT_TRUE(contains(run.output, "epoch 1 rank 0 batch x = [2, 3]")) << run.output;
  EXPECT_TRUE(contains(run.output, "epoch 1 rank 1 batch x = [4, 1]")) << run.output;
  EXPECT_EQ(countOf(run.output, ": identical"), 2u) << run.output;
  // The same two epochs in PyTorch 1.13 (same initial weights, SGD lr 0.001,
  // MSE, the mean of the two ranks' batch gradients) end at these weights.
  EXPECT_EQ(countOf(run.output, "final weight 0.15238142 bias 0.203813866"), 2u) << run.output;
}

std::vector<double> readParameters(const std::string& path) {
  std::ifstream file(path);
  std::vector<double> values;
  std::string line;
  while (std::getline(file, line)) values.push_back(std::strtod(line.c_str(), nullptr));
  return values;
}

// Trains with `ranks` ranks and returns the final parameters (rank 0's).
std::vector<double> trainMlp(int ranks, const std::string& options, std::string* output = nullptr) {
  const std::string out = scratchFile("mlp_" + std::to_string(ranks));
  const Result run = runUnderHoraRun(ranks, pathFromEnv("DDP_MLP"), options + " --out " + out);
  EXPECT_EQ(run.exitCode, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "parameters identical on all " + std::to_string(ranks) +
                                       " ranks: yes"))
      << run.output;
  if (output) *output = run.output;
  auto values = readParameters(out);
  std::remove(out.c_str());
  return values;
}

double largestRelativeDifference(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double largest = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    largest = std::max(largest, std::abs(a[i] - b[i]) / std::max(1.0, std::abs(b[i])));
  return largest;
}

// After 100 epochs the runs below differ by about 1e-5 (float rounding: sums
// in a different order), while a different batch size moves parameters by
// order 1: 1e-3 separates the two cleanly.
constexpr double kSameTraining = 1e-3;

TEST(DdpMlp, RanksWithBatchBMatchOneRankWithBatchNB) {
  const auto single = trainMlp(1, "--batch 32");
  ASSERT_FALSE(single.empty());
  EXPECT_LT(largestRelativeDifference(trainMlp(2, "--batch 16"), single), kSameTraining);
  EXPECT_LT(largestRelativeDifference(trainMlp(4, "--batch 8"), single), kSameTraining);
  // Accumulating 2 micro-batches of 8 under noSync() is one step of 16 per rank.
  EXPECT_LT(largestRelativeDifference(trainMlp(2, "--batch 8 --accumulate 2"), single),
            kSameTraining);
  // A genuinely different training (batch 48) is far from it: the check can fail.
  EXPECT_GT(largestRelativeDifference(trainMlp(1, "--batch 48"), single), 100 * kSameTraining);
  // 3 ranks with batch 16 match 1 rank with batch 48.
  EXPECT_LT(largestRelativeDifference(trainMlp(3, "--batch 16"), trainMlp(1, "--batch 48")),
            kSameTraining);
}

// With a number of batches that K does not divide, the last step has fewer
// micro-batches; it is still scaled by 1/(B*K), as the single rank scales
// its shorter last batch by its nominal size (scaling by what the step
// holds moved the parameters by 0.17 here).
TEST(DdpMlp, AShorterLastAccumulationStepStillMatchesOneRank) {
  const auto single = trainMlp(1, "--batch 32 --points 1000 --epochs 30");
  ASSERT_FALSE(single.empty());
  EXPECT_LT(largestRelativeDifference(trainMlp(2, "--batch 8 --accumulate 2 --points 1000 --epochs 30"), single),
            kSameTraining);
}

TEST(DdpMlp, LossGoesDown) {
  std::string output;
  trainMlp(2, "--batch 16", &output);
  std::smatch first, last;
  ASSERT_TRUE(std::regex_search(output, first, std::regex("epoch 0 loss ([0-9.]+)"))) << output;
  ASSERT_TRUE(std::regex_search(output, last, std::regex("epoch 99 loss ([0-9.]+)"))) << output;
  const double initial = std::stod(first[1]);
  const double final = std::stod(last[1]);
  EXPECT_LT(final, 0.25 * initial) << output;
}

// Options the program cannot train with stop it before it starts, naming the
// option and the value, instead of training on something else.
TEST(DdpMlp, RefusesOptionsItCannotTrainWith) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"--epochs -1", "--epochs needs a whole number above 0, not '-1'"},
      {"--epochs 0", "--epochs needs a whole number above 0, not '0'"},
      {"--points 0", "--points needs a whole number above 0, not '0'"},
      {"--batch 8x", "--batch needs a whole number above 0, not '8x'"},
      {"--lr fast", "--lr needs a finite number above 0, not 'fast'"},
      {"--lr nan", "--lr needs a finite number above 0, not 'nan'"},
      {"--lr -0.5", "--lr needs a finite number above 0, not '-0.5'"},
      {"--hidden", "option --hidden needs a value"},
  };
  for (const auto& [arguments, expected] : cases) {
    const Result result = runUnderHoraRun(1, pathFromEnv("DDP_MLP"), arguments);
    EXPECT_NE(result.exitCode, 0) << arguments << ":\n" << result.output;
    EXPECT_TRUE(contains(result.output, "ddp_mlp: " + expected)) << arguments << ":\n" << result.output;
  }
}

}  // namespace
