// A buffer between two guard zones, with the image it must match.
//
// Layout of the allocation (64-byte aligned):
//   [64 guard bytes][one element of padding when unaligned][payload][64 guard bytes]
// Everything starts as a known pattern. The test writes inputs with
// setInitial() (into the buffer and the image), states the outputs it
// expects with expect() (image only), and after the call compares every
// byte, guards included, with firstMismatch().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "element_types.h"

namespace hora_coll_test {

class GuardedArena {
 public:
  static constexpr std::size_t kGuardBytes = 64;

  // shared: the memory comes from ncclMemAlloc (so that it can be
  // registered as a window) instead of the C heap.
  GuardedArena(const ElementType& type, std::size_t elements, bool unaligned, bool shared = false);

  void* data() { return payload_; }
  // The whole allocation, guards included (what a window registers).
  void* allocation() { return memory_.get(); }
  std::size_t allocationBytes() const { return totalBytes_; }
  std::size_t elements() const { return elements_; }
  void setInitial(std::size_t index, std::uint64_t bits);
  void expect(std::size_t index, std::uint64_t bits);
  // A description of the first difference from the image and the number of
  // differing elements, or nullopt when the arena matches its image.
  std::optional<std::string> firstMismatch(const std::string& name) const;

 private:
  const ElementType& type_;
  std::size_t elements_;
  std::size_t payloadOffset_;  // from the start of the allocation
  std::size_t totalBytes_;
  std::unique_ptr<unsigned char, void (*)(void*)> memory_;
  unsigned char* payload_;
  std::vector<unsigned char> image_;
};

}  // namespace hora_coll_test
