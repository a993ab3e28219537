// Files written whole or not at all (core/atomic_file.h), and the one 64-bit mixer (core/hash.h).
#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"
#include "trainbench/core/atomic_file.h"
#include "trainbench/core/errors.h"
#include "trainbench/core/hash.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

// No temporary file of any writer is left in `dir`.
bool no_temporaries(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp") != std::string::npos) return false;
  }
  return true;
}

TEST(AtomicFile, ReplacesAFileWholeAndLeavesNoTemporary) {
  testing::TempDir dir;
  const std::string path = dir / "a.json";
  write_file_atomic(path, "first");
  write_file_atomic(path, "second, longer");
  EXPECT_EQ(testing::read_file(path), "second, longer");
  EXPECT_TRUE(no_temporaries(dir.path()));
}

TEST(AtomicFile, AFailedWriteKeepsTheOldFileAndNamesWhatFailed) {
  testing::TempDir dir;
  const std::string path = dir / "a.json";
  write_file_atomic(path, "old");
  try {
    write_file_atomic(
        path, [](const std::string&) { return std::string("No space left"); },
        "cannot write checkpoint");
    FAIL();
  } catch (const RunError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot write checkpoint '" + path + "': No space left");
  }
  EXPECT_EQ(testing::read_file(path), "old");
  EXPECT_TRUE(no_temporaries(dir.path()));
  // A folder that does not exist: the temporary file cannot be made; the message names it.
  try {
    write_file_atomic(dir / "missing/b.json", "x");
    FAIL();
  } catch (const RunError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cannot write '" + (dir / "missing/b.json.tmp."), 0), 0u)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos);
  }
}

TEST(AtomicFile, ARenameOntoAFolderFailsNamingThePlaceAndRemovesTheTemporary) {
  testing::TempDir dir;
  const std::string path = dir / "c.pt";
  fs::create_directories(path + "/inside");
  try {
    write_file_atomic(path, [](const std::string& tmp) { return write_bytes(tmp, "bytes"); });
    FAIL();
  } catch (const RunError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cannot write '" + path + "': ", 0), 0u) << e.what();
  }
  EXPECT_TRUE(fs::is_directory(path + "/inside"));
  EXPECT_TRUE(no_temporaries(dir.path()));
}

TEST(Hash, Splitmix64IsTheReferenceFinalizer) {
  // splitmix64's first output from state 0 (Vigna's reference splitmix64.c): mix(0 + gamma).
  EXPECT_EQ(splitmix64(kGoldenGamma), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(splitmix64(0), 0u);
  static_assert(splitmix64(1) != splitmix64(2));
}

TEST(Hash, Fnv1aIsTheReferenceHashAndContinuesAcrossPieces) {
  EXPECT_EQ(fnv1a64("", 0), 0xcbf29ce484222325ULL);   // the offset basis
  EXPECT_EQ(fnv1a64("a", 1), 0xaf63dc4c8601ec8cULL);  // FNV's published test vector
  EXPECT_EQ(fnv1a64("bc", 2, fnv1a64("a", 1)), fnv1a64("abc", 3));
}

}  // namespace
}  // namespace trainbench
