// Every element type and reduction, at counts that are empty, one element
// and primes, in and out of place, aligned and not, at every root: the
// collectives harness's matrix (tests/collectives) run through hora's RDMA
// credit protocol, each result compared byte for byte with the harness's
// reference. Ranks are threads of this process, over
//   - ib on the fake reliable-connected device (HORA_TRANSPORT=ib), and
//   - ofi on libfabric's tcp provider (HORA_TRANSPORT=ofi).
// Protocol coverage only: nothing here has run on an InfiniBand or RoCE NIC.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "case_matrix.h"
#include "fake_queue_pair.h"
#include "hora_config.h"
#include "matrix_params.h"
#if HORA_HAVE_OFI
#include "transport/rdma/ofi/ofi_device.h"
#endif

namespace hora_coll_test {
namespace {

using hora::topology::TransportKind;
using hora::transport::rdma::CreditGeometry;
using hora::transport::rdma::currentDevice;
using hora::transport::rdma::useDevice;
using hora::transport::rdma::testing::FakeDevice;
using hora::transport::rdma::testing::FakeOptions;

class MatrixOverRdma : public ::testing::TestWithParam<MatrixParams> {
 protected:
  bool overFake() const { return GetParam().transport == "ib"; }
  // Registrations libfabric's device has made so far (the device, once
  // opened, stays for the process): the run must add some.
  static std::uint64_t ofiRegistrationsMade() {
#if HORA_HAVE_OFI
    auto device = std::dynamic_pointer_cast<hora::transport::rdma::ofi::OfiDevice>(currentDevice(TransportKind::Ofi));
    return device ? device->registrations().registrationsMade() : 0;
#else
    return 0;
#endif
  }
  void SetUp() override {
    if (!overFake()) {
      ::setenv("HORA_OFI_PROVIDER", "tcp", 1);
      ofiMadeBefore_ = ofiRegistrationsMade();
      return;
    }
    FakeOptions options;
    options.delaySteps = 1;  // requests land a poll after they were posted
    // Small slots: the counts above cross many slot boundaries.
    fake_ = std::make_shared<FakeDevice>(options, CreditGeometry{4, 4096});
    useDevice(TransportKind::Ib, fake_);
  }
  void TearDown() override {
    if (!overFake()) {
      ::unsetenv("HORA_OFI_PROVIDER");
      EXPECT_GT(ofiRegistrationsMade(), ofiMadeBefore_) << "no connection went through libfabric's tcp provider";
      return;
    }
    useDevice(TransportKind::Ib, nullptr);
    EXPECT_GT(fake_->queuePairsCreated(), 0) << "no connection went through the fake device";
  }
  std::shared_ptr<FakeDevice> fake_;
  std::uint64_t ofiMadeBefore_ = 0;
};

TEST_P(MatrixOverRdma, EveryTypeReductionAndPlacement) {
  const MatrixParams params = GetParam();
  CaseMatrix matrix;
  matrix.collectives = {params.collective};
  matrix.counts = {0, 1, 7, 1009, 5003};
  matrix.seed = 17;
  expectRanksSucceed(matrixRunOptions(params), collectiveCasesProgram(buildCases(matrix, params.nranks)));
}

INSTANTIATE_TEST_SUITE_P(FakeDevice, MatrixOverRdma,
                         ::testing::ValuesIn(matrixParams(allCollectives(), {3}, {RankMode::Threads}, "ib")),
                         matrixParamName);
#if HORA_HAVE_OFI
INSTANTIATE_TEST_SUITE_P(OfiTcpProvider, MatrixOverRdma,
                         ::testing::ValuesIn(matrixParams(allCollectives(), {3}, {RankMode::Threads}, "ofi")),
                         matrixParamName);
#endif

}  // namespace
}  // namespace hora_coll_test
