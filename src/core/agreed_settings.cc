#include "core/agreed_settings.h"

#include "base/error.h"

namespace hora::core {

AgreedSettings agreedSettingsOf(const Tuning& t) {
  AgreedSettings s;
  s.chunkBytes = t.chunkBytes;
  s.shmFifoBytes = t.shmFifoBytes;
  s.directMaxBytes = t.directMaxBytes;
  s.llMaxBytes = t.llMaxBytes;
  s.singleCopyMinBytes = t.singleCopyMinBytes;
  s.singleCopyMaxBytes = t.singleCopyMaxBytes;
  s.zeroCopyMinBytes = t.zeroCopyMinBytes;
  s.checkAgreement = t.checkAgreement ? 1 : 0;
  s.sliceBytes = t.sliceBytes;
  return s;
}

namespace {
struct Setting {
  const char* variable;
  std::uint64_t AgreedSettings::*field;
};

constexpr Setting kSettings[] = {
    {"HORA_CHUNK_SIZE", &AgreedSettings::chunkBytes},
    {"HORA_SHM_FIFO_SIZE", &AgreedSettings::shmFifoBytes},
    {"HORA_DIRECT_MAX_BYTES", &AgreedSettings::directMaxBytes},
    {"HORA_LL_MAX_BYTES", &AgreedSettings::llMaxBytes},
    {"HORA_SHM_SINGLE_COPY_MIN", &AgreedSettings::singleCopyMinBytes},
    {"HORA_SHM_SINGLE_COPY_MAX", &AgreedSettings::singleCopyMaxBytes},
    {"HORA_ZERO_COPY_MIN", &AgreedSettings::zeroCopyMinBytes},
    {"HORA_CHECK_AGREEMENT", &AgreedSettings::checkAgreement},
    {"HORA_SLICE_SIZE", &AgreedSettings::sliceBytes},
};
}  // namespace

void checkSettingsAgree(const std::vector<AgreedSettings>& all, int rank, bool sharedCpus) {
  auto value = [&](const AgreedSettings& s, const Setting& setting) {
    const std::uint64_t v = s.*setting.field;
    if (setting.field != &AgreedSettings::shmFifoBytes || v != 0) return v;
    Tuning settled;
    settled.fitToSharedCpus(sharedCpus);
    return static_cast<std::uint64_t>(settled.shmFifoBytes);
  };
  for (std::size_t r = 1; r < all.size(); ++r)
    for (const Setting& setting : kSettings) {
      const std::uint64_t first = value(all[0], setting), theirs = value(all[r], setting);
      if (first == theirs) continue;
      fail(ErrorKind::InvalidUsage, "rank ", rank, ": ", setting.variable, " is ", first, " on rank 0 but ", theirs,
           " on rank ", r, ": it decides how ranks cut and route an operation's bytes, so it must be the "
           "same on every rank (set it alike everywhere, or nowhere)");
    }
}

}  // namespace hora::core
