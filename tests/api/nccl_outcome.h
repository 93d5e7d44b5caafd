// The result of one nccl.h call together with the ncclGetLastError text
// read right after it, on the same thread (hora keeps the text per thread).
#pragma once

#include <gmock/gmock.h>

#include <ostream>
#include <string>
#include <vector>

#include "nccl.h"

namespace hora_api_test {

using Words = std::vector<std::string>;

struct Outcome {
  ncclResult_t result;
  std::string text;
};

inline Outcome outcomeOf(ncclResult_t result) {
  const char* text = ncclGetLastError(nullptr);
  return {result, text == nullptr ? std::string() : std::string(text)};
}

inline std::ostream& operator<<(std::ostream& out, const Outcome& outcome) {
  return out << "result " << outcome.result << " (" << ncclGetErrorString(outcome.result)
             << "), last error \"" << outcome.text << "\"";
}

// Failed with `code`, and the text contains every one of `words`.
MATCHER_P2(FailsWith, code, words, "") {
  if (arg.result != code) {
    *result_listener << "the result is " << arg.result << ", not " << code;
    return false;
  }
  for (const std::string& word : words) {
    if (arg.text.find(word) == std::string::npos) {
      *result_listener << "the error text does not say \"" << word << "\"";
      return false;
    }
  }
  return true;
}

}  // namespace hora_api_test
