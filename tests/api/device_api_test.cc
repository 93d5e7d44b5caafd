// The host entry points of NCCL's device API (include/hora/nccl_device_host.h):
// what needs a device communicator fails with ncclInvalidUsage and a text
// naming the call and the device API, leaving its outputs alone; the team
// functions answer from the communicator (hora's LSA team is the caller
// alone) and give an empty team or rank -1, with a text, when they cannot.
// Ranks are threads of this process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <climits>
#include <string>

#include "hora/nccl_device_host.h"
#include "local_comms.h"
#include "nccl_outcome.h"

// Exported by NVIDIA's library and hora's, declared by neither's headers.
extern "C" void ncclResetDebugInitInternal(void);

// Beside ncclTeam (in the global namespace), where GoogleTest's comparisons
// and printing look for them.
static bool operator==(const ncclTeam_t& a, const ncclTeam_t& b) {
  return a.nRanks == b.nRanks && a.rank == b.rank && a.stride == b.stride;
}
static void PrintTo(const ncclTeam_t& team, std::ostream* out) {
  *out << "{nRanks " << team.nRanks << ", rank " << team.rank << ", stride " << team.stride << "}";
}

namespace hora_api_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr ncclTeam_t kEmpty = {0, -1, 1};

std::string lastError() { return ncclGetLastError(nullptr); }

// Room for whatever an output argument points at, filled with a pattern
// that shows whether the call wrote to it.
struct Untouched {
  std::array<unsigned char, 256> bytes;
  Untouched() { bytes.fill(0xa5); }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(bytes.data());
  }
  bool intact() const {
    for (unsigned char byte : bytes)
      if (byte != 0xa5) return false;
    return true;
  }
};

TEST(DeviceApi, WhatNeedsADeviceCommunicatorIsRefused) {
  LocalComms comms(1);
  const Words words = {"device API", "not supported by hora"};
  for (ncclComm_t comm : {comms[0], static_cast<ncclComm_t>(nullptr)}) {
    Untouched out;
    EXPECT_THAT(outcomeOf(ncclDevCommCreate(comm, out.as<ncclDevCommRequirements_t>(), out.as<ncclDevComm_t>())),
                FailsWith(ncclInvalidUsage, Words{"ncclDevCommCreate", words[0], words[1]}));
    EXPECT_THAT(outcomeOf(ncclDevCommDestroy(comm, out.as<ncclDevComm_t>())),
                FailsWith(ncclInvalidUsage, Words{"ncclDevCommDestroy", words[0], words[1]}));
    EXPECT_THAT(outcomeOf(ncclGinBarrierCreateRequirement(comm, ncclTeamWorld(comms[0]), 4,
                                                          out.as<ncclGinBarrierHandle_t>(),
                                                          out.as<ncclDevResourceRequirements_t>())),
                FailsWith(ncclInvalidUsage, Words{"ncclGinBarrierCreateRequirement", words[0], words[1]}));
    EXPECT_TRUE(out.intact()) << "a refused call wrote to its output";
  }
  Untouched out;
  EXPECT_THAT(outcomeOf(ncclLsaBarrierCreateRequirement(ncclTeamLsa(comms[0]), 4, out.as<ncclLsaBarrierHandle_t>(),
                                                        out.as<ncclDevResourceRequirements_t>())),
              FailsWith(ncclInvalidUsage, Words{"ncclLsaBarrierCreateRequirement", words[0], words[1]}));
  EXPECT_THAT(outcomeOf(ncclLLA2ACreateRequirement(2, 16, out.as<ncclLLA2AHandle_t>(),
                                                   out.as<ncclDevResourceRequirements_t>())),
              FailsWith(ncclInvalidUsage, Words{"ncclLLA2ACreateRequirement", words[0], words[1]}));
  EXPECT_TRUE(out.intact()) << "a refused call wrote to its output";
  // The profiling aliases are the same functions.
  EXPECT_EQ(pncclDevCommCreate(comms[0], nullptr, nullptr), ncclInvalidUsage);
}

TEST(DeviceApi, TeamsOfEachRank) {
  LocalComms comms(3);
  for (int rank = 0; rank < comms.size(); ++rank) {
    const ncclTeam_t world = {3, rank, 1};
    EXPECT_EQ(ncclTeamWorld(comms[rank]), world);
    EXPECT_EQ(pncclTeamWorld(comms[rank]), world);
    // No peer memory is reachable through a device API hora lacks: the LSA
    // team is the rank alone, and the rail team (one rank of every LSA
    // team) is then the world.
    EXPECT_EQ(ncclTeamLsa(comms[rank]), (ncclTeam_t{1, 0, 1}));
    EXPECT_EQ(ncclTeamRail(comms[rank]), world);
  }
}

