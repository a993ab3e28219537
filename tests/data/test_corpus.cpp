// Corpus reading: raw and zip give the same bytes; each bad input is a one-line ConfigError.
#include <gtest/gtest.h>

#include "test_util.h"
#include "trainbench/data/corpus.h"
#include "trainbench/data/sampler.h"

namespace trainbench {
namespace {

using testing::TempDir;

std::string sample_text(size_t n) {
  std::string s;
  for (size_t i = 0; s.size() < n; ++i) s += "<page>" + std::to_string(i * 7919 % 1000) + " text ";
  s.resize(n);
  return s;
}

std::string bytes_of(const ByteCorpus& c) {
  return std::string(reinterpret_cast<const char*>(c.data()), static_cast<size_t>(c.size()));
}

// The ConfigError message of open_corpus(path), or "" when it opens.
std::string open_error(const std::string& path) {
  try {
    open_corpus(path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Corpus, ZipAndRawGiveIdenticalBytes) {
  TempDir dir;
  const std::string text = sample_text(300'000);
  testing::write_file(dir / "enwik_small", text);
  for (const char* level : {"-9", "-0"}) {  // deflated and stored members
    const std::string zip = dir / (std::string("small") + level + ".zip");
    ASSERT_EQ(testing::run_command("cd " + dir.path() + " && zip -q " + level + " " + zip +
                                   " enwik_small")
                  .exit_code,
              0);
    const ByteCorpus raw = open_corpus(dir / "enwik_small");
    const ByteCorpus zipped = open_corpus(zip);
    EXPECT_EQ(raw.size(), 300'000);
    EXPECT_EQ(bytes_of(raw), text);
    EXPECT_EQ(bytes_of(zipped), text) << level;
    EXPECT_EQ(zipped.source(), zip + "!enwik_small");
  }
}

TEST(Corpus, EmbeddedCorpusIsDeterministicStructuredText) {
  const ByteCorpus a = embedded_corpus();
  const ByteCorpus b = embedded_corpus();
  ASSERT_EQ(a.size(), kEmbeddedCorpusBytes);
  EXPECT_EQ(a.source(), "embedded");
  EXPECT_EQ(bytes_of(a), bytes_of(b));
  const std::string s = bytes_of(a);
  EXPECT_NE(s.find("<page>"), std::string::npos);
  EXPECT_NE(s.find("[["), std::string::npos);
  // Structure: far fewer distinct bytes than 256, and all of them printable or newline.
  for (unsigned char ch : s) ASSERT_TRUE(ch == '\n' || (ch >= 32 && ch < 127)) << int(ch);
  // A fixed prefix pins the generator: any change to it changes every loss curve.
  EXPECT_EQ(s.substr(0, 20), "  <page>\n    <title>");
}

TEST(Corpus, BadInputsAreOneLineErrors) {
  TempDir dir;
  testing::write_file(dir / "empty", "");
  testing::write_file(dir / "notzip.zip", sample_text(5000));
  testing::write_file(dir / "a", sample_text(1000));
  testing::write_file(dir / "b", sample_text(2000));
  ASSERT_EQ(testing::run_command("cd " + dir.path() + " && zip -q two.zip a b").exit_code, 0);
  ASSERT_EQ(testing::run_command("cd " + dir.path() + " && zip -q one.zip b").exit_code, 0);
  // A damaged member: flip one byte in the middle of the deflate data.
  std::string zip = testing::read_file(dir / "one.zip");
  std::string damaged = zip;
  damaged[60] = static_cast<char>(damaged[60] ^ 0x55);
  testing::write_file(dir / "damaged.zip", damaged);
  testing::write_file(dir / "truncated.zip", zip.substr(0, zip.size() / 2));
  // A header declaring 4 GB for a few compressed bytes (found while fuzzing: it made the reader
  // allocate the declared size before inflating).
  std::string bomb = zip;
  const size_t cd = bomb.find("PK\x01\x02");
  ASSERT_NE(cd, std::string::npos);
  bomb.replace(cd + 24, 4, std::string("\x00\x00\x00\xf0", 4));
  testing::write_file(dir / "bomb.zip", bomb);
  // The same for a stored member (found by scripts/fuzz.sh: 1.9 GB allocated, then refused).
  ASSERT_EQ(testing::run_command("cd " + dir.path() + " && zip -0 -q stored.zip b").exit_code, 0);
  std::string stored = testing::read_file(dir / "stored.zip");
  stored.replace(stored.find("PK\x01\x02") + 24, 4, std::string("\x00\x00\x00\xf0", 4));
  testing::write_file(dir / "stored.zip", stored);

  const std::vector<std::pair<std::string, std::string>> cases = {
      {dir / "missing", "does not exist"},
      {dir / "empty", "is empty (0 bytes)"},
      {dir.path(), "is a directory"},
      {dir / "notzip.zip", "is not a readable zip (no end-of-central-directory record)"},
      {dir / "two.zip", "holds 2 file members; allowed: a zip with exactly one member"},
      {dir / "damaged.zip", "is not a readable zip"},
      {dir / "truncated.zip", "is not a readable zip"},
      {dir / "bomb.zip", "declared size 4026531840 is impossible for"},
      {dir / "stored.zip", "stored member sizes differ"},
  };
  for (const auto& [path, expected] : cases) {
    const std::string msg = open_error(path);
    EXPECT_NE(msg.find(expected), std::string::npos) << path << ": '" << msg << "'";
    EXPECT_EQ(msg.rfind("--data: ", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  EXPECT_EQ(open_error(dir / "one.zip"), "");
}

TEST(Corpus, TooShortForOneBatchPlusValidationIsRefused) {
  // One batch of 4x32 bytes needs 128 + 31 bytes of training data plus the held-out range.
  EXPECT_NO_THROW(split_corpus(159 + 64, 64, 32, 4, "x"));
  try {
    split_corpus(158 + 64, 64, 32, 4, "small.txt");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "--data: 'small.txt' has 222 bytes; needs at least 223 (one batch of 4x32 bytes "
                 "plus 31 for the offset, plus 64 held out); use a larger corpus or smaller "
                 "--batch_size/--seq_len");
  }
  EXPECT_THROW(split_corpus(100000, 16, 32, 4, "x"), ConfigError);  // validation < one sequence
}

}  // namespace
}  // namespace trainbench
