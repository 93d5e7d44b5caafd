// A small XML reader for machine description files.
//
// NCCL's topology files use only elements and attributes; hwloc's use text
// too. This reader builds a tree of elements with their attributes and
// skips text, comments, processing instructions and the DOCTYPE. It does not
// validate against a DTD or expand external entities. Errors are
// hora::Error(InvalidArgument) whose message names the source and the
// line:column where the file stops making sense.
#pragma once

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

// Parses a whole document; `sourceName` (a file name) prefixes error messages.
std::unique_ptr<Element> parse(std::string_view text, const std::string& sourceName);

}  // namespace hora::topology::xml
