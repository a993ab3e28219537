// The flag table exported (`bench --help --json`) and what must follow it: the Python peers'
// defaults and presets (they read scripts/peers/flags.json) and the README's flag table. Each
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

// The README's table (section "Flags") names every flag of the table and no other, and each
// choice of a flag with choices appears in that flag's row.
TEST(FlagExport, TheReadmesFlagTableNamesEveryFlagAndItsChoices) {
  const std::string readme = testing::read_file(std::string(TB_SOURCE_DIR) + "/README.md");
  const size_t start = readme.find("\n## Flags\n");
  ASSERT_NE(start, std::string::npos);
  const size_t end = readme.find("\n## ", start + 1);
  std::istringstream lines(readme.substr(start, end - start));
  std::set<std::string> named;
  std::map<std::string, std::string> row_of;
  const std::regex flag_re("--([a-z_0-9]+)");
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| `--", 0) != 0) continue;
    const std::string first = line.substr(0, line.find(" | ", 2));
    for (auto it = std::sregex_iterator(first.begin(), first.end(), flag_re);
         it != std::sregex_iterator(); ++it) {
      named.insert((*it)[1]);
      row_of[(*it)[1]] = line;
    }
  }
  std::set<std::string> table;
  for (const FlagSpec& f : flag_table()) table.insert(f.name);
  table.insert("export_corpus");  // a command of its own, outside the table
  for (const auto& n : table) EXPECT_TRUE(named.count(n)) << "--" << n << " is not in README";
  for (const auto& n : named) EXPECT_TRUE(table.count(n)) << "README names --" << n;
  for (const FlagSpec& f : flag_table()) {
    if (!row_of.count(f.name)) continue;
    for (const std::string& c : f.choices) {
      EXPECT_NE(row_of[f.name].find("`" + c + "`"), std::string::npos)
          << "--" << f.name << "'s README row lacks `" << c << "`";
    }
  }
}

}  // namespace
}  // namespace trainbench
