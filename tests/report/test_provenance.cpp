// What a binary was built from against its tree: scripts/source_id.sh on a planted git tree
// (clean, edited, a new file, an edit outside the compiled roots), the header the build wrote
// and what bench embeds of it (--version, env.json), a tree edited after the build, and the
// report's mark on a run whose binary was not a clean build of its tree.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>

#include "report_folders.h"
#include "test_util.h"
#include "trainbench/report/env_info.h"
#include "trainbench/report/report.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

// A git tree holding the script and one compiled source, committed; returns its path.
std::string planted_tree_(const testing::TempDir& root) {
  const std::string tree = root / "tree";
  fs::create_directories(tree + "/scripts");
  fs::create_directories(tree + "/src");
  for (const char* s : {"source_id.sh", "usage.sh"}) {
    fs::copy_file(std::string(TB_SOURCE_DIR) + "/scripts/" + s, tree + "/scripts/" + s);
  }
  testing::write_file(tree + "/src/a.cpp", "int a() { return 1; }\n");
  const auto r = testing::run_command(
      "cd " + tree +
      " && git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm one");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return tree;
}

// source_id.sh's three lines in `tree` (ROOTs src).
std::vector<std::string> source_id_(const std::string& tree, const std::string& options = "") {
  const auto r = testing::run_command("bash " + tree + "/scripts/source_id.sh " + options + " src");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> lines;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  lines.resize(3);
  return lines;
}

TEST(Provenance, SourceIdSaysDirtyForAnEditOrNewFileUnderItsRootsAndHashesThePatch) {
  testing::TempDir root;
  const std::string tree = planted_tree_(root);
  const auto clean = source_id_(tree);
  EXPECT_TRUE(std::regex_match(clean[0], std::regex("[0-9a-f]{12}"))) << clean[0];
  EXPECT_TRUE(std::regex_match(clean[1], std::regex("[0-9a-f]{16}"))) << clean[1];
  EXPECT_EQ(clean[2], "");
  // An edit outside the roots changes nothing compiled.
  testing::write_file(tree + "/NOTES.md", "prose\n");
  EXPECT_EQ(source_id_(tree), clean);
  // An edit under them: -dirty, another source hash, a patch whose hash is the diff hash.
  testing::write_file(tree + "/src/a.cpp", "int a() { return 2; }\n");
  const auto edited = source_id_(tree, "--diff " + (root / "d.patch"));
  EXPECT_EQ(edited[0], clean[0] + "-dirty");
  EXPECT_NE(edited[1], clean[1]);
  EXPECT_TRUE(std::regex_match(edited[2], std::regex("[0-9a-f]{16}"))) << edited[2];
  EXPECT_NE(testing::read_file(root / "d.patch").find("+int a() { return 2; }"), std::string::npos);
  const auto sum = testing::run_command("sha256sum < " + (root / "d.patch") + " | cut -c1-16");
  EXPECT_EQ(sum.output, edited[2] + "\n");
  // A new file is an edit too; the header says the same three and is kept when unchanged.
  testing::write_file(tree + "/src/a.cpp", "int a() { return 1; }\n");
  testing::write_file(tree + "/src/b.h", "#pragma once\n");
  const std::string header = root / "id.h";
  source_id_(tree, "--header " + header);
  const auto added = source_id_(tree);
  EXPECT_EQ(added[0], clean[0] + "-dirty");
  const std::string text = testing::read_file(header);
  EXPECT_NE(text.find("#define TB_BUILD_REVISION \"" + added[0] + "\""), std::string::npos);
  EXPECT_NE(text.find("#define TB_BUILD_SOURCE_HASH \"" + added[1] + "\""), std::string::npos);
  EXPECT_NE(text.find("#define TB_BUILD_DIFF_HASH \"" + added[2] + "\""), std::string::npos);
  const auto before = fs::last_write_time(header);
  source_id_(tree, "--header " + header);
  EXPECT_EQ(fs::last_write_time(header), before);
  // Committed: clean again, at the new commit.
  testing::run_command("cd " + tree +
                       " && git add -A && git -c user.name=t -c user.email=t@t "
                       "commit -qm two");
  const auto committed = source_id_(tree);
  EXPECT_NE(committed[0], clean[0]);
  EXPECT_EQ(committed[0].find("-dirty"), std::string::npos);
  EXPECT_EQ(committed[1], added[1]);
  EXPECT_EQ(committed[2], "");
}

