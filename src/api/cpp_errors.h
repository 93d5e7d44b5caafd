// The C++ API's promise that every error says which rank raised it
// (include/hora/error.h): argument checks shared with nccl.h speak of the
// argument only (nccl.h's messages name the entry point instead), so the
// C++ API's calls run them through onRank.
#pragma once

#include <string_view>

#include "base/error.h"

namespace hora::api {

// Runs `body`; an Error it throws that does not yet name a rank is thrown
// again with "rank R: " in front, keeping its kind and failed rank.
template <typename Body>
auto onRank(int rank, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error& error) {
    if (std::string_view(error.what()).starts_with("rank ")) throw;
    throw Error(error.kind(), strCat("rank ", rank, ": ", error.what()), error.failedRank());
  }
}

}  // namespace hora::api
