// The settings every rank must share, compared as init compares them.
#include "core/agreed_settings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"

namespace hora::core {
namespace {

using ::testing::HasSubstr;

// The text of the error checkSettingsAgree throws, or "" when it throws none.
std::string disagreement(const std::vector<AgreedSettings>& all, bool sharedCpus = false) {
  try {
    checkSettingsAgree(all, 1, sharedCpus);
    return "";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidUsage);
    return error.what();
  }
}

TEST(AgreedSettings, AlikeOnEveryRankPass) {
  const AgreedSettings defaults = agreedSettingsOf(Tuning{});
  EXPECT_EQ(disagreement({defaults, defaults, defaults}), "");
  EXPECT_EQ(disagreement({defaults}), "");
}

TEST(AgreedSettings, EachOneThatDiffersIsNamedWithTheFirstRankAndBothValues) {
  struct Case {
    const char* variable;
    std::uint64_t AgreedSettings::*field;
  };
  for (const Case& c : {Case{"HORA_CHUNK_SIZE", &AgreedSettings::chunkBytes},
                        Case{"HORA_SHM_FIFO_SIZE", &AgreedSettings::shmFifoBytes},
                        Case{"HORA_DIRECT_MAX_BYTES", &AgreedSettings::directMaxBytes},
                        Case{"HORA_LL_MAX_BYTES", &AgreedSettings::llMaxBytes},
                        Case{"HORA_SHM_SINGLE_COPY_MIN", &AgreedSettings::singleCopyMinBytes},
                        Case{"HORA_SHM_SINGLE_COPY_MAX", &AgreedSettings::singleCopyMaxBytes},
                        Case{"HORA_ZERO_COPY_MIN", &AgreedSettings::zeroCopyMinBytes},
                        Case{"HORA_CHECK_AGREEMENT", &AgreedSettings::checkAgreement},
                        Case{"HORA_SLICE_SIZE", &AgreedSettings::sliceBytes}}) {
    std::vector<AgreedSettings> all(4, agreedSettingsOf(Tuning{}));
    for (AgreedSettings& settings : all) settings.*c.field = 1000;
    EXPECT_EQ(disagreement(all), "") << c.variable;
    all[2].*c.field = 12345;
    all[3].*c.field = 777;
    EXPECT_THAT(disagreement(all), HasSubstr(std::string(c.variable) + " is 1000 on rank 0 but 12345 on rank 2"));
  }
}

TEST(AgreedSettings, AnUnsetFifoIsTheDefaultThePlacementGives) {
  AgreedSettings unset = agreedSettingsOf(Tuning{}), fourMegabytes = unset;
  fourMegabytes.shmFifoBytes = Tuning::kShmFifoBytes;
  // A core per rank: unset means 4 MiB, so setting 4 MiB on one rank is no difference.
  EXPECT_EQ(disagreement({unset, fourMegabytes}, /*sharedCpus=*/false), "");
  // Ranks sharing cores: unset means 512 KiB.
  EXPECT_THAT(disagreement({unset, fourMegabytes}, /*sharedCpus=*/true),
              HasSubstr("HORA_SHM_FIFO_SIZE is 524288 on rank 0 but 4194304 on rank 1"));
}

}  // namespace
}  // namespace hora::core