// bench embeds what the build's source_id.sh wrote: --version and env.json name it.
TEST(Provenance, BenchNamesTheRevisionAndSourceHashItsBuildWrote) {
  const std::string header =
      testing::read_file(std::string(TB_BUILD_DIR) + "/generated/trainbench_build_id.h");
  const SourceId b = build_source_id();
  EXPECT_NE(header.find("TB_BUILD_REVISION \"" + b.revision + "\""), std::string::npos) << header;
  EXPECT_NE(header.find("TB_BUILD_SOURCE_HASH \"" + b.source_hash + "\""), std::string::npos);
  EXPECT_EQ(b.diff_hash.empty(), b.revision.find("-dirty") == std::string::npos);
  const auto v = testing::run_bench("--version");
  ASSERT_EQ(v.exit_code, 0) << v.output;
  EXPECT_NE(
      v.output.find("bench (trainbench) built from " + b.revision + " (sources " + b.source_hash),
      std::string::npos)
      << v.output;
  const nlohmann::json env = collect_env(c10::Device(c10::DeviceType::CPU), 1);
  EXPECT_EQ(env["build_revision"], b.revision);
  EXPECT_EQ(env["git_revision"], b.revision);
  EXPECT_EQ(env["build_source_hash"], b.source_hash);
  // The tree beside it: the same sources unless edited since the build, and then it says so.
  const auto tree = tree_source_id();
  ASSERT_TRUE(tree.has_value());
  EXPECT_EQ(env["tree_source_hash"], tree->source_hash);
  const bool same = tree->source_hash == b.source_hash;
  EXPECT_EQ(v.output.find("now holds other sources") == std::string::npos, same) << v.output;
  EXPECT_EQ(provenance_mark(env).empty(), b.diff_hash.empty()) << env.dump();
}

TEST(Provenance, ATreeEditedAfterTheBuildIsNamedAndARunsLabelCarriesTheMark) {
  testing::TempDir root;
  const std::string tree = planted_tree_(root);
  setenv("TB_SOURCE_TREE", tree.c_str(), 1);
  const nlohmann::json env = collect_env(c10::Device(c10::DeviceType::CPU), 1);
  const auto v = testing::run_command("TB_SOURCE_TREE=" + tree + " " TB_BENCH_EXE " --version");
  unsetenv("TB_SOURCE_TREE");
  EXPECT_EQ(env["tree_source_hash"], source_id_(tree)[1]);
  EXPECT_NE(env["tree_source_hash"], env["build_source_hash"]);
  EXPECT_NE(v.output.find("its tree (" + tree + ") now holds other sources: "), std::string::npos)
      << v.output;

  nlohmann::json e = {{"build_revision", "0123456789ab"},
                      {"build_source_hash", "00112233445566aa"},
                      {"tree_revision", "0123456789ab"},
                      {"tree_source_hash", "00112233445566aa"}};
  EXPECT_EQ(provenance_mark(e), "");
  // A clean build whose tree was edited since: the binary is still its commit exactly.
  e["tree_revision"] = "0123456789ab-dirty";
  e["tree_source_hash"] = "ffffffffffffffff";
  EXPECT_EQ(provenance_mark(e), "");
  // An old binary beside a newer checkout (a commit made while its runs went on): still its
  // commit exactly, and its runs stay in one column of the report.
  e["tree_revision"] = "fedcba987654-dirty";
  EXPECT_EQ(provenance_mark(e), "");
  e["tree_revision"] = nullptr;  // no tree beside the binary: nothing to say of it
  EXPECT_EQ(provenance_mark(e), "");
  e["build_revision"] = "0123456789ab-dirty";
  EXPECT_EQ(provenance_mark(e), "built from uncommitted changes");
  // A folder from before these fields: its git_revision was the checkout's, no mark.
  EXPECT_EQ(provenance_mark({{"git_revision", "0123456789ab-dirty"}}), "");

  const std::string run = make_run(root, "run", "", "handcraft", "float32", 0, "completed", 10);
  testing::write_file(run + "/env.json", e.dump());
  const RunRecord r = read_run(run);
  EXPECT_EQ(r.revision, "0123456789ab-dirty");
  EXPECT_EQ(r.label, "libtorch handcraft (built from uncommitted changes)");
}

}  // namespace
}  // namespace trainbench
