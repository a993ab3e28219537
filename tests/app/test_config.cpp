// RunConfig: defaults, presets, validation messages, run-folder naming, JSON round-trip.
#include <gtest/gtest.h>

#include <torch/cuda.h>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "trainbench/app/cli.h"
#include "trainbench/app/validate.h"
#include "trainbench/core/config.h"
#include "trainbench/core/flags.h"

namespace trainbench {
namespace {

CliResult parse(std::vector<std::string> args) {
  args.insert(args.begin(), "bench");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return parse_cli(static_cast<int>(argv.size()), argv.data());
}

// The ConfigError message for a command line, or "" when it parses and validates.
std::string error_of(const std::vector<std::string>& args) {
  try {
    validate(parse(args).config);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Config, DefaultsAreTheReferenceWorkload) {
  const RunConfig c = parse({}).config;
  EXPECT_EQ(c.preset, Preset::kReference);
  EXPECT_EQ(c.seq_len, 256);
  EXPECT_EQ(c.d_model, 512);
  EXPECT_EQ(c.num_heads, 8);
  EXPECT_EQ(c.ff_dim, 2048);
  EXPECT_EQ(c.num_layer, 24);
  EXPECT_DOUBLE_EQ(c.dropout, 0.1);
  EXPECT_EQ(c.batch_size, 100);
  EXPECT_DOUBLE_EQ(c.lr, 1e-3);
  EXPECT_EQ(c.steps, 5000);
  EXPECT_EQ(c.log_every, 20);
}

TEST(Config, ExplicitFlagsOverrideThePreset) {
  const RunConfig c = parse({"--num_layer", "3", "--preset", "quick", "--lr", "2e-3"}).config;
  EXPECT_EQ(c.preset, Preset::kQuick);
  EXPECT_EQ(c.num_layer, 3);
  EXPECT_EQ(c.d_model, 128);  // from the preset
  EXPECT_DOUBLE_EQ(c.lr, 2e-3);
}

TEST(Config, BadValuesNameTheFlagValueAndAllowed) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--num_layer", "0"}, "--num_layer: 0 is out of range; allowed: >= 1"},
      {{"--num_layer", "abc"}, "--num_layer: 'abc' is not an integer"},
      {{"--num_layer", "2.5"}, "--num_layer: '2.5' is not an integer"},
      {{"--d_model", "100"}, "--d_model: 100 is not divisible by --num_heads 8"},
      {{"--seq_len", "1"}, "--seq_len: 1 is out of range; allowed: >= 2"},
      {{"--batch_size", "0"}, "--batch_size: 0 is out of range; allowed: >= 1"},
      {{"--dropout", "1"}, "--dropout: 1 is out of range; allowed: [0, 1)"},
      {{"--dropout", "-0.1"}, "--dropout: -0.1 is out of range"},
      {{"--lr", "0"}, "--lr: 0 is out of range; allowed: a finite number > 0"},
      {{"--lr", "x"}, "--lr: 'x' is not a number"},
      {{"--model", "gpt"}, "--model: 'gpt' is not allowed; use one of torch|handcraft"},
      {{"--dtype", "int8"}, "--dtype: 'int8' is not allowed; use one of float32|float16|bfloat16"},
      {{"--device", "tpu"}, "--device: 'tpu' is not allowed; use one of auto|cpu|cuda"},
      {{"--flash", "2"}, "--flash: 2 is not allowed; use 0|1"},
      {{"--preset", "huge"}, "--preset: 'huge' is not allowed; use one of reference|quick"},
      {{"--model", "torch", "--flash", "1"}, "--flash: 1 is not allowed with --model torch"},
      {{"--warmup_steps", "10", "--steps", "10"}, "--warmup_steps: 10 leaves no timed step"},
      {{"--compile", "1", "--model", "torch"},
       "--compile: 'torchscript' is not allowed with --model torch"},
      {{"--compile", "fused", "--model", "torch"},
       "--compile: 'fused' is not allowed with --model torch"},
      {{"--compile", "1", "--warmup_steps", "1"},
       "--warmup_steps: 1 with --compile torchscript; allowed: >= 2"},
      {{"--compile", "2"}, "--compile: '2' is not allowed; use one of none|torchscript|fused"},
      {{"--compile", "fused", "--dropout_impl", "native"},
       "--dropout_impl: 'native' is not allowed with --compile fused"},
      {{"--save_model", "/nonexistent-dir/net.pt"},
       "--save_model: folder '/nonexistent-dir' does not exist"},
      {{"--save_model", "/tmp"}, "--save_model: '/tmp' is a folder"},
      {{"--save_model", "net.pt", "--model", "torch"},
       "--save_model: not available with --model torch"},
      {{"--dropout_impl", "fast"},
       "--dropout_impl: 'fast' is not allowed; use one of auto|native|parallel"},
      {{"--dropout_impl", "parallel", "--compile", "1"},
       "--dropout_impl: 'parallel' is not allowed with --compile torchscript"},
      {{"--overwrite", "maybe"}, "--overwrite: 'maybe' is not allowed; use 0|1"},
      {{"--no_such_flag", "1"}, "--no_such_flag: unknown flag"},
  };
  for (const auto& [args, expected] : cases) {
    const std::string msg = error_of(args);
    EXPECT_NE(msg.find(expected), std::string::npos)
        << "args " << args[0] << ": got '" << msg << "'";
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
  }
  EXPECT_EQ(error_of({"--num_layer", "8", "--dtype", "bfloat16"}), "");
  EXPECT_EQ(error_of({"--compile", "fused", "--dtype", "bfloat16", "--flash", "1"}), "");
}

// --compile names its path; 0|1 (and false|true) still mean none|torchscript.
TEST(Config, CompileNamesItsPathAndZeroOneStayAliases) {
  for (const auto& [text, path] :
       std::vector<std::pair<std::string, std::string>>{{"0", "none"},
                                                        {"false", "none"},
                                                        {"1", "torchscript"},
                                                        {"true", "torchscript"},
                                                        {"none", "none"},
                                                        {"torchscript", "torchscript"},
                                                        {"fused", "fused"}}) {
    RunConfig c;
    set_flag(*find_flag("compile"), c, text);
    EXPECT_EQ(name_of(c.compile), path) << text;
  }
  RunConfig c;
  c.compile = CompilePath::kFused;
  EXPECT_EQ(nlohmann::json(c)["compile"], "fused");
  EXPECT_EQ(make_plan(c).dropout, DropoutImpl::kFused);
}

TEST(Config, ImpossibleDeviceCombinationsAreRefused) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a GPU is visible";
  EXPECT_EQ(error_of({"--device", "cuda"}),
            "--device: 'cuda' is not available (no GPU visible, or a build without CUDA); use "
            "--device cpu");
}