TEST(DeviceApi, TeamRanksToWorldAndLsaRanks) {
  LocalComms comms(4);
  for (int rank = 0; rank < comms.size(); ++rank) {
    ncclComm_t comm = comms[rank];
    for (int member = 0; member < 4; ++member) {
      EXPECT_EQ(ncclTeamRankToWorld(comm, ncclTeamWorld(comm), member), member);
      EXPECT_EQ(ncclTeamRankToWorld(comm, ncclTeamRail(comm), member), member);
    }
    EXPECT_EQ(ncclTeamRankToWorld(comm, ncclTeamLsa(comm), 0), rank);
    // The even ranks as a team of stride 2 (its members at 0, 2).
    if (rank % 2 == 0) {
      EXPECT_EQ(ncclTeamRankToWorld(comm, (ncclTeam_t{2, rank / 2, 2}), 1), 2);
    }
    EXPECT_EQ(ncclTeamRankToLsa(comm, ncclTeamLsa(comm), 0), 0);
    EXPECT_EQ(ncclTeamRankToLsa(comm, ncclTeamWorld(comm), rank), 0);
  }
}

TEST(DeviceApi, TeamRanksThatDoNotExistAreMinusOneWithAText) {
  LocalComms comms(2);
  ncclComm_t comm = comms[1];
  EXPECT_EQ(ncclTeamRankToWorld(comm, ncclTeamWorld(comm), 2), -1);
  EXPECT_THAT(lastError(), AllOf(HasSubstr("ncclTeamRankToWorld"), HasSubstr("rank 2 is not a member")));
  EXPECT_EQ(ncclTeamRankToWorld(comm, ncclTeamWorld(comm), -1), -1);
  // A team that does not hold the caller.
  EXPECT_EQ(ncclTeamRankToWorld(comm, (ncclTeam_t{2, 5, 1}), 0), -1);
  EXPECT_THAT(lastError(), HasSubstr("does not hold the calling rank"));
  // Members past the end of the world.
  EXPECT_EQ(ncclTeamRankToWorld(comm, (ncclTeam_t{4, 0, 1}), 3), -1);
  EXPECT_THAT(lastError(), HasSubstr("outside [0, 2)"));
  // Rank 0 is a member of the world team, not of rank 1's LSA team.
  EXPECT_EQ(ncclTeamRankToLsa(comm, ncclTeamWorld(comm), 0), -1);
  EXPECT_THAT(lastError(), AllOf(HasSubstr("ncclTeamRankToLsa"), HasSubstr("LSA team")));
}

TEST(DeviceApi, InvalidCommunicatorsGiveAnEmptyTeamAndMinusOne) {
  ncclComm_t destroyed = nullptr;
  ASSERT_EQ(ncclCommInitAll(&destroyed, 1, nullptr), ncclSuccess);
  ASSERT_EQ(ncclCommDestroy(destroyed), ncclSuccess);
  for (ncclComm_t comm : {static_cast<ncclComm_t>(nullptr), destroyed}) {
    EXPECT_EQ(ncclTeamWorld(comm), kEmpty);
    EXPECT_THAT(lastError(), HasSubstr("ncclTeamWorld"));
    EXPECT_EQ(ncclTeamLsa(comm), kEmpty);
    EXPECT_THAT(lastError(), HasSubstr("ncclTeamLsa"));
    EXPECT_EQ(ncclTeamRail(comm), kEmpty);
    EXPECT_THAT(lastError(), HasSubstr("ncclTeamRail"));
    EXPECT_EQ(ncclTeamRankToWorld(comm, (ncclTeam_t{1, 0, 1}), 0), -1);
    EXPECT_THAT(lastError(), HasSubstr("ncclTeamRankToWorld"));
    EXPECT_EQ(ncclTeamRankToLsa(comm, (ncclTeam_t{1, 0, 1}), 0), -1);
    EXPECT_THAT(lastError(), HasSubstr("ncclTeamRankToLsa"));
  }
}

TEST(DeviceApi, LLA2ASlotCountIsNcclsArithmetic) {
  // An LL slot carries 8 bytes of an element.
  EXPECT_EQ(ncclLLA2ACalcSlots(10, 8), 10);
  EXPECT_EQ(ncclLLA2ACalcSlots(10, 9), 20);
  EXPECT_EQ(ncclLLA2ACalcSlots(10, 1), 10);
  EXPECT_EQ(ncclLLA2ACalcSlots(3, 64), 24);
  EXPECT_EQ(ncclLLA2ACalcSlots(0, 4), 0);
  EXPECT_EQ(ncclLLA2ACalcSlots(3, 0), 0);
  EXPECT_EQ(pncclLLA2ACalcSlots(10, 9), 20);
  EXPECT_EQ(ncclLLA2ACalcSlots(-1, 8), -1);
  EXPECT_THAT(lastError(), AllOf(HasSubstr("ncclLLA2ACalcSlots"), HasSubstr("negative")));
  EXPECT_EQ(ncclLLA2ACalcSlots(INT_MAX, 16), -1);
  EXPECT_THAT(lastError(), HasSubstr("more than an int holds"));
}

TEST(DeviceApi, ResetDebugInitInternalIsCallable) {
  ncclResetDebugInitInternal();
  LocalComms comms(1);  // and the library still works
  EXPECT_EQ(ncclTeamWorld(comms[0]), (ncclTeam_t{1, 0, 1}));
}

}  // namespace
}  // namespace hora_api_test
