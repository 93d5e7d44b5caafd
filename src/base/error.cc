#include "base/error.h"

#include <cstring>

namespace hora {

std::string errnoText(int err) {
  const char* name = strerrorname_np(err);
  return strCat(name ? name : "errno " + std::to_string(err), " (", std::strerror(err), ")");
}

void failInternal(const char* file, int line, const char* condition, const std::string& detail) {
  throw Error(ErrorKind::Internal,
              strCat("internal error at ", file, ":", line, ": ", condition, " failed",
                     detail.empty() ? "" : ": ", detail));
}

}  // namespace hora
