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
    const std::string text = f.kind == FlagKind::kText     ? "x-" + std::string(f.name)
                             : f.kind == FlagKind::kNumber ? "0.25"
                                                           : "1";
    set_flag(f, c, text);
  }
  RunConfig back;
  from_json(nlohmann::json(c), back);
  for (const FlagSpec& f : flag_table()) {
    EXPECT_EQ(flag_text(f, back), flag_text(f, c)) << f.name;
  }
}

// Switches are bools, true/false in config.json; the 0/1 of older run folders and of the peers
// still read, and a resume does not mistake 1 for a change from true.
TEST(Flags, SwitchesAreBoolsAndOldZeroOneFoldersStillRead) {
  RunConfig c;
  c.flash = true;
  const nlohmann::json j = c;
  EXPECT_EQ(j["flash"], true);
  EXPECT_EQ(j["compile"], "none");
  RunConfig old;
  from_json({{"flash", 1}, {"compile", 0}, {"dist_overlap", 0}}, old);
  EXPECT_TRUE(old.flash);
  EXPECT_EQ(old.compile, "none");  // --compile was a switch: 0 is none, 1 torchscript
  RunConfig old1;
  from_json({{"compile", true}}, old1);
  EXPECT_EQ(old1.compile, "torchscript");
  EXPECT_TRUE(resume_config_differences({{"compile", 0}}, {{"compile", "none"}}).empty());
  EXPECT_FALSE(resume_config_differences({{"compile", 1}}, {{"compile", "fused"}}).empty());
  EXPECT_FALSE(old.dist_overlap);
  EXPECT_TRUE(
      resume_config_differences({{"flash", 1}, {"lr", 0.001}}, {{"flash", true}, {"lr", 0.001}})
          .empty());
  EXPECT_EQ(resume_config_differences({{"flash", 0}}, {{"flash", true}}),
            std::vector<std::string>{"flash"});
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
                                             "dist_timeout"}));
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
