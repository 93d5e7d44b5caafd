#include "topology/xml_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hora/communicator.h"

namespace hora::topology::xml {
namespace {

using ::testing::HasSubstr;

std::string errorOf(const std::string& text) {
  try {
    parse(text, "machine.xml");
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
    return error.what();
  }
  return "";
}

TEST(XmlReaderTest, ReadsElementsAttributesAndLines) {
  auto root = parse(
      "<?xml version=\"1.0\"?>\n"
      "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
      "<!-- a comment -->\n"
      "<system version=\"1\">\n"
      "  <cpu numaid='0' affinity=\"00ff\">\n"
      "    <pci busid=\"0000:01:00.0\"/>\n"
      "    some text &amp; more\n"
      "  </cpu>\n"
      "</system>\n",
      "machine.xml");
  EXPECT_EQ(root->name, "system");
  EXPECT_EQ(root->attribute("version"), "1");
  EXPECT_EQ(root->line, 4);
  ASSERT_EQ(root->children.size(), 1u);
  const Element& cpu = *root->children[0];
  EXPECT_EQ(cpu.attribute("numaid"), "0");
  EXPECT_EQ(cpu.attribute("affinity"), "00ff");
  EXPECT_FALSE(cpu.attribute("missing").has_value());
  ASSERT_EQ(cpu.children.size(), 1u);
  EXPECT_EQ(cpu.children[0]->name, "pci");
  EXPECT_EQ(cpu.children[0]->line, 6);
}

TEST(XmlReaderTest, DecodesEntitiesInAttributes) {
  auto root = parse("<a v=\"&lt;&gt;&amp;&quot;&apos;&#65;&#x42;&#xe9;\"/>", "x");
  EXPECT_EQ(root->attribute("v"), "<>&\"'AB\xc3\xa9");
}

TEST(XmlReaderTest, SkipsByteOrderMarkAndCdata) {
  auto root = parse("\xEF\xBB\xBF<a><![CDATA[ <not> an element ]]><b/></a>", "x");
  EXPECT_EQ(root->name, "a");
  ASSERT_EQ(root->children.size(), 1u);
  EXPECT_EQ(root->children[0]->name, "b");
}

TEST(XmlReaderTest, MalformedInputNamesFileLineAndProblem) {
  EXPECT_THAT(errorOf(""), HasSubstr("machine.xml:1:1: malformed XML: the file holds no XML element"));
  EXPECT_THAT(errorOf("<system>\n  <cpu>\n</system>\n"), HasSubstr("machine.xml:3:"));
  EXPECT_THAT(errorOf("<system>\n  <cpu>\n</system>\n"), HasSubstr("</system> closes <cpu> of line 2"));
  EXPECT_THAT(errorOf("<system>\n  <cpu>\n"), HasSubstr("missing </cpu>"));
  EXPECT_THAT(errorOf("<a b=c/>"), HasSubstr("expected a quoted attribute value"));
  EXPECT_THAT(errorOf("<a b=\"1\" b=\"2\"/>"), HasSubstr("attribute 'b' repeated"));
  EXPECT_THAT(errorOf("<a b=\"1\"c=\"2\"/>"), HasSubstr("expected white space"));
  EXPECT_THAT(errorOf("<a b/>"), HasSubstr("attribute 'b' of <a> has no value"));
  EXPECT_THAT(errorOf("<a b=\"x</a>"), HasSubstr("'<' inside an attribute value"));
  EXPECT_THAT(errorOf("<a/><b/>"), HasSubstr("unexpected content after the root element"));
  EXPECT_THAT(errorOf("<a v=\"&bogus;\"/>"), HasSubstr("unknown entity &bogus;"));
  EXPECT_THAT(errorOf("<!-- never closed"), HasSubstr("unterminated comment"));
  EXPECT_THAT(errorOf("just text"), HasSubstr("expected the root element"));
  EXPECT_THAT(errorOf("<1a/>"), HasSubstr("expected a name"));
}

TEST(XmlReaderTest, RefusesAbsurdNesting) {
  std::string deep;
  for (int i = 0; i < 300; ++i) deep += "<a>";
  EXPECT_THAT(errorOf(deep), HasSubstr("nested more than"));
}


// A reference to no character (NUL, a surrogate half, U+FFFE) would put
// bytes into a name that are no text, and hora-topo's JSON would carry them.
TEST(XmlReaderTest, RefusesCharacterReferencesToNoCharacter) {
  EXPECT_THAT(errorOf("<a v=\"eth&#0;0\"/>"), HasSubstr("character reference &#0; is U+0000, which XML does not allow"));
  EXPECT_THAT(errorOf("<a v=\"eth&#xD800;\"/>"), HasSubstr("&#xD800; is U+D800, which XML does not allow"));
  EXPECT_THAT(errorOf("<a v=\"&#xDFFF;\"/>"), HasSubstr("U+DFFF"));
  EXPECT_THAT(errorOf("<a v=\"&#1;\"/>"), HasSubstr("U+0001"));
  EXPECT_THAT(errorOf("<a v=\"&#xFFFE;\"/>"), HasSubstr("U+FFFE"));
  EXPECT_THAT(errorOf("<a>&#0;</a>"), HasSubstr("U+0000"));  // in text too
  auto root = parse("<a v=\"&#9;&#xA;&#xD7FF;&#xE000;&#x10FFFF;\"/>", "x");
  EXPECT_EQ(root->attribute("v"), "\t\n\xED\x9F\xBF\xEE\x80\x80\xF4\x8F\xBF\xBF");
}

// hora reads UTF-8: a file that says it is in another encoding, or whose
// bytes are not UTF-8, is refused with the place and what to do, rather
// than read into names that are not text.
TEST(XmlReaderTest, RefusesTextThatIsNotUtf8) {
  EXPECT_THAT(errorOf("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<a v=\"Caf\xe9\"/>"),
              HasSubstr("machine.xml:1:1: malformed XML: the file declares encoding=\"ISO-8859-1\"; hora reads UTF-8"));
  EXPECT_THAT(errorOf("<?xml version='1.0' encoding='windows-1252'?><a/>"), HasSubstr("encoding=\"windows-1252\""));
  EXPECT_THAT(errorOf("<?xml version=\"1.0\"?>\n<a v=\"Caf\xe9\"/>"),
              HasSubstr("machine.xml:2:10: malformed XML: byte 0xE9 is not UTF-8"));
  EXPECT_THAT(errorOf("<a v=\"\xed\xa0\x80\"/>"), HasSubstr("byte 0xED is not UTF-8"));  // an encoded surrogate
  EXPECT_THAT(errorOf("<a v=\"\xc0\xae\"/>"), HasSubstr("byte 0xC0 is not UTF-8"));      // overlong
  EXPECT_THAT(errorOf("<a v=\"x\x01\"/>"), HasSubstr("character U+0001 is not allowed"));
  EXPECT_THAT(errorOf(std::string("<a v=\"x\0\"/>", 11)), HasSubstr("character U+0000 is not allowed"));
  EXPECT_THAT(errorOf(std::string("\xFF\xFE<\0a\0/\0>\0", 10)), HasSubstr("the file is UTF-16"));
  for (const char* encoding : {"UTF-8", "utf-8", "US-ASCII", "ascii"}) {
    auto root = parse(std::string("<?xml version=\"1.0\" encoding=\"") + encoding + "\"?>\n<a v=\"Caf\xc3\xa9\"/>", "x");
    EXPECT_EQ(root->attribute("v"), "Caf\xc3\xa9") << encoding;
  }
}

// Every element costs memory far beyond its text: a file of nothing but
// tiny elements is refused before it takes gigabytes.
TEST(XmlReaderTest, RefusesMoreThanAMillionElements) {
  std::string many = "<a>";
  for (int i = 0; i < 1'000'000; ++i) many += "<b/>";
  EXPECT_THAT(errorOf(many + "</a>"), HasSubstr("more than 1000000 elements"));
  many.resize(many.size() - 4);  // the root and 999,999 children
  EXPECT_EQ(parse(many + "</a>", "x")->children.size(), 999'999u);
}

}  // namespace
}  // namespace hora::topology::xml
