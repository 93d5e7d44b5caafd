#include "topology/xml_reader.h"

#include <cstdint>

#include "base/error.h"

namespace hora::topology::xml {

std::optional<std::string> Element::attribute(std::string_view key) const {
  for (const auto& [name, value] : attributes)
    if (name == key) return value;
  return std::nullopt;
}

namespace {

bool isNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool isNameChar(char c) {
  return isNameStart(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}
bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

void appendUtf8(std::string& out, std::uint32_t codePoint) {
  if (codePoint < 0x80) {
    out += static_cast<char>(codePoint);
  } else if (codePoint < 0x800) {
    out += static_cast<char>(0xc0 | (codePoint >> 6));
    out += static_cast<char>(0x80 | (codePoint & 0x3f));
  } else if (codePoint < 0x10000) {
    out += static_cast<char>(0xe0 | (codePoint >> 12));
    out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (codePoint & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (codePoint >> 18));
    out += static_cast<char>(0x80 | ((codePoint >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (codePoint & 0x3f));
  }
}

// A recursive-descent reader over the whole text, tracking line and column
// for messages.
class Reader {
 public:
  Reader(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  std::unique_ptr<Element> document() {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") advance(3);  // UTF-8 byte order mark
    skipMisc();
    if (atEnd()) error("the file holds no XML element");
    if (!lookingAt("<") || lookingAt("</")) error("expected the root element");
    auto root = element(0);
    skipMisc();
    if (!atEnd()) error("unexpected content after the root element </", root->name, ">");
    return root;
  }

 private:
  static constexpr int kMaxDepth = 256;  // a machine description is never this deep

  template <typename... Parts>
  [[noreturn]] void error(const Parts&... parts) const {
    fail(ErrorKind::InvalidArgument, source_, ":", line_, ":", column_, ": malformed XML: ",
         parts...);
  }

  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }
  bool lookingAt(std::string_view s) const { return text_.substr(pos_, s.size()) == s; }

  void advance(std::size_t n = 1) {
    for (std::size_t i = 0; i < n && !atEnd(); ++i) {
      if (text_[pos_] == '\n') {
        ++line_;
        column_ = 1;
      } else {
        ++column_;
      }
      ++pos_;
    }
  }

  void skipSpace() {
    while (!atEnd() && isSpace(peek())) advance();
  }

  // Skips to just after `terminator`; `what` names the construct in errors.
  void skipPast(std::string_view terminator, const char* what) {
    std::size_t end = text_.find(terminator, pos_);
    if (end == std::string_view::npos) error("unterminated ", what);
    advance(end + terminator.size() - pos_);
  }

  // Comments, processing instructions, the DOCTYPE and white space between elements.
  void skipMisc() {
    while (true) {
      skipSpace();
      if (lookingAt("<!--")) skipPast("-->", "comment");
      else if (lookingAt("<?")) skipPast("?>", "processing instruction");
      else if (lookingAt("<!DOCTYPE")) skipDoctype();
      else return;
    }
  }

  void skipDoctype() {
    // An internal subset in [...] may contain '>' characters.
    int bracketDepth = 0;
    while (!atEnd()) {
      char c = peek();
      advance();
      if (c == '[') ++bracketDepth;
      else if (c == ']') --bracketDepth;
      else if (c == '>' && bracketDepth <= 0) return;
    }
    error("unterminated DOCTYPE");
  }

  std::string name() {
    if (!isNameStart(peek())) error("expected a name, found ", describe(peek()));
    std::size_t start = pos_;
    while (!atEnd() && isNameChar(peek())) advance();
    return std::string(text_.substr(start, pos_ - start));
  }

  static std::string describe(char c) {
    if (c == '\0') return "the end of the file";
    return std::string("'") + c + "'";
  }

  // Decodes one entity or character reference starting at '&'.
  void reference(std::string& out) {
    std::size_t end = text_.find(';', pos_);
    if (end == std::string_view::npos || end - pos_ > 12) error("'&' that starts no entity");
    std::string_view body = text_.substr(pos_ + 1, end - pos_ - 1);
    if (body == "amp") out += '&';
    else if (body == "lt") out += '<';
    else if (body == "gt") out += '>';
    else if (body == "quot") out += '"';
    else if (body == "apos") out += '\'';
    else if (body.size() > 1 && body[0] == '#') {
      bool hex = body[1] == 'x' || body[1] == 'X';
      std::string_view digits = body.substr(hex ? 2 : 1);
      std::uint32_t value = 0;
      if (digits.empty()) error("empty character reference");
      for (char c : digits) {
        int digit;
        if (c >= '0' && c <= '9') digit = c - '0';
        else if (hex && c >= 'a' && c <= 'f') digit = c - 'a' + 10;
        else if (hex && c >= 'A' && c <= 'F') digit = c - 'A' + 10;
        else error("bad character reference &", body, ";");
        value = value * (hex ? 16 : 10) + static_cast<std::uint32_t>(digit);
        if (value > 0x10ffff) error("character reference &", body, "; is out of range");
      }
      appendUtf8(out, value);
    } else {
      error("unknown entity &", body, ";");
    }
    advance(end + 1 - pos_);
  }

  std::string attributeValue() {
    char quote = peek();
    if (quote != '"' && quote != '\'') error("expected a quoted attribute value");
    advance();
    std::string value;
    while (true) {
      if (atEnd()) error("unterminated attribute value");
      char c = peek();
      if (c == quote) break;
      if (c == '<') error("'<' inside an attribute value");
      if (c == '&') reference(value);
      else {
        value += c;
        advance();
      }
    }
    advance();
    return value;
  }

  std::unique_ptr<Element> element(int depth) {
    if (depth > kMaxDepth) error("elements nested more than ", kMaxDepth, " deep");
    auto result = std::make_unique<Element>();
    result->line = line_;
    advance();  // '<'
    result->name = name();
    while (true) {
      bool spaced = isSpace(peek());
      skipSpace();
      if (lookingAt("/>")) {
        advance(2);
        return result;
      }
      if (peek() == '>') {
        advance();
        break;
      }
      if (!spaced) error("expected white space, '>' or '/>' in <", result->name, ">");
      std::string key = name();
      skipSpace();
      if (peek() != '=') error("attribute '", key, "' of <", result->name, "> has no value");
      advance();
      skipSpace();
      if (result->attribute(key)) error("attribute '", key, "' repeated in <", result->name, ">");
      result->attributes.emplace_back(std::move(key), attributeValue());
    }
    content(*result, depth);
    return result;
  }

  // Children and text up to the matching end tag.
  void content(Element& parent, int depth) {
    while (true) {
      if (atEnd()) error("missing </", parent.name, "> for <", parent.name, "> of line ", parent.line);
      if (lookingAt("</")) {
        advance(2);
        std::string closing = name();
        skipSpace();
        if (peek() != '>') error("expected '>' after </", closing);
        if (closing != parent.name)
          error("</", closing, "> closes <", parent.name, "> of line ", parent.line);
        advance();
        return;
      }
      if (lookingAt("<!--")) skipPast("-->", "comment");
      else if (lookingAt("<![CDATA[")) skipPast("]]>", "CDATA section");
      else if (lookingAt("<?")) skipPast("?>", "processing instruction");
      else if (peek() == '<') parent.children.push_back(element(depth + 1));
      else if (peek() == '&') {
        std::string ignored;  // text is not kept, but its references must be well formed
        reference(ignored);
      } else advance();
    }
  }

  std::string_view text_;
  const std::string& source_;
  std::size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
};

}  // namespace

std::unique_ptr<Element> parse(std::string_view text, const std::string& sourceName) {
  return Reader(text, sourceName).document();
}

}  // namespace hora::topology::xml
