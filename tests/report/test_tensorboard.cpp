// TensorBoard event files (report/tensorboard.h), read back by TensorBoard's own code
// (tests/report/tensorboard_check.py: its event_accumulator, and a real server's HTTP API):
// a completed, an interrupted, a SIGKILLed and a resumed run, and a peer's folder.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "trainbench/core/cpu_isa.h"
#include "trainbench/core/errors.h"
#include "trainbench/report/results.h"
#include "trainbench/report/run_lock.h"
#include "trainbench/report/tensorboard.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

const std::string kTinyTensorBoard =
    " --num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --batch_size 4"
    " --warmup_steps 1 --eval_batches 1 --threads 1 --device cpu --peak_tflops 1";
const std::string kCheck =
    std::string(TB_PYTHON) + " " + TB_SOURCE_DIR + "/tests/report/tensorboard_check.py ";

nlohmann::json read_events_(const std::string& run) {
  const auto r = testing::run_command(kCheck + "read " + run + " 2>/dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return nlohmann::json::parse(r.output);
}

// metrics.jsonl's windows: step -> the line.
std::map<int64_t, nlohmann::json> windows_(const std::string& run) {
  std::map<int64_t, nlohmann::json> out;
  std::istringstream in(testing::read_file(run + "/metrics.jsonl"));
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("loss")) out[j["step"].get<int64_t>()] = j;
  }
  return out;
}

// Every window's scalars at its step, equal (float32) to metrics.jsonl's; every step's loss
// once, in order, up to the last step metrics.jsonl holds.
void expect_events_match_metrics_(const nlohmann::json& ev, const std::string& run) {
  const auto w = windows_(run);
  ASSERT_FALSE(w.empty());
  const auto& s = ev["scalars"];
  ASSERT_TRUE(s.contains(tb_tag::kTrainBpb)) << ev.dump();
  ASSERT_EQ(s[tb_tag::kTrainBpb].size(), w.size()) << ev.dump();
  size_t i = 0;
  std::vector<double> step_losses;
  for (const auto& [step, line] : w) {
    const auto& bpb = s[tb_tag::kTrainBpb][i];
    const auto& seq = s[tb_tag::kSeqPerS][i];
    EXPECT_EQ(bpb[0], step);
    EXPECT_NEAR(bpb[1].get<double>(), line["loss"].get<double>() / std::log(2.0), 1e-5);
    EXPECT_EQ(seq[0], step);
    EXPECT_NEAR(seq[1].get<double>(), line["sequences_per_s"].get<double>(),
                1e-6 * line["sequences_per_s"].get<double>());
    EXPECT_EQ(s[tb_tag::kTokensPerS][i][0], step);
    EXPECT_EQ(s[tb_tag::kStepMs][i][0], step);
    EXPECT_EQ(s[tb_tag::kPeakMemoryMb][i][0], step);
    EXPECT_EQ(s[tb_tag::kMfuPercent][i][0], step);
    for (const auto& l : line["step_losses"]) step_losses.push_back(l.get<double>());
    ++i;
  }
  const auto& each = s[tb_tag::kTrainBpbStep];
  ASSERT_EQ(each.size(), step_losses.size()) << ev.dump();
  for (size_t k = 0; k < each.size(); ++k) {
    EXPECT_EQ(each[k][0], static_cast<int64_t>(k + 1));
    EXPECT_NEAR(each[k][1].get<double>(), step_losses[k] / std::log(2.0), 1e-5) << k;
  }
}

TEST(TensorBoard, Crc32cAndTheRecordFraming) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);  // the CRC-32C check value
  EXPECT_EQ(crc32c("", 0), 0u);
  // The instruction is core/cpu_isa's answer: forced off, the one-line way out.
  CpuIsa without;
  try {
    crc32c("123456789", 9, without);
    FAIL() << "a CRC without SSE4.2";
  } catch (const RunError& e) {
    EXPECT_STREQ(e.what(),
                 "TensorBoard event files need the CPU's SSE4.2 CRC-32C instruction, which this "
                 "CPU lacks; run with --tensorboard 0");
  }
  if (hardware_isa().sse4_2) {
    CpuIsa with;
    with.sse4_2 = true;
    EXPECT_EQ(crc32c("123456789", 9, with), 0xE3069283u);
  }
  const std::string record = tfrecord("payload");
  EXPECT_EQ(record.size(), 8 + 4 + 7 + 4u);
  testing::TempDir dir;
  testing::write_file(dir / "f", record + record + record.substr(0, 10));
  const auto back = read_tfrecords(dir / "f");
  EXPECT_EQ(back, (std::vector<std::string>{"payload", "payload"}));  // the torn third dropped
  std::string damaged = record;
  damaged[14] ^= 1;  // a byte of the payload
  testing::write_file(dir / "g", record + damaged + record);
  EXPECT_EQ(read_tfrecords(dir / "g").size(), 1u);
}

