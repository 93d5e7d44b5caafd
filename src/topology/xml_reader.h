// A small XML reader for machine description files.
//
// NCCL's topology files use only elements and attributes; hwloc's use text
// too. This reader builds a tree of elements with their attributes and
// skips text, comments, processing instructions and the DOCTYPE. It does not
// validate against a DTD or expand external entities. Errors are
// hora::Error(InvalidArgument) whose message names the source and the
// line:column where the file stops making sense. The text must be UTF-8 (an
// XML declaration naming another encoding is refused) of the characters
// XML allows, in the file and in character references alike, so every name
// and value read is valid UTF-8.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hora::topology::xml {

struct Element {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attributes;  // in file order
  std::vector<std::unique_ptr<Element>> children;
  int line = 0;  // where the start tag begins (1-based)

  // The value of an attribute, or nullopt when absent.
  std::optional<std::string> attribute(std::string_view key) const;
};

// One character of UTF-8 text: how many bytes it takes (1 to 4) and its code
// point; length 0 where the bytes are no well-formed UTF-8 (a stray
// continuation byte, a truncated or overlong sequence, a surrogate, a value
// beyond U+10FFFF, or no bytes at all).
struct Utf8Char {
  std::size_t length;
  std::uint32_t codePoint;
};
Utf8Char decodeUtf8(std::string_view bytes);

// Parses a whole document; `sourceName` (a file name) prefixes error messages.
std::unique_ptr<Element> parse(std::string_view text, const std::string& sourceName);

}  // namespace hora::topology::xml
