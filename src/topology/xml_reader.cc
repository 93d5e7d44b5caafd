#include "topology/xml_reader.h"

#include <cstdint>

#include "base/error.h"

namespace hora::topology::xml {

std::optional<std::string> Element::attribute(std::string_view key) const {
  for (const auto& [name, value] : attributes)
    if (name == key) return value;
  return std::nullopt;
}

Utf8Char decodeUtf8(std::string_view bytes) {
  if (bytes.empty()) return {0, 0};
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(bytes[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return {1, lead};
  std::size_t length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 0;
  if (length == 0 || lead > 0xf4 || bytes.size() < length) return {0, 0};
  std::uint32_t value = lead & (0x7f >> length);
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return {0, 0};
    value = (value << 6) | (byte(i) & 0x3f);
  }
  // Overlong forms (the same code point in more bytes) are refused as UTF-8 requires.
  static constexpr std::uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (value < kSmallest[length] || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) return {0, 0};
  return {length, value};
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

// The characters XML allows in a document: no NUL or other C0 control but
// tab and line ends, no surrogate halves (they are not characters of their
// own), not U+FFFE or U+FFFF. A surrogate would be invalid UTF-8 in every
// name and value it reached (and so in hora-topo's JSON); the controls mean
// nothing in a machine description.
bool isXmlChar(std::uint32_t c) {
  return c == 0x9 || c == 0xa || c == 0xd || (c >= 0x20 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd) ||
         (c >= 0x10000 && c <= 0x10ffff);
}

// The encodings whose text is read correctly as UTF-8, as an XML
// declaration names them (any case).
bool isUtf8Compatible(std::string_view encoding) {
  std::string lower;
  for (char c : encoding) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return lower == "utf-8" || lower == "utf8" || lower == "us-ascii" || lower == "ascii";
}

constexpr char kHexDigits[] = "0123456789ABCDEF";

std::string hexByte(unsigned char c) { return std::string("0x") + kHexDigits[c >> 4] + kHexDigits[c & 0xf]; }

// A code point as Unicode writes it after "U+": 0000, 10FFFF.
std::string hexCodePoint(std::uint32_t value) {
  std::string digits;
  for (int shift = value > 0xffff ? 20 : 12; shift >= 0; shift -= 4) digits += kHexDigits[(value >> shift) & 0xf];
  return digits;
}

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
    refuseUtf16();
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") advance(3);  // UTF-8 byte order mark
    checkDeclaredEncoding();  // first: a Latin-1 file's letters would read as bytes that are not UTF-8
    checkCharacters();
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
  // The most elements a document may hold. The hwloc export of a server
  // with thousands of hardware threads has some tens of thousands; each
  // element costs far more memory than its few bytes of text, so a file of
  // nothing but tiny elements would otherwise take gigabytes.
  static constexpr int kMaxElements = 1'000'000;

  // UTF-16 text (with its byte order mark) reads as nonsense bytes: name it.
  void refuseUtf16() const {
    if (text_.substr(0, 2) == "\xFF\xFE" || text_.substr(0, 2) == "\xFE\xFF")
      error("the file is UTF-16 (it starts with a UTF-16 byte order mark); hora reads UTF-8: convert it, "
            "e.g. with iconv -f UTF-16 -t UTF-8");
  }

  // The whole text is UTF-8 of characters XML allows, checked before
  // anything is read from it, so that no name or value carries bytes that
  // are no text.
  void checkCharacters() {
    std::size_t at = pos_;
    while (at < text_.size()) {
      Utf8Char decoded = decodeUtf8(text_.substr(at));
      if (decoded.length == 0) {
        advance(at - pos_);
        error("byte ", hexByte(static_cast<unsigned char>(text_[at])),
              " is not UTF-8: hora reads UTF-8 (or US-ASCII) files only; convert the file with iconv");
      }
      if (!isXmlChar(decoded.codePoint)) {
        advance(at - pos_);
        error("character U+", hexCodePoint(decoded.codePoint), " is not allowed in XML");
      }
      at += decoded.length;
    }
  }

  // <?xml version="1.0" encoding="ISO-8859-1"?>: a file in another
  // encoding than UTF-8 would be misread (its accented letters as invalid
  // bytes, or as other letters), so one that says so is refused.
  void checkDeclaredEncoding() const {
    if (!lookingAt("<?xml") || !isSpace(text_.size() > pos_ + 5 ? text_[pos_ + 5] : '\0')) return;
    std::string_view declaration = text_.substr(pos_, text_.find("?>", pos_) - pos_);
    std::size_t key = declaration.find("encoding");
    if (key == std::string_view::npos) return;  // no declaration means UTF-8
    std::size_t open = declaration.find_first_of("\"'", key);
    if (open == std::string_view::npos) return;  // malformed: the reader says so where it skips it
    std::size_t close = declaration.find(declaration[open], open + 1);
    std::string_view encoding = declaration.substr(open + 1, close == std::string_view::npos ? 0 : close - open - 1);
    if (!isUtf8Compatible(encoding))
      error("the file declares encoding=\"", encoding, "\"; hora reads UTF-8 (or US-ASCII) files only: convert it, "
            "e.g. with iconv -f ", encoding, " -t UTF-8, and change the declaration");
  }

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
      if (!isXmlChar(value))
        error("character reference &", body, "; is U+", hexCodePoint(value), ", which XML does not allow");
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
    if (++elements_ > kMaxElements)
      error("more than ", kMaxElements, " elements, far more than any machine description holds");
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
  int elements_ = 0;
};

}  // namespace

std::unique_ptr<Element> parse(std::string_view text, const std::string& sourceName) {
  return Reader(text, sourceName).document();
}

}  // namespace hora::topology::xml
