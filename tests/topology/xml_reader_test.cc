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

}  // namespace
}  // namespace hora::topology::xml
