// The Python peers, run with the project's environment (.venv: torch 2.11, jax): the sampler is
// bit-for-bit the C++ one, the PyTorch peer writes the result contract with the C++ parameter
// count and trains bench's losses, torch.compile trains eager's, and the JAX peer learns.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"
#include "trainbench/data/sampler.h"
#include "trainbench/model/model.h"
#include "trainbench/report/env_info.h"
#include "trainbench/report/results.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

const std::string kPeers = std::string(TB_SOURCE_DIR) + "/scripts/peers";
const std::string kPython = std::string(TB_PYTHON) + " ";

// Flags of a tiny CPU run that bench and the peers share, reading bench's embedded corpus
// exported into `dir`.
std::string tiny_flags(const testing::TempDir& dir, int steps, int log_every) {
  EXPECT_EQ(testing::run_bench("--export_corpus " + (dir / "corpus.bin")).exit_code, 0);
  return " --num_layer 2 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --batch_size 4"
         " --steps " +
         std::to_string(steps) + " --warmup_steps 1 --log_every " + std::to_string(log_every) +
         " --eval_batches 2 --threads 1 --device cpu"
         " --peak_tflops 1 --data " +
         (dir / "corpus.bin");
}

// The summary keys bench's table gives the peers (exported in flags.json), and their manifest.
std::set<std::string> peer_summary_keys() {
  std::set<std::string> keys = testing::summary_keys({SummaryWhen::kAlways}, true);
  keys.insert("manifest");
  return keys;
}

// A peer's env.json: what it ran from (scripts/source_id.sh over scripts/peers; a script's build
// is its tree as it runs) and the machine facts bench's env.json records.
void expect_peer_provenance(const nlohmann::json& env) {
  EXPECT_EQ(env["build_revision"], env["tree_revision"]);
  EXPECT_EQ(env["build_source_hash"], env["tree_source_hash"]);
  EXPECT_EQ(env["git_revision"], env["build_revision"]);
  const std::string hash = env["build_source_hash"].get<std::string>();
  EXPECT_EQ(hash.size(), 16u) << hash;
  EXPECT_EQ(hash.find_first_not_of("0123456789abcdef"), std::string::npos) << hash;
  EXPECT_FALSE(env["cpu"]["isa"].empty());
  EXPECT_GT(env["memory_bytes"].get<int64_t>(), 0);
}

// A peer's summary.json "manifest": its keys, and step 1's loss as the run's step-0 record
// (metrics.jsonl's first line) holds it.
void expect_manifest(const nlohmann::json& m, const std::string& run) {
  EXPECT_EQ(testing::keys_of(m),
            (std::set<std::string>{"framework", "implementation", "compile_options", "tf32",
                                   "compute", "master_weights", "optimizer", "threads", "attention",
                                   "data_in_timer", "params", "first_loss"}));
  std::istringstream metrics(testing::read_file(run + "/metrics.jsonl"));
  std::string step0;
  std::getline(metrics, step0);
  const double first = m["first_loss"].get<double>();
  EXPECT_TRUE(std::isfinite(first));
  EXPECT_NEAR(first, std::log(256.0), 1.0);
  EXPECT_DOUBLE_EQ(first, nlohmann::json::parse(step0)["initial_loss"].get<double>());
  EXPECT_TRUE(m["tf32"].is_null());  // CPU runs
  EXPECT_EQ(m["master_weights"], "float32");
  EXPECT_EQ(m["data_in_timer"], true);
}

TEST(Peers, PythonSamplerReproducesTheCppEpochPlans) {
  SamplerOptions o;
  o.train_end = 10'000;
  o.seq_len = 64;
  o.batch_size = 8;
  o.seed = 7;
  const EpochSampler sampler(o);
  for (int epoch : {0, 3}) {
    const auto r = testing::run_command(kPython + "-c \"import sys; sys.path.insert(0, '" + kPeers +
                                        "'); import common; o, s = common.plan_epoch(7, " +
                                        std::to_string(epoch) + ", 10000, 64); print(o, *s)\"");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const EpochPlan p = sampler.plan(epoch);
    std::ostringstream expected;
    expected << p.offset;
    for (int64_t s : p.starts) expected << " " << s;
    EXPECT_EQ(r.output, expected.str() + "\n") << "epoch " << epoch;
  }
}

