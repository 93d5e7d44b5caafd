// hora's libnccl.so.2 must be a drop-in replacement for NVIDIA's: the same
// SONAME, every function NVIDIA's nccl.h declares (ncclX and its profiling
// alias pncclX) exported, and every nccl/pnccl symbol NVIDIA's library
// exports exported too (its device API's host functions are declared in
// other headers, and one internal function in none). The lists are read
// from NVIDIA's header and library themselves, so a function added there is
// checked too; each check is skipped where NVIDIA's file is not installed.
//
// Environment (set by the build): NVIDIA_NCCL_H, the path of NVIDIA's
// nccl.h; HORA_LIBNCCL, the path of hora's libnccl.so.2. NVIDIA_LIBNCCL may
// name NVIDIA's libnccl.so.2 (otherwise standard places are searched).
#include <dlfcn.h>
#include <elf.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

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

// A 64-bit ELF shared object, read where needed: NVIDIA's library is a few
// hundred megabytes, its symbol tables a few hundred kilobytes.
class ElfFile {
 public:
  explicit ElfFile(const std::string& path) : path_(path), in_(path, std::ios::binary) {
    if (!in_) throw std::runtime_error("cannot open " + path);
    Elf64_Ehdr header;
    read(0, &header, sizeof(header));
    if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64)
      throw std::runtime_error(path + " is not a 64-bit ELF file");
    sections_.resize(header.e_shnum);
    for (std::size_t i = 0; i < sections_.size(); ++i)
      read(header.e_shoff + i * header.e_shentsize, &sections_[i], sizeof(Elf64_Shdr));
  }

  // DT_SONAME, or "" when there is none.
  std::string soname() {
    for (const auto& section : sections_) {
      if (section.sh_type != SHT_DYNAMIC) continue;
      const std::string strings = contents(sections_.at(section.sh_link));
      const std::string table = contents(section);
      for (std::size_t offset = 0; offset + sizeof(Elf64_Dyn) <= table.size(); offset += sizeof(Elf64_Dyn)) {
        Elf64_Dyn entry;
        std::memcpy(&entry, table.data() + offset, sizeof(entry));
        if (entry.d_tag == DT_SONAME) return stringAt(strings, entry.d_un.d_val);
      }
    }
    return {};
  }

  // The names of the global and weak symbols the dynamic symbol table
  // defines: what a program linked against the file can resolve in it.
  std::set<std::string> definedDynamicSymbols() {
    std::set<std::string> names;
    for (const auto& section : sections_) {
      if (section.sh_type != SHT_DYNSYM) continue;
      const std::string strings = contents(sections_.at(section.sh_link));
      const std::string table = contents(section);
      for (std::size_t offset = 0; offset + sizeof(Elf64_Sym) <= table.size(); offset += sizeof(Elf64_Sym)) {
        Elf64_Sym symbol;
        std::memcpy(&symbol, table.data() + offset, sizeof(symbol));
        const unsigned binding = ELF64_ST_BIND(symbol.st_info);
        if (symbol.st_shndx == SHN_UNDEF || (binding != STB_GLOBAL && binding != STB_WEAK)) continue;
        names.insert(stringAt(strings, symbol.st_name));
      }
    }
    return names;
  }

 private:
  void read(std::uint64_t offset, void* into, std::size_t bytes) {
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(static_cast<char*>(into), static_cast<std::streamsize>(bytes));
    if (!in_) throw std::runtime_error("truncated ELF file " + path_);
  }
  std::string contents(const Elf64_Shdr& section) {
    std::string bytes(section.sh_size, '\0');
    read(section.sh_offset, bytes.data(), bytes.size());
    return bytes;
  }
  std::string stringAt(const std::string& strings, std::uint64_t offset) const {
    if (offset >= strings.size()) throw std::runtime_error("bad string offset in " + path_);
    return std::string(strings.c_str() + offset);
  }

  std::string path_;
  std::ifstream in_;
  std::vector<Elf64_Shdr> sections_;
};

std::string sonameOf(const std::string& path) { return ElfFile(path).soname(); }

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

