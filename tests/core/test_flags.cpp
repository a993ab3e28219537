// The flag table (core/flags.h): the command line, the checks, config.json and the resume and
// rank rules all come from it.
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "trainbench/core/flags.h"
#include "trainbench/train/checkpoint.h"

namespace trainbench {
namespace {

TEST(Flags, EveryRowIsOnTheCommandLineAndInConfigJsonOnce) {
  std::set<std::string> names;
  const auto help = testing::run_bench("--help");
  ASSERT_EQ(help.exit_code, 0);
  const nlohmann::json j = RunConfig{};
  for (const FlagSpec& f : flag_table()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name << " has two rows";
    EXPECT_NE(help.output.find(std::string("--") + f.name), std::string::npos) << f.name;
    EXPECT_TRUE(j.contains(f.name)) << f.name;
    EXPECT_NE(std::string(f.help), "") << f.name;
  }
  EXPECT_EQ(j.size(), flag_table().size());  // config.json holds the flags and nothing else
}

// Each flag set from text comes back through config.json unchanged.
TEST(Flags, TextToConfigToJsonAndBackKeepsEveryValue) {
  RunConfig c;
  for (const FlagSpec& f : flag_table()) {
    // A choice flag takes its last row (none is its default), other text anything.
    const std::string text = !f.choices.empty()            ? f.choices.back()
                             : f.kind == FlagKind::kText   ? "x-" + std::string(f.name)
                             : f.kind == FlagKind::kNumber ? "0.25"
                                                           : "1";
    set_flag(f, c, text);
    EXPECT_EQ(flag_text(f, c), text) << f.name;
  }
  RunConfig back;
  from_json(nlohmann::json(c), back);
  for (const FlagSpec& f : flag_table()) {
    EXPECT_EQ(flag_text(f, back), flag_text(f, c)) << f.name;
  }
}

// One schema: config.json holds switches as true/false and choices by their names; anything
// else (the 0/1 of the peers' files, a name no row has) is refused naming the field.
TEST(Flags, ConfigJsonHoldsSwitchesAsBoolsAndChoicesByName) {
  RunConfig c;
  c.flash = true;
  c.compile = CompilePath::kFused;
  const nlohmann::json j = c;
  EXPECT_EQ(j["flash"], true);
  EXPECT_EQ(j["compile"], "fused");
  RunConfig back;
  from_json(j, back);
  EXPECT_TRUE(back.flash);
  EXPECT_EQ(back.compile, CompilePath::kFused);
  auto error = [](const nlohmann::json& bad) -> std::string {
    RunConfig x;
    try {
      from_json(bad, x);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error({{"flash", 1}}), "field 'flash' is number (1); expected true or false");
  EXPECT_EQ(error({{"compile", 0}}),
            "field 'compile' is number (0); expected one of none|torchscript|fused");
  EXPECT_EQ(error({{"dtype", "fp8"}}),
            "field 'dtype' is string (\"fp8\"); expected one of float32|float16|bfloat16");
  EXPECT_EQ(resume_config_differences({{"flash", false}}, {{"flash", true}}),
            std::vector<std::string>{"flash"});
  EXPECT_TRUE(resume_config_differences({{"compile", "fused"}}, {{"compile", "fused"}}).empty());
}

TEST(Flags, ChecksComeFromTheRowKind) {
  RunConfig c;
  auto error = [&](const char* name, const std::string& text) -> std::string {
    RunConfig x = c;
    try {
      set_flag(*find_flag(name), x, text);
      check_flag(*find_flag(name), x);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error("num_layer", "0"), "--num_layer: 0 is out of range; allowed: >= 1");
  EXPECT_EQ(error("num_layer", "2.5"), "--num_layer: '2.5' is not an integer; allowed: an integer");
  EXPECT_EQ(error("dropout", "1"), "--dropout: 1 is out of range; allowed: [0, 1)");
  EXPECT_EQ(error("lr", "inf"), "--lr: inf is out of range; allowed: a finite number > 0");
  EXPECT_EQ(error("flash", "2"), "--flash: 2 is not allowed; use 0|1");
  EXPECT_EQ(error("overwrite", "yes"), "--overwrite: 'yes' is not allowed; use 0|1");
  EXPECT_EQ(error("dtype", "int8"),
            "--dtype: 'int8' is not allowed; use one of float32|float16|bfloat16");
  EXPECT_EQ(error("data", "anything"), "");  // free text
  EXPECT_EQ(error("dropout", "0"), "");
}

// What a resume may change and what ranks may differ in are columns of the table.
TEST(Flags, ResumeAndRankRulesAreTableColumns) {
  for (const char* may : {"steps", "log_every", "eval_every", "checkpoint_every", "threads",
                          "dist_timeout", "cuda_graph", "sdpa_backend", "run_dir"}) {
    EXPECT_TRUE(resume_may_change(may)) << may;
  }
  for (const char* may_not : {"lr", "seed", "batch_size", "num_layer", "dtype", "fused_adam",
                              "dropout", "data", "unknown_key"}) {
    EXPECT_FALSE(resume_may_change(may_not)) << may_not;
  }
  std::set<std::string> per_rank;
  for (const FlagSpec& f : flag_table()) {
    if (f.ranks_may_differ) per_rank.insert(f.name);
  }
  EXPECT_EQ(per_rank, (std::set<std::string>{"threads", "fault_nan_step", "fault_exit_step",
                                             "fault_escape_step", "dist_timeout"}));
  EXPECT_TRUE(ranks_may_differ("threads"));
  EXPECT_FALSE(ranks_may_differ("lr"));
}

TEST(Flags, AResumeMayChangeTheAttentionBackendAndTheGraphButNotTheOptimizer) {
  const nlohmann::json saved = {{"lr", 1e-3},
                                {"sdpa_backend", "auto"},
                                {"cuda_graph", 0},
                                {"fused_adam", 0},
                                {"sdpa_backend_used", "math"}};
  const nlohmann::json now = {{"lr", 1e-3},
                              {"sdpa_backend", "math"},
                              {"cuda_graph", 1},
                              {"fused_adam", 1},
                              {"sdpa_backend_used", "flash"}};
  EXPECT_EQ(resume_config_differences(saved, now), std::vector<std::string>{"fused_adam"});
}

}  // namespace
}  // namespace trainbench
