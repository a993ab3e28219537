// bench report's configuration columns: what read_run puts in a run's label (processes, the
// all-reduce's place, fused Adam, CUDA graphs) and the markdown's short labels.
#include <gtest/gtest.h>

#include <filesystem>
#include <tuple>

#include "report_folders.h"
#include "test_util.h"
#include "trainbench/report/report.h"

namespace trainbench {
namespace {

TEST(ReportDist, ProcessCountsGetTheirOwnColumnsAndRatios) {
  testing::TempDir root;
  const std::string one = make_run(root, "one", "", "handcraft", "float32", 0, "completed", 2.0);
  const std::string two = make_run(root, "two", "", "handcraft", "float32", 0, "completed", 3.9);
  nlohmann::json config = nlohmann::json::parse(testing::read_file(two + "/config.json"));
  config["world_size"] = 2;
  testing::write_file(two + "/config.json", config.dump());
  const std::string md = render_report({read_run(one), read_run(two)}, {});
  EXPECT_NE(md.find("| dtype | handcraft | handcraft x2 processes | "), std::string::npos) << md;
  EXPECT_NE(md.find("1.95x"), std::string::npos) << md;
  EXPECT_EQ(md.find("comm ms/step"), std::string::npos) << md;  // no figures: no columns
}

TEST(ReportDist, CommunicationGetsItsColumnsAndAllReduceAfterBackwardItsLabel) {
  testing::TempDir root;
  const std::string one = make_run(root, "one", "", "handcraft", "float32", 0, "completed", 2.0);
  std::vector<RunRecord> runs = {read_run(one)};
  for (const auto& [name, overlap, comm, share] :
       {std::tuple{"ov", 1, 40.7, 0.018}, {"seq", 0, 103.9, 0.044}}) {
    const std::string d = make_run(root, name, "", "handcraft", "float32", 0, "completed", 3.9);
    nlohmann::json config = nlohmann::json::parse(testing::read_file(d + "/config.json"));
    config["world_size"] = 2;
    config["dist_overlap"] = overlap == 1;
    testing::write_file(d + "/config.json", config.dump());
    nlohmann::json summary = nlohmann::json::parse(testing::read_file(d + "/summary.json"));
    summary["communication_ms"] = comm;
    summary["communication_share"] = share;
    testing::write_file(d + "/summary.json", summary.dump());
    runs.push_back(read_run(d));
  }
  const std::string md = render_report(runs, {});
  EXPECT_NE(md.find("| handcraft x2 processes | handcraft x2 processes all-reduce after "
                    "backward |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| valid bpb | comm ms/step | comm share | status |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1.5000 | - | - | completed |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1.5000 | 40.7 | 1.8% | completed |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1.5000 | 103.9 | 4.4% | completed |"), std::string::npos) << md;
  ReportOptions csv;
  csv.format = "csv";
  EXPECT_NE(render_report(runs, csv).find(",1.5,40.7,1.8,completed,"), std::string::npos)
      << render_report(runs, csv);
  ReportOptions json;
  json.format = "json";
  const auto j = nlohmann::json::parse(render_report(runs, json));
  EXPECT_FALSE(j["runs"][0].contains("communication_ms"));
  EXPECT_EQ(j["runs"][2]["communication_ms"], 103.9);
  EXPECT_DOUBLE_EQ(j["runs"][2]["communication_percent"].get<double>(), 4.4);
}

TEST(Report, FusedAdamAndCudaGraphRunsGetTheirOwnColumns) {
  testing::TempDir root;
  std::vector<RunRecord> runs;
  const std::vector<std::pair<int, int>> variants = {{0, 0}, {1, 0}, {1, 1}};
  for (const auto& [fused, graph] : variants) {
    const std::string d = root / ("r" + std::to_string(fused) + std::to_string(graph));
    std::filesystem::create_directories(d);
    testing::write_file(d + "/config.json", nlohmann::json({{"schema_version", kSchemaVersion},
                                                            {"model", "handcraft"},
                                                            {"dtype", "bfloat16"},
                                                            {"num_layer", 8},
                                                            {"batch_size", 100},
                                                            {"flash", 1},
                                                            {"fused_adam", fused},
                                                            {"cuda_graph", graph}})
                                                .dump());
    testing::write_file(d + "/summary.json",
                        nlohmann::json({{"schema_version", kSchemaVersion},
                                        {"status", "completed"},
                                        {"sequences_per_s", 1000.0 * (1 + fused + graph)}})
                            .dump());
    runs.push_back(read_run(d));
  }
  EXPECT_EQ(runs[0].label, "libtorch handcraft flash");
  EXPECT_EQ(runs[1].label, "bench handcraft flash fused_adam");
  EXPECT_EQ(runs[2].label, "bench handcraft flash fused_adam cuda_graph");
  const std::string md = render_report(runs, {});
  EXPECT_NE(md.find("| bfloat16 | 1000 | 2000 | 3000 | 2.00x | 3.00x |"), std::string::npos) << md;
}

// One framework and one shape but the sequence length: the markdown's labels drop what every run
// shares into the caption, so a column reads "handcraft fused [seq_len 64]"; --baseline takes
// the short label or the whole one.
TEST(Report, ShortLabelsKeepOnlyWhatSetsAConfigurationApart) {
  testing::TempDir root;
  std::vector<RunRecord> runs;
  for (const auto& [name, compile, seq_len, seq_s] :
       {std::tuple<const char*, const char*, int, double>{"eager", "none", 128, 100},
        {"fused", "fused", 128, 200},
        {"short", "fused", 64, 400}}) {
    const std::string d = make_run(root, name, "", "handcraft", "bfloat16", 0, "completed", seq_s);
    nlohmann::json config = nlohmann::json::parse(testing::read_file(d + "/config.json"));
    config["compile"] = compile;
    config["d_model"] = 128;
    config["seq_len"] = seq_len;
    testing::write_file(d + "/config.json", config.dump());
    runs.push_back(read_run(d));
  }
  const std::string md = render_report(runs, {});
  // LibTorch eager and bench's fused path: two frameworks, each label keeps its own.
  EXPECT_NE(md.find("Sequences per second (8 layers, d_model 128, batch 100; ratios against "
                    "libtorch handcraft [seq_len 128])"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| dtype | libtorch handcraft [seq_len 128] | bench handcraft fused [seq_len "
                    "128] | bench handcraft fused [seq_len 64] | bench handcraft fused [seq_len "
                    "128] vs libtorch handcraft [seq_len 128] |"),
            std::string::npos)
      << md;
  // The seq_len 64 column is another model shape: no ratio against a seq_len 128 baseline.
  EXPECT_NE(md.find("| bfloat16 | 100 | 200 | 400 | 2.00x | n/a (other shape) |"),
            std::string::npos)
      << md;
  for (const char* baseline :
       {"bench handcraft fused [seq_len 128]",
        "bench handcraft fused [8 layers, d_model 128, seq_len 128, batch 100]"}) {
    ReportOptions o;
    o.baseline = baseline;
    EXPECT_NE(render_report(runs, o).find("| 0.50x | n/a (other shape) |"), std::string::npos)
        << baseline;
    o.format = "json";
    const auto j = nlohmann::json::parse(render_report(runs, o));
    EXPECT_EQ(j["baseline"],
              "bench handcraft fused [8 layers, d_model 128, seq_len 128, batch 100]");
  }
}

// "libtorch" is LibTorch as shipped; a run with any of bench's own replacements is "bench" and
// names each one outside its path's default (keep_memory: auto since; true/false before).
TEST(Report, BenchsReplacementsAreNamedBenchAndLibTorchRowsAreStock) {
  testing::TempDir root;
  int n = 0;
  auto label = [&](const nlohmann::json& extra, const std::string& framework = "") {
    const std::string d = make_run(root, "r" + std::to_string(n++), framework, "handcraft",
                                   "float32", 0, "completed", 100);
    nlohmann::json config = nlohmann::json::parse(testing::read_file(d + "/config.json"));
    config.update(extra);
    testing::write_file(d + "/config.json", config.dump());
    return read_run(d).label;
  };
  using J = nlohmann::json;
  EXPECT_EQ(label(J{{"compile", "none"}, {"keep_memory", "0"}, {"dropout_impl", "native"}}),
            "libtorch handcraft");
  EXPECT_EQ(label(J{{"compile", "torchscript"}, {"keep_memory", "0"}}),
            "libtorch handcraft torchscript");
  EXPECT_EQ(label(J{{"compile", "none"}, {"keep_memory", "1"}}), "bench handcraft keep_memory");
  EXPECT_EQ(label(J{{"compile", "none"}, {"keep_memory", true}}), "bench handcraft keep_memory");
  EXPECT_EQ(label(J{{"compile", "none"}, {"keep_memory", false}, {"dropout_impl", "parallel"}}),
            "bench handcraft parallel-dropout");
  EXPECT_EQ(label(J{{"compile", "fused"}, {"keep_memory", "1"}, {"dropout_impl", "fused"}}),
            "bench handcraft fused");
  EXPECT_EQ(label(J{{"compile", "fused"}, {"keep_memory", "0"}}),
            "bench handcraft fused libtorch-allocator");
  EXPECT_EQ(label(J{{"compile", "none"}, {"fused_adam", true}}), "bench handcraft fused_adam");
  EXPECT_EQ(label(J{{"compile", "none"}, {"fused_adam", true}, {"adam_kernel", "multi"}}),
            "bench handcraft fused_adam adam-multi");
  EXPECT_EQ(label(J{{"compile", "none"}, {"fused_adam", true}, {"adam_kernel", "param"}}),
            "bench handcraft fused_adam");
  EXPECT_EQ(label(J{{"compile", "fused"}, {"gpu_kernels", "v2"}, {"flash", true}}),
            "bench handcraft fused flash gpu-v2");
  EXPECT_EQ(label(J{{"compile", "fused"}, {"gpu_kernels", "v1"}}), "bench handcraft fused");
  EXPECT_EQ(label(J{{"compile", "none"}, {"sdpa_backend", "math"}, {"flash", true}}),
            "libtorch handcraft sdpa-math flash");
  // The peers' --compile 1 is torch.compile / jax.jit: "compiled".
  EXPECT_EQ(label(J{{"compile", 1}}, "pytorch"), "pytorch handcraft compiled");
  EXPECT_EQ(label(J{{"compile", 1}, {"compile_mode", "default"}}, "pytorch"),
            "pytorch handcraft compiled");
  EXPECT_EQ(label(J{{"compile", 1}, {"compile_mode", "max-autotune"}}, "pytorch"),
            "pytorch handcraft compiled max-autotune");
  EXPECT_EQ(label(J{{"compile", 1}, {"keep_memory", "1"}}, "jax"), "jax handcraft compiled");
}

}  // namespace
}  // namespace trainbench
