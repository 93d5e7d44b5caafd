// The gatekeeper that fronts every hora listener, in one process.
#include "bootstrap/gatekeeper.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/error.h"
#include "base/log.h"

namespace hora::bootstrap {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t kMagic = 0x5eed5eed5eed5eedULL;

double threadCpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

std::size_t countOf(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

// Lowers this process's descriptor limit to what is open now, so that the
// next accept() fails with EMFILE; the old limit comes back on scope exit.
class NoSpareDescriptors {
 public:
  NoSpareDescriptors() {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    int highest = ::open("/dev/null", O_RDONLY);  // the lowest free number
    ::close(highest);
    rlimit tight = saved_;
    tight.rlim_cur = static_cast<rlim_t>(highest);
    ::setrlimit(RLIMIT_NOFILE, &tight);
  }
  ~NoSpareDescriptors() { ::setrlimit(RLIMIT_NOFILE, &saved_); }

 private:
  rlimit saved_{};
};

// A process out of descriptors cannot accept a rank that connects; it must
// rest and try again, not spin on the readable listener (writing a log line
// at every turn), and must admit the rank once descriptors are free again.
TEST(Gatekeeper, OutOfDescriptorsItRestsSaysSoOnceAndAdmitsLater) {
  if (!log::enabled(log::Level::Warn) || std::getenv("HORA_DEBUG_FILE") != nullptr)
    GTEST_SKIP() << "counts WARN lines on stderr: run with HORA_DEBUG=WARN and no HORA_DEBUG_FILE";
  Gatekeeper gatekeeper(Socket::listen(SocketAddress::parse("127.0.0.1:0")),
                        {kMagic, Purpose::RingHello, sizeof(std::uint64_t), "test listener", ""});
  Socket guest = Socket::connect(gatekeeper.localAddress(), Deadline::after(5s), nullptr, "the test listener");
  const std::uint64_t body = 42;
  sendGreeting(guest, kMagic, Purpose::RingHello, &body, sizeof(body), Deadline::after(5s), nullptr,
               "the test listener");

  std::string log;
  double cpuSeconds = 0;
  ::testing::internal::CaptureStderr();  // opens its file while it still can
  {
    NoSpareDescriptors limit;
    const double cpuBefore = threadCpuSeconds();
    EXPECT_THROW(gatekeeper.admit(Deadline::after(1000ms), nullptr, "waiting for the test guest"), Error);
    cpuSeconds = threadCpuSeconds() - cpuBefore;
  }
  log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(countOf(log, "accept failed"), 1u) << log.substr(0, 2000);
  EXPECT_NE(log.find("Too many open files"), std::string::npos) << log.substr(0, 2000);
  EXPECT_LT(cpuSeconds, 0.2) << "the gatekeeper spun on the listener it could not accept from";

  Gatekeeper::Guest admitted = gatekeeper.admit(Deadline::after(5s), nullptr, "waiting for the test guest");
  std::uint64_t received = 0;
  ASSERT_EQ(admitted.body.size(), sizeof(received));
  std::memcpy(&received, admitted.body.data(), sizeof(received));
  EXPECT_EQ(received, body);
}

}  // namespace
}  // namespace hora::bootstrap