TEST(Peers, PytorchPeerWritesTheContractWithTheCppParameterCount) {
  testing::TempDir dir;
  const std::string flags = tiny_flags(dir, 4, 2);
  for (const char* model : {"handcraft", "torch"}) {
    const auto r = testing::run_command(kPython + kPeers + "/pytorch_run.py --model " + model +
                                        flags + " --save_dir " + (dir / "py"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string run = dir / (std::string("py_") + model + "_layer2_float32");
    const auto config = read_json_file(run + "/config.json");
    const auto summary = read_json_file(run + "/summary.json");
    EXPECT_EQ(config["framework"], "pytorch");
    EXPECT_EQ(config["schema_version"], kSchemaVersion);
    // Exactly the summary keys bench's table gives the peers (exported in flags.json), and the
    // manifest.
    EXPECT_EQ(testing::keys_of(summary), peer_summary_keys());
    RunConfig c;
    c.model = choice_of<ModelKind>("model", model);
    c.num_layer = 2;
    c.d_model = 32;
    c.num_heads = 2;
    c.ff_dim = 64;
    c.seq_len = 32;
    const int64_t cpp_params = count_parameters(*make_model(make_plan(c)));
    EXPECT_EQ(summary["params"].get<int64_t>(), cpp_params) << model;
    // What ran: eager PyTorch in float32 with Adam's CPU default, one thread; the torch model's
    // nn.MultiheadAttention calls scaled_dot_product_attention, whose CPU pick with dropout is
    // the math kernel.
    const auto& m = summary["manifest"];
    expect_manifest(m, run);
    EXPECT_EQ(m["framework"], "pytorch");
    EXPECT_EQ(m["implementation"], "eager");
    EXPECT_EQ(m["compile_options"], "");
    EXPECT_EQ(m["compute"], "float32");
    EXPECT_EQ(m["optimizer"], "torch.optim.Adam (for-loop)");
    EXPECT_EQ(m["threads"], 1);
    EXPECT_EQ(m["attention"],
              std::string(model) == "handcraft" ? "naive" : "sdpa math (nn.MultiheadAttention)");
    EXPECT_EQ(m["params"].get<int64_t>(), cpp_params) << model;
    expect_peer_provenance(read_json_file(run + "/env.json"));
    EXPECT_EQ(summary["status"], "completed");
    EXPECT_EQ(summary["steps_timed"], 3);
    EXPECT_TRUE(summary["final_valid_bpb"].is_number());
    // No --target_bpb: no time to target at all.
    EXPECT_TRUE(summary["target_bpb"].is_null());
    EXPECT_TRUE(summary["target_reached"].is_null());
    EXPECT_TRUE(summary["time_to_target_s"].is_null());
    EXPECT_EQ(summary["stopped_at_target"], false);
    EXPECT_GT(summary["sequences_per_s"].get<double>(), 0);
    // MFU on the peak it was given (--peak_tflops 1), as bench computes it.
    EXPECT_EQ(summary["peak_flops_source"], "flag");
    EXPECT_DOUBLE_EQ(
        summary["mfu"].get<double>(),
        summary["tokens_per_s"].get<double>() * summary["flops_per_token"].get<double>() / 1e12);
    // As bench: the train loss and bpb over the last window's timed steps, the noise check,
    // and windows that say how many steps they hold (the plots put them at their middle).
    EXPECT_EQ(summary["final_train_steps"], 2);
    EXPECT_NEAR(summary["final_train_bpb"].get<double>(),
                summary["final_train_loss"].get<double>() / std::log(2.0), 1e-12);
    EXPECT_EQ(summary["noise"]["timed_steps"], 3);
    EXPECT_EQ(testing::window_values(run, "window_steps"), (std::vector<double>{2, 2}));
    const auto plot = testing::run_command(
        kPython +
        "-c \"import sys; sys.path.insert(0, '" TB_SOURCE_DIR
        "/scripts'); import plot_runs; s, t, v = plot_runs.read_run('" +
        run + "'); print([p[0] for p in t], len(plot_runs.per_step('" + run + "')))\"");
    EXPECT_NE(plot.output.find("[0, 1.0, 3.0] 5"), std::string::npos) << plot.output;
    // Its stderr's closing figure is the table's: the median timed step.
    char seq[96];
    std::snprintf(seq, sizeof(seq), "%.2f seq/s (median of 3 timed steps",
                  summary["sequences_per_s"].get<double>());
    EXPECT_NE(r.output.find(seq), std::string::npos) << r.output;
  }
  const auto report = testing::run_bench("report " + (dir / "py_handcraft_layer2_float32") + " " +
                                         (dir / "py_torch_layer2_float32"));
  EXPECT_EQ(report.exit_code, 0) << report.output;
  EXPECT_NE(report.output.find("| float32 |"), std::string::npos);
  // Both are the peer's runs: the caption names the framework, the columns the models.
  EXPECT_NE(report.output.find("Sequences per second (pytorch; "), std::string::npos)
      << report.output;
  EXPECT_NE(report.output.find("| torch vs handcraft |"), std::string::npos) << report.output;
}

// Without --peak_tflops the PyTorch peer times no GEMM of its own for a peak (its MFU would be
// on another scale than bench's): the summary holds no MFU, the log says why, the table has '-'.
TEST(Peers, APeerWithoutBenchsPeakShowsNoMfu) {
  testing::TempDir dir;
  std::string flags = tiny_flags(dir, 2, 1);
  flags.replace(flags.find(" --peak_tflops 1"), 16, "");
  const auto r = testing::run_command(kPython + kPeers + "/pytorch_run.py" + flags +
                                      " --save_dir " + (dir / "py"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("pytorch_run: MFU shown as '-': no --peak_tflops; give bench's peak"),
            std::string::npos)
      << r.output;
  const std::string run = dir / "py_handcraft_layer2_float32";
  const auto summary = read_json_file(run + "/summary.json");
  EXPECT_TRUE(summary["mfu"].is_null());
  EXPECT_TRUE(summary["peak_flops"].is_null());
  EXPECT_EQ(summary["peak_flops_source"], "unknown");
  const auto report = testing::run_bench("report " + run);
  ASSERT_EQ(report.exit_code, 0) << report.output;
  EXPECT_NE(report.output.find("| - |"), std::string::npos) << report.output;
}

// Time to target, as bench: the first evaluation at or below --target_bpb records the steps,
// tokens and training seconds (every step's, warm-up included; evaluations apart) to it;
// --stop_at_target 1 ends the run there, completed, with no second evaluation; a target never
// reached is "not reached" (null figures), never a number. Bad input is refused as bench
// refuses it: exit 2, bench's message, no run folder.
TEST(Peers, APeerStopsAtItsTargetAndSaysNotReachedOtherwise) {
  testing::TempDir dir;
  const std::string py = kPython + kPeers + "/pytorch_run.py";
  // At --lr 0.01 this size falls from about 8.5 bits/byte to about 7.1 by the first evaluation.
  const std::string flags = testing::merge_flags(
      tiny_flags(dir, 12, 4), "--num_layer 1 --eval_every 4 --eval_batches 4 --lr 0.01");
  const auto r = testing::run_command(py + flags + " --target_bpb 7.9 --stop_at_target 1" +
                                      " --save_dir " + (dir / "hit"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string hit_run = dir / "hit_handcraft_layer1_float32";
  const auto hit = read_json_file(hit_run + "/summary.json");
  EXPECT_EQ(testing::keys_of(hit), peer_summary_keys());
  EXPECT_EQ(hit["status"], "completed");
  EXPECT_DOUBLE_EQ(hit["target_bpb"].get<double>(), 7.9);
  EXPECT_EQ(hit["target_reached"], true);
  EXPECT_EQ(hit["stopped_at_target"], true);
  EXPECT_EQ(hit["steps_to_target"], 4);
  EXPECT_EQ(hit["steps_done"], 4);
  EXPECT_EQ(hit["tokens_to_target"], 4 * 4 * 32);  // steps * batch_size * seq_len
  EXPECT_LE(hit["final_valid_bpb"].get<double>(), 7.9);
  // The training clock: all four steps' seconds, the warm-up step's included.
  double steps_s = hit["warmup_seconds"].get<double>();
  for (const auto& ms : hit["step_time_ms_samples"]) steps_s += ms.get<double>() / 1e3;
  EXPECT_GT(hit["time_to_target_s"].get<double>(), 0);
  EXPECT_NEAR(hit["time_to_target_s"].get<double>(), steps_s, 1e-9);
  EXPECT_GT(hit["eval_seconds_to_target"].get<double>(), 0);
  // The one evaluation at the target, none at the end.
  EXPECT_EQ(testing::count_of(testing::read_file(hit_run + "/metrics.jsonl"), "\"valid_bpb\""), 1);
  // Its metrics line carries the clock's reading (the x of a bpb-against-time curve).
  EXPECT_EQ(testing::window_values(hit_run, "train_s", "valid_bpb"),
            std::vector<double>{hit["time_to_target_s"].get<double>()});

  const auto never_r =
      testing::run_command(py + flags + " --target_bpb 0.01 --save_dir " + (dir / "never"));
  ASSERT_EQ(never_r.exit_code, 0) << never_r.output;
  const std::string never_run = dir / "never_handcraft_layer1_float32";
  const auto never = read_json_file(never_run + "/summary.json");
  EXPECT_EQ(never["status"], "completed");
  EXPECT_EQ(never["target_reached"], false);
  EXPECT_EQ(never["stopped_at_target"], false);
  EXPECT_EQ(never["steps_done"], 12);
  for (const char* k :
       {"steps_to_target", "tokens_to_target", "time_to_target_s", "eval_seconds_to_target"}) {
    EXPECT_TRUE(never[k].is_null()) << k;
  }
  // Evaluations at steps 4 and 8 and at the end.
  EXPECT_EQ(testing::count_of(testing::read_file(never_run + "/metrics.jsonl"), "\"valid_bpb\""),
            3);

  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--target_bpb 9", "--target_bpb: 9 is out of range; allowed: 0 (none) or in (0, 8]"},
      {"--target_bpb -1", "--target_bpb: -1 is out of range; allowed: 0 (none) or in (0, 8]"},
      {"--target_bpb 2 --eval_every 0",
       "--target_bpb: needs evaluations during the run; give --eval_every N > 0"},
      {"--target_bpb 2 --eval_batches 2",
       "--target_bpb: --eval_batches 2 is too few to judge a target; give 4 or more, or 0 for "
       "the whole held-out range"},
      {"--stop_at_target 1", "--stop_at_target: needs --target_bpb"},
  };
  // The peer's command line once per case, in one Python process (runpy), so that torch is
  // imported once: each case's exit status follows its message.
  const std::string driver =
      "import runpy, shlex, sys\n"
      "for argv in sys.argv[1:]:\n"
      "    sys.argv = ['" +
      kPeers +
      "/pytorch_run.py'] + shlex.split(argv)\n"
      "    try:\n"
      "        runpy.run_path(sys.argv[0], run_name='__main__')\n"
      "    except SystemExit as e:\n"
      "        print('exit', e.code, flush=True)\n";
  std::string argvs;
  for (const auto& c : cases) {
    argvs += " '" + testing::merge_flags(flags, c.first) + " --save_dir " + (dir / "bad") + "'";
  }
  const auto bad = testing::run_command(kPython + "-c \"" + driver + "\"" + argvs);
  ASSERT_EQ(bad.exit_code, 0) << bad.output;
  for (const auto& [args, message] : cases) {
    EXPECT_NE(bad.output.find("pytorch_run.py: error: " + message + "\nexit 2\n"),
              std::string::npos)
        << args << "\n"
        << bad.output;
  }
  EXPECT_EQ(testing::count_of(bad.output, "exit 2\n"), 5) << bad.output;
  EXPECT_FALSE(fs::exists(dir / "bad_handcraft_layer1_float32"));
}

// Same seed, same init order, same sampler, native dropout: the PyTorch peer and bench train
// the same numbers, so a speed ratio between them compares like with like.
TEST(Peers, PytorchPeerTrainsTheSameLossesAsBench) {
  testing::TempDir dir;
  const std::string flags = tiny_flags(dir, 6, 1);
  ASSERT_EQ(
      testing::run_bench(flags + " --dropout_impl native --save_dir " + (dir / "cpp")).exit_code,
      0);
  ASSERT_EQ(testing::run_command(kPython + kPeers + "/pytorch_run.py" + flags + " --save_dir " +
                                 (dir / "py"))
                .exit_code,
            0);
  const auto cpp = testing::window_values(dir / "cpp_handcraft_layer2_float32");
  const auto py = testing::window_values(dir / "py_handcraft_layer2_float32");
  ASSERT_EQ(cpp.size(), 6u);
  ASSERT_EQ(py.size(), 6u);
  for (size_t i = 0; i < cpp.size(); ++i) EXPECT_NEAR(cpp[i], py[i], 1e-4) << "step " << i + 1;
}

// torch.compile (inductor, C++ kernels built here) computes eager's numbers: with dropout 0
// the first 20 losses agree to float tolerance, and the summary names the backend and the
// compile time.
TEST(Peers, TorchCompileTrainsEagersLosses) {
  testing::TempDir dir;
  // One layer, 10 steps: torch.compile's compile is most of the test's time, and it grows with
  // the graph; the assertion is the same step for step.
  const std::string flags = tiny_flags(dir, 10, 1) + " --dropout 0 --num_layer 1";
  for (const char* compile : {"0", "1"}) {
    const auto r = testing::run_command(kPython + kPeers + "/pytorch_run.py" + flags +
                                        " --compile " + compile + " --save_dir " + (dir / "py"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const auto eager = testing::window_values(dir / "py_handcraft_layer1_float32");
  const auto compiled = testing::window_values(dir / "py_handcraft_layer1_float32_compiled");
  ASSERT_EQ(eager.size(), 10u);
  ASSERT_EQ(compiled.size(), 10u);
  for (size_t i = 0; i < eager.size(); ++i) {
    EXPECT_NEAR(compiled[i], eager[i], 1e-4 * std::max(1.0, eager[i])) << "step " << i + 1;
  }
  const auto summary = read_json_file(dir / "py_handcraft_layer1_float32_compiled/summary.json");
  EXPECT_EQ(summary["compile_backend"], "torch.compile");
  EXPECT_GT(summary["compile_seconds"].get<double>(), 0.0);
  EXPECT_EQ(summary["manifest"]["implementation"], "torch.compile");
  EXPECT_EQ(summary["manifest"]["compile_options"], "mode=default");
}

// --flash 1 (scaled_dot_product_attention, the CPU flash kernel) trains the naive path's losses.
TEST(Peers, PytorchFlashTrainsTheNaiveLosses) {
  testing::TempDir dir;
  const std::string flags = tiny_flags(dir, 5, 1) + " --dropout 0";
  for (const char* flash : {"0", "1"}) {
    const auto r = testing::run_command(kPython + kPeers + "/pytorch_run.py" + flags + " --flash " +
                                        flash + " --save_dir " + (dir / "py"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const auto naive = testing::window_values(dir / "py_handcraft_layer2_float32");
  const auto flash = testing::window_values(dir / "py_handcraft_layer2_float32_flash");
  ASSERT_EQ(naive.size(), 5u);
  ASSERT_EQ(flash.size(), 5u);
  for (size_t i = 0; i < naive.size(); ++i) EXPECT_NEAR(flash[i], naive[i], 1e-4) << i + 1;
  const auto summary = read_json_file(dir / "py_handcraft_layer2_float32_flash/summary.json");
  EXPECT_EQ(summary["manifest"]["attention"], "sdpa flash");
}

// The JAX peer learns the embedded corpus on the CPU. Its first loss shows the initialisation
// matches PyTorch's: not ln(256) = 5.545 (PyTorch's init leaves logits of standard deviation
// about 0.8 at the head, so bench starts at 5.88-6.04 nats/byte over seeds 1-3 at this shape),
// but within 0.3 of bench's first loss, where flax's default init (three times the weight
// variance) would start higher; within 60 quick-preset steps it falls below 3.0 nats/byte (it
// does by step 20 over seeds 1-5: results/zen3-2026-12-07-time-to-target).
TEST(Peers, JaxPeerStartsWhereBenchStartsAndLearns) {
  testing::TempDir dir;
  ASSERT_EQ(testing::run_bench("--export_corpus " + (dir / "corpus.bin")).exit_code, 0);
  ASSERT_EQ(testing::run_bench("--preset quick --steps 2 --warmup_steps 1 --log_every 1 "
                               "--eval_every 0 --eval_batches 1 --data " +
                               (dir / "corpus.bin") + " --save_dir " + (dir / "cpp"))
                .exit_code,
            0);
  const double bench_first = testing::window_values(dir / "cpp_handcraft_layer2_float32").front();
  const auto r = testing::run_command(
      kPython + kPeers + "/jax_run.py --preset quick --steps 60 --log_every 1 --eval_every 0 " +
      "--eval_batches 2 --threads 2 --device cpu --data " + (dir / "corpus.bin") + " --save_dir " +
      (dir / "jax"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string run = dir / "jax_handcraft_layer2_float32";
  const auto losses = testing::window_values(run);
  ASSERT_EQ(losses.size(), 60u);
  EXPECT_GT(losses.front(), std::log(256.0));
  EXPECT_NEAR(losses.front(), bench_first, 0.3);
  EXPECT_LT(*std::min_element(losses.begin(), losses.end()), 3.0);
  const auto summary = read_json_file(run + "/summary.json");
  EXPECT_EQ(testing::keys_of(summary), peer_summary_keys());
  EXPECT_EQ(summary["status"], "completed");
  EXPECT_EQ(summary["compile_backend"], "jax.jit");
  // What ran: the jitted step in float32 with optax's Adam and naive attention, bench's model
  // (its parameter count), from step 1's loss (the first window's, one step).
  const auto& m = summary["manifest"];
  expect_manifest(m, run);
  EXPECT_EQ(m["framework"], "jax");
  EXPECT_EQ(m["implementation"], "jax.jit");
  EXPECT_EQ(m["compute"], "float32");
  EXPECT_EQ(m["optimizer"], "optax.adam");
  EXPECT_EQ(m["attention"], "naive");
  EXPECT_EQ(m["params"],
            read_json_file(dir / "cpp_handcraft_layer2_float32/summary.json")["params"]);
  EXPECT_DOUBLE_EQ(m["first_loss"].get<double>(), losses.front());
  EXPECT_GT(summary["compile_seconds"].get<double>(), 0.0);
  EXPECT_GT(summary["peak_memory_bytes"].get<double>(), 0.0);
  // No --peak_tflops: no MFU on a peak of its own, and one line saying so.
  EXPECT_TRUE(summary["mfu"].is_null());
  EXPECT_EQ(summary["peak_flops_source"], "unknown");
  EXPECT_NE(r.output.find("jax_run: MFU shown as '-': no --peak_tflops"), std::string::npos)
      << r.output;
  const auto env = read_json_file(run + "/env.json");
  EXPECT_EQ(env["num_threads"], std::min(2, available_cores()));  // --threads 2, or fewer cores
  EXPECT_EQ(m["threads"], env["num_threads"]);
  EXPECT_TRUE(env["thread_env"].is_object());
  expect_peer_provenance(env);
}

// Bad input to the JAX peer: one line naming what it runs instead, exit 2, nothing written.
TEST(Peers, JaxPeerRefusesWhatItDoesNotRun) {
  testing::TempDir dir;
  const auto r = testing::run_command(kPython + kPeers + "/jax_run.py --flash 1 --data " +
                                      (dir / "none.bin") + " --save_dir " + (dir / "jax"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("jax_run.py runs --model handcraft --flash 0"), std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::is_empty(dir.path()));
  // Its help lists only what it runs; neither peer offers bench's own fused path.
  const auto help = testing::run_command(kPython + kPeers + "/jax_run.py --help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* line :
       {"--model {handcraft}", "--flash {0}", "--compile {0}", "--dtype {float32,bfloat16}"}) {
    EXPECT_NE(help.output.find(line), std::string::npos) << line << help.output;
  }
  for (const std::string peer : {"/jax_run.py", "/pytorch_run.py"}) {
    const auto h = testing::run_command(kPython + kPeers + peer + " --help");
    EXPECT_EQ(h.output.find("fused"), std::string::npos) << peer << h.output;
    EXPECT_EQ(h.output.find("lowp_gemm"), std::string::npos) << peer;
    EXPECT_EQ(h.output.find("torchscript"), std::string::npos) << peer;
  }
}

}  // namespace
}  // namespace trainbench