TEST(TensorBoard, ACompletedRunReadsAsItsMetricsWithTheHParamsSession) {
  testing::TempDir dir;
  const std::string run = dir / "r_handcraft_layer1_float32";
  const auto r = testing::run_bench(
      kTinyTensorBoard + " --steps 6 --log_every 2 --eval_every 4 --save_dir " + (dir / "r"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto ev = read_events_(run);
  expect_events_match_metrics_(ev, run);
  const auto& s = ev["scalars"];
  // The scalars are exactly the exported list's tags (the peers write theirs from it), and that
  // list is what `bench --help --json` gives them.
  std::set<std::string> written, listed;
  for (const auto& [tag, _] : s.items()) written.insert(tag);
  for (const TensorBoardScalar& row : kTensorBoardScalars) listed.insert(row.tag);
  EXPECT_EQ(written, listed);
  EXPECT_EQ(listed.size(), std::size(kTensorBoardScalars));  // one key per tag
  const auto help = testing::run_bench("--help --json");
  ASSERT_EQ(help.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(help.output)["tensorboard"], tensorboard_scalars_json());
  ASSERT_EQ(s[tb_tag::kValidBpb].size(), 2u) << ev.dump();  // steps 4 and 6 (the end)
  EXPECT_EQ(s[tb_tag::kValidBpb][0][0], 4);
  EXPECT_EQ(s[tb_tag::kValidBpb][1][0], 6);
  // The same evaluations against training milliseconds: each step is its metrics line's
  // train_s (the time to target's clock), rising, the values those of bpb/valid.
  const auto& by_ms = s[tb_tag::kValidBpbByTrainMs];
  ASSERT_EQ(by_ms.size(), 2u) << ev.dump();
  const std::vector<double> train_s = testing::window_values(run, "train_s", "valid_bpb");
  ASSERT_EQ(train_s.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(by_ms[k][0].get<int64_t>(), std::llround(train_s[k] * 1e3));
    EXPECT_EQ(by_ms[k][1], s[tb_tag::kValidBpb][k][1]);
  }
  EXPECT_GT(train_s[1], train_s[0]);
  const auto summary = read_json_file(run + "/summary.json");
  EXPECT_NEAR(s[tb_tag::kValidBpb][1][1].get<double>(), summary["final_valid_bpb"].get<double>(),
              1e-5);
  EXPECT_NEAR(s[tb_tag::kFinalSeqPerS][0][1].get<double>(),
              summary["sequences_per_s"].get<double>(),
              1e-6 * summary["sequences_per_s"].get<double>());
  EXPECT_EQ(s[tb_tag::kFinalCompleted][0][1], 1.0);
  EXPECT_EQ(ev["text"], nlohmann::json({"config", "env", "whole_run"}));
  // TensorBoard sorts tag groups by name: the curves' groups come before the one-point
  // whole-run figures.
  for (const std::string& tag : written) {
    if (tag.rfind(tb_tag::kFinalPrefix, 0) != 0) {
      EXPECT_LT(tag, tb_tag::kFinalPrefix) << tag;
    }
  }
  const auto& hp = ev["hparams"];
  EXPECT_EQ(hp["start"]["num_layer"], 1.0);
  EXPECT_EQ(hp["start"]["dtype"], "float32");
  EXPECT_EQ(hp["start"]["flash"], false);
  EXPECT_EQ(hp["end_status"], 1);  // STATUS_SUCCESS
  EXPECT_EQ(hp["experiment_metrics"],
            nlohmann::json({tb_tag::kFinalSeqPerS, tb_tag::kFinalTokensPerS, tb_tag::kFinalValidBpb,
                            tb_tag::kFinalCompleted}));
  // --overwrite 1 takes the old curves away with the old run; --tensorboard 0 writes none.
  ASSERT_EQ(testing::run_bench(kTinyTensorBoard +
                               " --steps 4 --log_every 2 --overwrite 1 --save_dir " + (dir / "r"))
                .exit_code,
            0);
  EXPECT_EQ(event_files(run).size(), 1u);
  EXPECT_EQ(read_events_(run)["scalars"][tb_tag::kTrainBpbStep].size(), 4u);
  ASSERT_EQ(testing::run_bench(kTinyTensorBoard + " --steps 2 --tensorboard 0 --save_dir " +
                               (dir / "off"))
                .exit_code,
            0);
  EXPECT_TRUE(event_files(dir / "off_handcraft_layer1_float32").empty());
}

// Ctrl-C, then --resume: the stopped session's file keeps its steps, the resumed one's goes on
// from the checkpoint, no step twice; a SIGKILLed run's file reads up to its last whole window.
TEST(TensorBoard, InterruptedKilledAndResumedRunsKeepEveryStepOnce) {
  testing::TempDir dir;
  const std::string run = dir / "s_handcraft_layer1_float32";
  const auto start = [&](const std::string& save, const std::string& sig) {
    return testing::run_command(
        "bash -c '" + std::string(TB_BENCH_EXE) + kTinyTensorBoard +
        " --steps 1000000 --log_every 3 --eval_every 0 --save_dir " + save +
        " >/dev/null 2>&1 & pid=$!; for i in $(seq 600); do [ $(wc -l < " + save +
        "_handcraft_layer1_float32/metrics.jsonl 2>/dev/null || echo 0) -ge 4 ] && break; "
        "sleep 0.05; done; kill -" +
        sig + " $pid; wait $pid; echo exit=$?'");
  };
  const auto stopped = start(dir / "s", "INT");
  ASSERT_NE(stopped.output.find("exit=130"), std::string::npos) << stopped.output;
  auto ev = read_events_(run);
  expect_events_match_metrics_(ev, run);
  EXPECT_EQ(ev["hparams"]["end_status"], 0);  // interrupted: unknown
  const int64_t at = read_json_file(run + "/summary.json")["steps_done"].get<int64_t>();
  ASSERT_EQ(testing::run_bench("--resume " + run + " --steps " + std::to_string(at + 5)).exit_code,
            0);
  ev = read_events_(run);
  EXPECT_EQ(ev["files"], 2);
  expect_events_match_metrics_(ev, run);  // steps 1 .. at + 5, each once
  EXPECT_EQ(ev["scalars"][tb_tag::kTrainBpbStep].size(), static_cast<size_t>(at + 5));
  EXPECT_EQ(ev["hparams"]["end_status"], 1);

  const std::string killed = dir / "k_handcraft_layer1_float32";
  const auto k = start(dir / "k", "KILL");
  ASSERT_NE(k.output.find("exit=137"), std::string::npos) << k.output;
  ev = read_events_(killed);
  const auto w = windows_(killed);
  ASSERT_FALSE(w.empty());
  // The windows TensorBoard reads are the ones metrics.jsonl holds (or one fewer, when the kill
  // fell between the two files' writes), each equal to its line.
  const auto& bpb = ev["scalars"][tb_tag::kTrainBpb];
  ASSERT_GE(bpb.size() + 1, w.size());
  ASSERT_LE(bpb.size(), w.size());
  auto it = w.begin();
  for (const auto& point : bpb) {
    EXPECT_EQ(point[0], it->first);
    EXPECT_NEAR(point[1].get<double>(), it->second["loss"].get<double>() / std::log(2.0), 1e-5);
    ++it;
  }
}

// One TensorBoard over a folder holding bench's run and the PyTorch peer's: a real server
// lists both and serves each one's bpb/train series, under the same tags.
TEST(TensorBoard, AServerShowsBenchAndThePeerSideBySide) {
  testing::TempDir dir;
  ASSERT_EQ(testing::run_bench("--export_corpus " + (dir / "corpus.bin")).exit_code, 0);
  const std::string flags =
      kTinyTensorBoard + " --steps 4 --log_every 2 --eval_every 0 --data " + (dir / "corpus.bin");
  ASSERT_EQ(testing::run_bench(flags + " --save_dir " + (dir / "runs/bench")).exit_code, 0);
  const auto peer = testing::run_command(std::string(TB_PYTHON) + " " + TB_SOURCE_DIR +
                                         "/scripts/peers/pytorch_run.py" + flags + " --save_dir " +
                                         (dir / "runs/py"));
  ASSERT_EQ(peer.exit_code, 0) << peer.output;
  const auto b = read_events_(dir / "runs/bench_handcraft_layer1_float32");
  const auto p = read_events_(dir / "runs/py_handcraft_layer1_float32");
  std::set<std::string> bench_tags, peer_tags;
  for (const auto& [tag, _] : b["scalars"].items()) bench_tags.insert(tag);
  for (const auto& [tag, _] : p["scalars"].items()) peer_tags.insert(tag);
  EXPECT_EQ(bench_tags, peer_tags);
  expect_events_match_metrics_(p, dir / "runs/py_handcraft_layer1_float32");
  EXPECT_EQ(p["hparams"]["start"]["num_layer"], 1.0);
  EXPECT_EQ(p["text"], nlohmann::json({"config", "env"}));
  const auto served = testing::run_command(kCheck + "serve " + (dir / "runs") + " bpb/train");
  ASSERT_EQ(served.exit_code, 0) << served.output;
  const auto s = nlohmann::json::parse(served.output);
  ASSERT_TRUE(s.contains("bench_handcraft_layer1_float32")) << s.dump();
  ASSERT_TRUE(s.contains("py_handcraft_layer1_float32")) << s.dump();
  EXPECT_EQ(s["bench_handcraft_layer1_float32"].size(), 2u);
  EXPECT_EQ(s["py_handcraft_layer1_float32"].size(), 2u);
  EXPECT_EQ(s["bench_handcraft_layer1_float32"][1][0], 4);
}

}  // namespace
}  // namespace trainbench
