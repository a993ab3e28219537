// The RunPlan (core/plan.h): each `auto` choice resolved once, and the tables of
// core/choices.h and core/run_files.h that every name, parser and flag choice comes from.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "test_util.h"
#include "trainbench/app/validate.h"
#include "trainbench/core/choices.h"
#include "trainbench/core/flags.h"
#include "trainbench/core/plan.h"
#include "trainbench/core/run_files.h"

namespace trainbench {
namespace {

RunConfig cpu_() {
  RunConfig c = testing::tiny_config();
  c.device = DeviceChoice::kCpu;
  return c;
}

// The plan resolves the `auto` choices once; the others are the RunConfig's own typed fields.
TEST(Plan, EachAutoChoiceIsResolvedOnce) {
  RunConfig c = cpu_();
  c.model = ModelKind::kTorch;
  c.dtype = Precision::kFloat16;
  const RunPlan p = make_plan(c);
  EXPECT_EQ(p.cfg.model, ModelKind::kTorch);
  EXPECT_EQ(scalar_type_of(p.cfg.dtype), c10::ScalarType::Half);
  EXPECT_TRUE(p.lowp());
  EXPECT_FALSE(p.cuda());
  EXPECT_STREQ(p.device_name(), "cpu");
  EXPECT_EQ(p.dropout, DropoutImpl::kNative);     // auto for the torch model
  EXPECT_EQ(p.dist_backend, DistBackend::kGloo);  // auto on the CPU
  EXPECT_EQ(p.cfg.d_model, c.d_model);            // the numbers as given
  EXPECT_EQ(scalar_type_of(Precision::kBFloat16), c10::ScalarType::BFloat16);
  EXPECT_EQ(scalar_type_of(Precision::kFloat32), c10::ScalarType::Float);
  c.dist_backend = DistBackend::kNccl;
  EXPECT_EQ(make_plan(c).dist_backend, DistBackend::kNccl);  // as given (validate_dist judges it)
}

// --device cuda in a multi-process run is the rank's own GPU (LOCAL_RANK); planning it touches
// no GPU, so it holds on a machine without one.
TEST(Plan, TheCudaDeviceOfARankIsItsLocalRanksGpu) {
  RunConfig c = cpu_();
  c.device = DeviceChoice::kCuda;
  DistEnv env;
  env.world_size = 4;
  env.rank = 3;
  env.local_world_size = 2;
  env.local_rank = 1;
  const RunPlan p = make_plan(c, env);
  EXPECT_TRUE(p.cuda());
  EXPECT_EQ(p.device.index(), 1);
  EXPECT_EQ(p.dist.rank, 3);
  EXPECT_EQ(p.dist_backend, DistBackend::kNccl);  // auto on CUDA
  EXPECT_FALSE(make_plan(c).device.has_index());  // one process: the current GPU
}

// Who decided the GEMM route: one route outside fused bfloat16/float16 CPU runs, the flag, the
// instruction sets until the probe has measured, then the measurement.
TEST(Plan, TheGemmRouteSaysWhoChoseIt) {
  RunConfig c = cpu_();
  c.compile = CompilePath::kFused;
  EXPECT_EQ(make_plan(c).gemm_route_by, RouteChosenBy::kOneRoute);  // float32
  c.dtype = Precision::kBFloat16;
  const RunPlan guessed = make_plan(c);
  EXPECT_EQ(guessed.gemm_route_by, RouteChosenBy::kInstructionSets);
  EXPECT_TRUE(guessed.has_gemm_choice());
  const RunPlan measured = with_measured_route(guessed, GemmRoute::kFloat32);
  EXPECT_EQ(measured.gemm_route, GemmRoute::kFloat32);
  EXPECT_EQ(measured.gemm_route_by, RouteChosenBy::kMeasurement);
  c.lowp_gemm = GemmRoute::kNative;
  EXPECT_EQ(make_plan(c).gemm_route_by, RouteChosenBy::kFlag);
  c.device = DeviceChoice::kCuda;
  EXPECT_EQ(make_plan(c).gemm_route, GemmRoute::kNative);  // LibTorch's own on a GPU
  EXPECT_EQ(make_plan(c).gemm_route_by, RouteChosenBy::kOneRoute);
}

// A choice reaches RunConfig only through its table: the command line's text (aliases too)
// and config.json's are parsed at the edge, and a name no row has is the one-line error there.
TEST(Plan, AChoiceIsParsedAtTheEdgeIntoItsEnum) {
  RunConfig c = cpu_();
  const FlagSpec& dtype = *find_flag("dtype");
  try {
    set_flag(dtype, c, "float64");
    FAIL() << "took an unknown dtype";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "--dtype: 'float64' is not allowed; use one of float32|float16|bfloat16");
  }
  EXPECT_EQ(c.dtype, Precision::kFloat32);  // unchanged
  set_flag(*find_flag("compile"), c, "1");  // the original's spelling of torchscript
  EXPECT_EQ(c.compile, CompilePath::kTorchScript);
  set_flag(dtype, c, "bfloat16");
  EXPECT_EQ(c.dtype, Precision::kBFloat16);
  EXPECT_EQ(flag_text(dtype, c), "bfloat16");
}

// Every name parses back to its value, and the flag table's choices, help words and aliases are
// the tables' rows.
template <class E>
void expect_round_trip_() {
  for (const auto& r : ChoiceTable<E>::rows) {
    EXPECT_EQ(parse_choice<E>(r.name), r.value) << r.name;
    EXPECT_STREQ(name_of(r.value), r.name);
  }
  EXPECT_FALSE(parse_choice<E>("no such choice").has_value());
}

TEST(Choices, EveryNameRoundTripsAndTheFlagTableTakesItsChoicesFromTheTables) {
  expect_round_trip_<Preset>();
  expect_round_trip_<ModelKind>();
  expect_round_trip_<Precision>();
  expect_round_trip_<CompilePath>();
  expect_round_trip_<DropoutImpl>();
  expect_round_trip_<GemmRoute>();
  expect_round_trip_<DeviceChoice>();
  expect_round_trip_<SdpaBackend>();
  expect_round_trip_<DistBackend>();
  expect_round_trip_<HelpGroup>();
  expect_round_trip_<RunFile>();
  EXPECT_EQ(find_flag("dtype")->choices, choice_names<Precision>());
  EXPECT_EQ(find_flag("compile")->choices, choice_names<CompilePath>());
  EXPECT_EQ(find_flag("sdpa_backend")->choices, choice_names<SdpaBackend>());
  for (const auto& r : ChoiceTable<DropoutImpl>::rows) {
    EXPECT_NE(find_flag("dropout_impl")->help.find(r.help), std::string::npos) << r.name;
  }
  using Alias = std::pair<std::string, std::string>;
  EXPECT_EQ(find_flag("compile")->aliases,
            (std::vector<Alias>{
                {"0", "none"}, {"false", "none"}, {"1", "torchscript"}, {"true", "torchscript"}}));
  RunConfig c;
  set_flag(*find_flag("compile"), c, "1");
  EXPECT_EQ(c.compile, CompilePath::kTorchScript);
  EXPECT_EQ(run_dir_name(c), "runs/run_handcraft_layer24_float32_compiled");  // the row's suffix
  EXPECT_EQ(choice_help<DeviceChoice>("head: ", "; tail"), "head: auto | cpu | cuda; tail");
}

TEST(RunFiles, EachFileNameBelongsToItsRowAndForeignFilesToNone) {
  EXPECT_EQ(run_file_of("config.json")->value, RunFile::kConfig);
  EXPECT_EQ(run_file_of("summary.json.tmp.4242")->value, RunFile::kSummary);  // a torn write
  EXPECT_EQ(run_file_of("checkpoint-12.pt")->value, RunFile::kCheckpoint);
  EXPECT_EQ(run_file_of("checkpoint-12.pt.sum")->value, RunFile::kCheckpoint);
  EXPECT_EQ(run_file_of("events.out.tfevents.1764000000.host.42.bench")->value, RunFile::kEvents);
  EXPECT_EQ(run_file_of("trace.json")->value, RunFile::kTrace);
  EXPECT_FALSE(run_file_of(".lock")->overwrite_clears);  // the hold of a live run stays
  EXPECT_EQ(run_file_of("notes.txt"), nullptr);
  EXPECT_EQ(run_file_of("config.json.bak"), nullptr);
  EXPECT_EQ(run_file("runs/a", RunFile::kMetrics), "runs/a/metrics.jsonl");
}

}  // namespace
}  // namespace trainbench