// LibTorch 2.x autocasts to float16 on the CPU too (with loss scaling, as on CUDA).
TEST(Config, Float16IsAllowedOnTheCpu) {
  EXPECT_EQ(error_of({"--device", "cpu", "--dtype", "float16"}), "");
  EXPECT_EQ(error_of({"--device", "cpu", "--dtype", "float16", "--flash", "1"}), "");
}

TEST(Config, RunFolderFollowsTheReferenceNaming) {
  RunConfig c;
  c.save_dir = "exps/run";
  c.model = ModelKind::kHandcraft;
  c.num_layer = 8;
  c.dtype = Precision::kBFloat16;
  EXPECT_EQ(run_dir_name(c), "exps/run_handcraft_layer8_bfloat16");
  c.flash = 1;
  EXPECT_EQ(run_dir_name(c), "exps/run_handcraft_layer8_bfloat16_flash");
  c.compile = CompilePath::kTorchScript;
  EXPECT_EQ(run_dir_name(c), "exps/run_handcraft_layer8_bfloat16_compiled_flash");
  c.compile = CompilePath::kFused;
  EXPECT_EQ(run_dir_name(c), "exps/run_handcraft_layer8_bfloat16_fused_flash");
}

TEST(Config, ValidationRangeDefaultsToFiveMillionOrFivePercent) {
  RunConfig c;
  EXPECT_EQ(resolved_valid_bytes(c, 1'000'000'000), 5'000'000);
  EXPECT_EQ(resolved_valid_bytes(c, 100'000'000), 5'000'000);
  EXPECT_EQ(resolved_valid_bytes(c, 6'000'000), 300'000);
  c.valid_bytes = 1234;
  EXPECT_EQ(resolved_valid_bytes(c, 6'000'000), 1234);
}

TEST(Config, JsonRoundTripKeepsEveryField) {
  RunConfig c = testing::tiny_config();
  c.model = ModelKind::kTorch;
  c.dtype = Precision::kBFloat16;
  c.data = "data/enwik9.zip";
  c.lr = 3e-4;
  const nlohmann::json j = c;
  EXPECT_EQ(j.at("num_layer"), 1);
  EXPECT_EQ(j.at("dtype"), "bfloat16");
  RunConfig back;
  from_json(j, back);
  EXPECT_EQ(nlohmann::json(back), j);
}

TEST(Config, HelpListsEveryFlagWithItsDefault) {
  const CliResult r = parse({"--help"});
  ASSERT_TRUE(r.help);
  const nlohmann::json j = RunConfig{};
  for (const auto& [key, value] : j.items()) {
    EXPECT_NE(r.help_text.find("--" + key), std::string::npos) << key;
  }
  EXPECT_NE(r.help_text.find("(default: 24)"), std::string::npos);
  EXPECT_NE(r.help_text.find("modules, pre-LN;"), std::string::npos);
  EXPECT_NE(r.help_text.find("post-LN layer"), std::string::npos);
}

}  // namespace
}  // namespace trainbench