// NVIDIA's libnccl.so.2, if one is installed: NVIDIA_LIBNCCL names it, or
// it is looked for in the CUDA toolkit (CUDA_HOME, CUDA_PATH, /usr/local/cuda,
// versioned /usr/local/cuda-X.Y, newest first) and the system's library
// directories, where NVIDIA's packages put it. A copy of hora's library
// installed there (it exports hora's C++ API too) is not NVIDIA's. "" when
// there is none.
std::string findNvidiaLibrary(const std::string& horaLibrary) {
  namespace fs = std::filesystem;
  const std::string named = environmentValue("NVIDIA_LIBNCCL");
  if (!named.empty()) return named;
  std::vector<fs::path> directories;
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    const std::string root = environmentValue(variable);
    if (!root.empty()) directories.insert(directories.end(), {fs::path(root) / "lib64", fs::path(root) / "lib"});
  }
  directories.insert(directories.end(), {"/usr/local/cuda/lib64", "/usr/local/cuda/lib"});
  std::vector<fs::path> versioned;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator("/usr/local", error))
    if (entry.path().filename().string().rfind("cuda-", 0) == 0) versioned.push_back(entry.path());
  std::sort(versioned.rbegin(), versioned.rend());
  for (const auto& root : versioned) directories.insert(directories.end(), {root / "lib64", root / "lib"});
  directories.insert(directories.end(), {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64",
                                         "/usr/lib", "/usr/local/lib"});

  const fs::path hora = fs::canonical(horaLibrary);
  for (const auto& directory : directories) {
    const fs::path candidate = directory / "libnccl.so.2";
    if (!fs::exists(candidate, error) || fs::canonical(candidate, error) == hora) continue;
    const auto symbols = ElfFile(candidate.string()).definedDynamicSymbols();
    const bool horas = std::any_of(symbols.begin(), symbols.end(),
                                   [](const std::string& name) { return name.rfind("_ZN4hora", 0) == 0; });
    if (!horas) return candidate.string();
  }
  return {};
}

bool isNcclName(const std::string& name) { return name.rfind("nccl", 0) == 0 || name.rfind("pnccl", 0) == 0; }

TEST(NvidiaLibrary, EveryNcclSymbolItExportsHoraExportsToo) {
  // A program linked against NVIDIA's library may name any of its symbols,
  // declared in a header or not, and the loader resolves them all when
  // hora's library stands in for NVIDIA's (LD_PRELOAD, or first on the
  // library path): one missing symbol and the program does not start.
  const std::string horaLibrary = environmentValue("HORA_LIBNCCL");
  ASSERT_FALSE(horaLibrary.empty()) << "HORA_LIBNCCL (hora's libnccl.so.2) is not set";
  const std::string nvidiaLibrary = findNvidiaLibrary(horaLibrary);
  if (nvidiaLibrary.empty())
    GTEST_SKIP() << "NVIDIA's libnccl.so.2 is not installed (or set NVIDIA_LIBNCCL to its path); nothing to compare with";

  std::set<std::string> theirs;
  for (const auto& name : ElfFile(nvidiaLibrary).definedDynamicSymbols())
    if (isNcclName(name)) theirs.insert(name);
  // NCCL 2.28 exports about a hundred: each function and its alias.
  ASSERT_GE(theirs.size(), 80u) << "could not read the symbols of " << nvidiaLibrary;
  const std::set<std::string> ours = ElfFile(horaLibrary).definedDynamicSymbols();
  std::vector<std::string> missing;
  for (const auto& name : theirs)
    if (!ours.count(name)) missing.push_back(name);
  EXPECT_THAT(missing, ::testing::IsEmpty())
      << nvidiaLibrary << " exports these and hora's " << horaLibrary << " does not";
}

TEST(ElfReading, DefinedDynamicSymbolsAreWhatTheLibraryProvides) {
  // The reader the comparison above relies on, checked on hora's library:
  // it finds the entry points, and not the symbols the library imports.
  const std::string horaLibrary = environmentValue("HORA_LIBNCCL");
  ASSERT_FALSE(horaLibrary.empty()) << "HORA_LIBNCCL (hora's libnccl.so.2) is not set";
  const auto symbols = ElfFile(horaLibrary).definedDynamicSymbols();
  for (const char* name : {"ncclAllReduce", "pncclAllReduce", "ncclTeamWorld", "ncclResetDebugInitInternal"})
    EXPECT_TRUE(symbols.count(name)) << name;
  EXPECT_FALSE(symbols.count("_Unwind_Resume")) << "an imported symbol was taken for a defined one";
  EXPECT_FALSE(symbols.count("")) << "the null symbol was taken for a defined one";
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
