// The flag table exported (`bench --help --json`) and what must follow it: the Python peers'
// defaults and presets (they read scripts/peers/flags.json) and docs/FLAGS.md's tables. Each
// test fails when one of them drifts from the table in src/core/flags.cpp.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>

#include "test_util.h"
#include "trainbench/app/cli.h"
#include "trainbench/core/flags.h"

namespace trainbench {
namespace {

nlohmann::json exported_() {
  const auto r = testing::run_bench("--help --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return nlohmann::json::parse(r.output);
}

TEST(FlagExport, HelpJsonIsTheFlagTableWithBothPresetsValues) {
  const nlohmann::json j = exported_();
  EXPECT_EQ(j, flag_table_json());
  ASSERT_EQ(j["flags"].size(), flag_table().size());
  for (size_t i = 0; i < flag_table().size(); ++i) {
    EXPECT_EQ(j["flags"][i]["name"], flag_table()[i].name);
  }
  auto row = [&](const std::string& name) {
    for (const auto& f : j["flags"])
      if (f["name"] == name) return f;
    return nlohmann::json();
  };
  EXPECT_EQ(row("num_layer")["default"], 24);
  EXPECT_EQ(row("num_layer")["quick"], 2);
  EXPECT_EQ(row("flash")["kind"], "switch");
  EXPECT_EQ(row("flash")["default"], false);
  EXPECT_EQ(row("compile")["choices"], nlohmann::json({"none", "torchscript", "fused"}));
  EXPECT_EQ(row("fault_nan_step")["group"], "testing aids");
  EXPECT_EQ(testing::run_bench("--json").exit_code, 2);  // --json alone is no flag
}

// The peers read scripts/peers/flags.json: it is bench's table, and their parsers give bench's
// defaults under both presets, but for the differences common.py declares.
TEST(FlagExport, ThePeersDefaultsAreTheFlagTables) {
  const nlohmann::json committed = nlohmann::json::parse(
      testing::read_file(std::string(TB_SOURCE_DIR) + "/scripts/peers/flags.json"));
  EXPECT_EQ(committed, exported_())
      << "scripts/peers/flags.json differs from bench's flag table; regenerate it with "
         "build/bench --help --json > scripts/peers/flags.json";
  const std::string dump = TB_PYTHON
      " -c \"import json, sys; sys.path.insert(0, '" TB_SOURCE_DIR
      "/scripts/peers'); import common; out = {}\n"
      "for preset in ('reference', 'quick'):\n"
      "    out[preset] = vars(common.parse_args(common.arg_parser('x'), ['--preset', preset]))\n"
      "out['differs'] = sorted(common.PEER_DIFFERS)\n"
      "print(json.dumps(out))\"";
  const auto r = testing::run_command(dump);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json peers = nlohmann::json::parse(r.output);
  EXPECT_EQ(peers["differs"], nlohmann::json({"compile", "save_dir"}));
  int compared = 0;
  for (const auto& f : committed["flags"]) {
    const std::string name = f["name"];
    if (!peers["reference"].contains(name) || name == "compile") continue;
    for (const char* preset : {"reference", "quick"}) {
      nlohmann::json want = f[preset == std::string("reference") ? "default" : "quick"];
      if (want.is_boolean()) want = want.get<bool>() ? 1 : 0;  // the peers take 0|1
      if (name == "save_dir" && preset == std::string("reference")) want = "runs/peer";
      EXPECT_EQ(peers[preset][name], want) << "--" << name << " under --preset " << preset;
      ++compared;
    }
  }
  EXPECT_GE(compared, 2 * 25);
}

// docs/FLAGS.md's tables are scripts/flags_doc.py's output on bench's table: the check passes on
// the committed file and fails, naming the fix, on a copy with one row changed or no markers.
TEST(FlagExport, TheFlagReferenceIsGeneratedFromTheFlagTable) {
  const std::string doc = std::string(TB_SOURCE_DIR) + "/docs/FLAGS.md";
  const std::string gen = std::string(TB_BENCH_EXE) + " --help --json | " + TB_PYTHON + " " +
                          TB_SOURCE_DIR + "/scripts/flags_doc.py --check ";
  const auto fresh = testing::run_command(gen + doc);
  EXPECT_EQ(fresh.exit_code, 0) << "docs/FLAGS.md is stale: " << fresh.output;
  const std::string text = testing::read_file(doc);
  for (const FlagSpec& f : flag_table()) {
    EXPECT_NE(text.find(std::string("| `--") + f.name + "` |"), std::string::npos)
        << "--" << f.name;
  }
  testing::TempDir dir;
  std::string stale = text;
  const size_t row = stale.find("| `--num_layer` | `24` |");
  ASSERT_NE(row, std::string::npos);
  stale.replace(row, 24, "| `--num_layer` | `12` |");
  testing::write_file(dir / "stale.md", stale);
  const auto r = testing::run_command(gen + (dir / "stale.md"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("is stale; regenerate it with build/bench --help --json | "
                          "scripts/flags_doc.py"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(testing::read_file(dir / "stale.md"), stale);  // --check changes nothing
  testing::write_file(dir / "bare.md", "# Flags\n");
  const auto bare = testing::run_command(gen + (dir / "bare.md"));
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_NE(bare.output.find("lacks the marker lines"), std::string::npos) << bare.output;
}

}  // namespace
}  // namespace trainbench
