// hora's libnccl.so.2 must be a drop-in replacement for NVIDIA's: the same
// SONAME, and every function NVIDIA's nccl.h declares (ncclX and its
// profiling alias pncclX) exported. The list of functions is read from
// NVIDIA's header itself, so a function added there is checked too.
//
// Environment (set by the build): NVIDIA_NCCL_H, the path of NVIDIA's
// nccl.h; HORA_LIBNCCL, the path of hora's libnccl.so.2.
#include <dlfcn.h>
#include <elf.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace hora_api_test {
namespace {

std::string environmentValue(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string withoutComments(const std::string& source) {
  static const std::regex comments(R"(/\*[\s\S]*?\*/|//[^\n]*)");
  return std::regex_replace(source, comments, " ");
}

// Names of the functions a C header declares with one of nccl.h's result types.
std::set<std::string> declaredFunctions(const std::string& header) {
  static const std::regex declaration(
      R"((?:ncclResult_t|const\s+char\s*\*|void)\s+(p?nccl[A-Za-z0-9_]+)\s*\()");
  std::set<std::string> names;
  std::string code = withoutComments(header);
  for (std::sregex_iterator it(code.begin(), code.end(), declaration), end; it != end; ++it)
    names.insert((*it)[1].str());
  return names;
}

// DT_SONAME of a 64-bit ELF shared object, read from the file.
std::string sonameOf(const std::string& path) {
  std::string image = readFile(path);
  auto at = [&](std::size_t offset, std::size_t bytes) {
    if (offset + bytes > image.size()) throw std::runtime_error("truncated ELF file " + path);
    return image.data() + offset;
  };
  Elf64_Ehdr header;
  std::memcpy(&header, at(0, sizeof(header)), sizeof(header));
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64)
    throw std::runtime_error(path + " is not a 64-bit ELF file");
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  for (std::size_t i = 0; i < sections.size(); ++i)
    std::memcpy(&sections[i], at(header.e_shoff + i * header.e_shentsize, sizeof(Elf64_Shdr)),
                sizeof(Elf64_Shdr));
  for (const auto& section : sections) {
    if (section.sh_type != SHT_DYNAMIC) continue;
    const Elf64_Shdr& strings = sections.at(section.sh_link);
    for (std::size_t offset = 0; offset + sizeof(Elf64_Dyn) <= section.sh_size;
         offset += sizeof(Elf64_Dyn)) {
      Elf64_Dyn entry;
      std::memcpy(&entry, at(section.sh_offset + offset, sizeof(entry)), sizeof(entry));
      if (entry.d_tag == DT_SONAME) return std::string(at(strings.sh_offset + entry.d_un.d_val, 1));
    }
  }
  return {};
}

class ExportedSymbols : public ::testing::Test {
 protected:
  void SetUp() override {
    headerPath_ = environmentValue("NVIDIA_NCCL_H");
    libraryPath_ = environmentValue("HORA_LIBNCCL");
    ASSERT_FALSE(libraryPath_.empty()) << "HORA_LIBNCCL (hora's libnccl.so.2) is not set";
    if (headerPath_.empty()) GTEST_SKIP() << "NVIDIA's nccl.h is not installed; nothing to compare with";
  }
  std::string headerPath_;
  std::string libraryPath_;
};

TEST(Library, SonameIsLibncclSo2) {
  // Needs no NVIDIA header: a program linked against NVIDIA's library
  // records this name, and the loader must find hora's under it.
  std::string libraryPath = environmentValue("HORA_LIBNCCL");
  ASSERT_FALSE(libraryPath.empty()) << "HORA_LIBNCCL (hora's libnccl.so.2) is not set";
  EXPECT_EQ(sonameOf(libraryPath), "libnccl.so.2");
  auto linkName = std::filesystem::path(libraryPath).parent_path() / "libnccl.so.2";
  EXPECT_TRUE(std::filesystem::exists(linkName)) << linkName << " is missing";
}

TEST_F(ExportedSymbols, EveryFunctionOfNvidiasHeaderAndItsAliasIsExported) {
  std::set<std::string> declared = declaredFunctions(readFile(headerPath_));
  // nccl.h 2.28 declares about 40 functions, each twice (ncclX, pncclX).
  ASSERT_GE(declared.size(), 70u) << "could not read the declarations of " << headerPath_;
  for (const auto& name : declared) {
    if (name.rfind("nccl", 0) == 0) {
      EXPECT_TRUE(declared.count("p" + name)) << headerPath_ << " declares " << name << " without p" << name;
    }
  }

  void* library = dlopen(libraryPath_.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  const std::string libraryFile = std::filesystem::canonical(libraryPath_);
  for (const auto& name : declared) {
    void* symbol = dlsym(library, name.c_str());
    EXPECT_NE(symbol, nullptr) << name << " is not exported by " << libraryPath_;
    if (symbol == nullptr) continue;
    Dl_info info{};
    ASSERT_NE(dladdr(symbol, &info), 0);
    EXPECT_EQ(std::filesystem::canonical(info.dli_fname), libraryFile)
        << name << " resolves into " << info.dli_fname << ", not into hora's library";
    if (name.rfind("nccl", 0) == 0) {
      // hora defines pncclX as an alias of ncclX: one implementation.
      EXPECT_EQ(dlsym(library, ("p" + name).c_str()), symbol) << "p" << name << " is not an alias of " << name;
    }
  }
  dlclose(library);
}

TEST(HeaderParsing, FindsDeclarationsAndIgnoresComments) {
  auto names = declaredFunctions(
      "/* ncclResult_t ncclInComment(int); */\n"
      "ncclResult_t  ncclAllReduce(const void* s,\n void* r);\n"
      "const char* pncclGetErrorString(ncclResult_t result);\n"
      "void  ncclResetDebugInit();\n"
      "typedef enum { ncclSum = 0 } ncclRedOp_t;\n");
  EXPECT_EQ(names, (std::set<std::string>{"ncclAllReduce", "pncclGetErrorString", "ncclResetDebugInit"}));
}

}  // namespace
}  // namespace hora_api_test
