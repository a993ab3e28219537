// Published figures as data: scripts/record_results.sh keeps a measurement's small files under
// results/, and scripts/results_tables.py generates the docs' measured tables from them (the
// docs in the tree are held to results/ here).
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "trainbench/core/cpu_isa.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

// record_results.sh keeps a measurement's small files (the runs' config/env/summary, the
// reports) with machine.json and command.txt, none of the large ones, and no path of the
// machine in them (OUT_DIR's reads results/NAME, the checkout's root is left out); a NAME that
// exists, or an OUT_DIR without runs, is refused with one line and changes nothing.
TEST(Scripts, RecordResultsKeepsTheSmallFilesAndNeverOverwrites) {
  testing::TempDir dir;
  const std::string run = dir / "cmp/bench/1_handcraft_layer2_float32";
  fs::create_directories(run);
  for (const char* f : {"config.json", "env.json", "summary.json", "checkpoint-4.pt",
                        "metrics.jsonl", "events.out.tfevents.1.h.bench"}) {
    testing::write_file(run + "/" + f, std::string("{\"file\": \"") + f + "\"}");
  }
  // A clean build's run (what the binary was built from: a commit, no uncommitted changes).
  testing::write_file(
      run + "/env.json",
      R"({"build_revision": "0123456789ab", "build_source_hash": "0123456789abcdef"})");
  // The paths a run and a report hold: OUT_DIR's (a temporary folder) and the checkout's.
  testing::write_file(run + "/config.json", R"({"save_dir": ")" + (dir / "cmp/bench/1") +
                                                R"(", "data": ")" TB_SOURCE_DIR
                                                R"(/data/enwik8"})");
  testing::write_file(dir / "cmp/report.json", R"({"runs": [{"dir": ")" + run + R"("}]})");
  testing::write_file(dir / "cmp/notes.txt", "not a result file");
  const std::string record = "RESULTS_DIR=" + (dir / "results") +
                             " bash " TB_SOURCE_DIR "/scripts/record_results.sh " + (dir / "cmp");
  const auto r = testing::run_command(record + " m-1 'scripts/compare.sh runs/cmp'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string kept = dir / "results/m-1";
  EXPECT_NE(r.output.find("recorded 6 files"), std::string::npos) << r.output;
  for (const char* f :
       {"bench/1_handcraft_layer2_float32/config.json", "bench/1_handcraft_layer2_float32/env.json",
        "bench/1_handcraft_layer2_float32/summary.json", "report.json", "machine.json",
        "command.txt"}) {
    EXPECT_TRUE(fs::exists(kept + "/" + f)) << f;
  }
  for (const char* f : {"bench/1_handcraft_layer2_float32/checkpoint-4.pt",
                        "bench/1_handcraft_layer2_float32/metrics.jsonl", "notes.txt"}) {
    EXPECT_FALSE(fs::exists(kept + "/" + f)) << f;
  }
  EXPECT_EQ(testing::read_file(kept + "/command.txt"), "scripts/compare.sh runs/cmp\n");
  for (const auto& e : fs::recursive_directory_iterator(kept)) {
    if (!e.is_regular_file()) continue;
    const std::string text = testing::read_file(e.path().string());
    EXPECT_EQ(text.find(dir.path()), std::string::npos) << e.path() << ": " << text;
    EXPECT_EQ(text.find(TB_SOURCE_DIR), std::string::npos) << e.path() << ": " << text;
  }
  const auto config = nlohmann::json::parse(
      testing::read_file(kept + "/bench/1_handcraft_layer2_float32/config.json"));
  EXPECT_EQ(config["save_dir"], "results/m-1/bench/1");
  EXPECT_EQ(config["data"], "data/enwik8");
  EXPECT_EQ(nlohmann::json::parse(testing::read_file(kept + "/report.json"))["runs"][0]["dir"],
            "results/m-1/bench/1_handcraft_layer2_float32");
  const auto machine = nlohmann::json::parse(testing::read_file(kept + "/machine.json"));
  EXPECT_EQ(machine["cpu_model"], cpuinfo_field("model name"));
  EXPECT_FALSE(machine["cpu_flags"].empty());
  const auto again = testing::run_command(record + " m-1 other 2>&1");
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.output.find("record_results.sh: " + kept + " exists; nothing is overwritten"),
            std::string::npos)
      << again.output;
  EXPECT_EQ(testing::read_file(kept + "/command.txt"), "scripts/compare.sh runs/cmp\n");
  fs::create_directories(dir / "empty");
  const auto none = testing::run_command("RESULTS_DIR=" + (dir / "results") +
                                         " bash " TB_SOURCE_DIR "/scripts/record_results.sh " +
                                         (dir / "empty") + " m-3 x 2>&1");
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(none.output.find("holds no run folder (no summary.json) and no times.json: nothing "
                             "recorded"),
            std::string::npos)
      << none.output;
  EXPECT_FALSE(fs::exists(dir / "results/m-3"));
  // ci_times.sh's folder (times.json and its logs, no runs) is kept without a report.
  fs::create_directories(dir / "ci");
  testing::write_file(dir / "ci/times.json", R"({"second": {"wall_s": 700}})");
  testing::write_file(dir / "ci/second.log", "the log");
  const auto times = testing::run_command("RESULTS_DIR=" + (dir / "results") +
                                          " bash " TB_SOURCE_DIR "/scripts/record_results.sh " +
                                          (dir / "ci") + " m-4 'scripts/ci_times.sh /tmp/ci' 2>&1");
  ASSERT_EQ(times.exit_code, 0) << times.output;
  EXPECT_TRUE(fs::exists(dir / "results/m-4/times.json"));
  EXPECT_TRUE(fs::exists(dir / "results/m-4/machine.json"));
  EXPECT_FALSE(fs::exists(dir / "results/m-4/report.json"));
  EXPECT_FALSE(fs::exists(dir / "results/m-4/second.log"));
}

// ab_binaries.sh: the same binary on both sides logs the same losses in every round (exit 0,
// ab.json says so and holds each side's seq/s); a path that is no binary, or a bad REPEAT, is
// one line and exit 2 before anything runs.
TEST(Scripts, AbBinariesComparesLossesAndSpeedOfTwoBinaries) {
  testing::TempDir dir;
  const std::string ab = "bash " TB_SOURCE_DIR "/scripts/ab_binaries.sh ";
  const auto r = testing::run_command("REPEAT=2 " + ab + (dir / "ab") +
                                      " " TB_BENCH_EXE " " TB_BENCH_EXE
                                      " --preset quick --steps 4 --warmup_steps 3 --eval_every 2"
                                      " --eval_batches 1 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("losses: identical in every round"), std::string::npos) << r.output;
  const auto result = nlohmann::json::parse(testing::read_file(dir / "ab/ab.json"));
  EXPECT_EQ(result["rounds"], 2);
  EXPECT_TRUE(result["losses_identical"]);
  EXPECT_EQ(result["seq_per_s"]["old"].size(), 2u);
  EXPECT_GT(result["median_new"].get<double>(), 0);
  const auto missing =
      testing::run_command(ab + (dir / "ab2") + " " + (dir / "nothing") + " " TB_BENCH_EXE " 2>&1");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.output,
            "ab_binaries.sh: '" + (dir / "nothing") + "' is not an executable bench\n");
  const auto repeat = testing::run_command("REPEAT=0 " + ab + (dir / "ab3") +
                                           " " TB_BENCH_EXE " " TB_BENCH_EXE " 2>&1");
  EXPECT_EQ(repeat.exit_code, 2);
  EXPECT_EQ(repeat.output,
            "ab_binaries.sh: REPEAT: '0' is not allowed; use a whole number from 1\n");
  EXPECT_FALSE(fs::exists(dir / "ab2"));
}

// ci_times.sh never writes into a folder that exists (nor clones anything then).
TEST(Scripts, CiTimesRefusesAFolderThatExists) {
  testing::TempDir dir;
  testing::write_file(dir / "times.json", "kept");
  const auto r =
      testing::run_command("bash " TB_SOURCE_DIR "/scripts/ci_times.sh " + dir.path() + " 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(
      r.output.find("ci_times.sh: OUT_DIR: '" + dir.path() + "' exists; nothing is overwritten"),
      std::string::npos)
      << r.output;
  EXPECT_EQ(testing::read_file(dir / "times.json"), "kept");
}

const std::string kTables = TB_PYTHON " " TB_SOURCE_DIR "/scripts/results_tables.py";

// The tree's README and BENCHMARKS agree with results/; a doc's block is rebuilt from a
// folder's machine.json and report.json (one summary row per dtype: LibTorch eager, bench's
// best, the best peer, their ratio); a torn folder is named and changes nothing (exit 2).
TEST(Scripts, ResultsTablesAreGeneratedFromResults) {
  const auto tree = testing::run_command(kTables + " --check 2>&1");
  EXPECT_EQ(tree.exit_code, 0) << tree.output;

  testing::TempDir dir;
  fs::create_directories(dir / "results/m-1");
  testing::write_file(dir / "results/m-1/machine.json",
                      R"({"cpu_model": "AMD EPYC 9B14", "cpu_flags": ["avx2", "avx512f",
                          "avx512_bf16"], "recorded_utc": "2026-12-06T03:00:00Z",
                          "commit": "0123456789", "gpu": null})");
  auto run = [](const char* c, const char* d, double s) {
    return nlohmann::json{{"configuration", c},    {"dtype", d},     {"sequences_per_s", s},
                          {"status", "completed"}, {"num_layer", 8}, {"batch_size", 8}};
  };
  testing::write_file(dir / "results/m-1/report.json",
                      nlohmann::json{{"runs",
                                      {run("libtorch handcraft", "bfloat16", 2.0),
                                       run("bench handcraft fused fused_adam", "bfloat16", 4.0),
                                       run("bench handcraft fused fused_adam", "bfloat16", 5.0),
                                       run("pytorch handcraft compiled", "bfloat16", 3.0),
                                       run("jax handcraft", "bfloat16", 2.5)}}}
                          .dump());
  const std::string begin =
      "<!-- results: generated by scripts/results_tables.py from results/; edit the files "
      "there -->";
  const std::string end = "<!-- end of generated results -->";
  const std::string doc = dir / "doc.md";
  testing::write_file(doc, "# Doc\n" + begin + "\n" + end + "\nafter\n");
  const std::string cmd = kTables + " --results " + (dir / "results") + " " + doc + " 2>&1";
  EXPECT_EQ(testing::run_command(kTables + " --check --results " + (dir / "results") + " " + doc +
                                 " 2>&1")
                .exit_code,
            1);
  const auto made = testing::run_command(cmd);
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const std::string text = testing::read_file(doc);
  EXPECT_NE(text.find("| AMD EPYC 9B14 (avx2, avx512f, avx512_bf16) | 2026-12-06 | 8 layers, "
                      "batch 8 | bfloat16 | "
                      "2.00 | 4.50 (n=2, 4.00-5.00): bench handcraft fused fused_adam | 3.00: "
                      "pytorch handcraft compiled | 1.50x | [m-1](results/m-1) |"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("| bench handcraft fused fused_adam | bfloat16 | 4.50 (n=2, 4.00-5.00) |"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.rfind("\nafter\n"), text.size() - 7) << text;
  EXPECT_EQ(testing::run_command(kTables + " --check --results " + (dir / "results") + " " + doc)
                .exit_code,
            0);
  // A torn report.json: named, and the doc keeps its last good table.
  fs::create_directories(dir / "results/m-2");
  testing::write_file(dir / "results/m-2/machine.json", "{}");
  testing::write_file(dir / "results/m-2/report.json", "{\"runs\": [");
  const auto torn = testing::run_command(cmd);
  EXPECT_EQ(torn.exit_code, 2);
  EXPECT_NE(torn.output.find("results_tables.py: " + (dir / "results/m-2") + ": JSONDecodeError"),
            std::string::npos)
      << torn.output;
  EXPECT_EQ(testing::read_file(doc), text);
  fs::remove_all(dir / "results/m-2");

  // A table of results/*/tables.json by its id, and the build-times table headed by a
  // ci_times.sh folder's row; a table no tables.json holds is refused in one line.
  fs::create_directories(dir / "results/earlier");
  testing::write_file(dir / "results/earlier/tables.json",
                      R"({"tables": [{"id": "ops", "columns": ["op", "float32"],
                                      "rows": [["LayerNorm", "4.65x"]]},
                                     {"id": "build-times", "columns": ["fact", "figure", "where"],
                                      "rows": [["a rebuild", "15 s", "Zen 5"]]}]})");
  fs::create_directories(dir / "results/ci-1");
  testing::write_file(dir / "results/ci-1/machine.json",
                      R"({"cpu_model": "AMD EPYC", "recorded_utc": "2026-12-06T08:00:00Z",
                          "online_cpus": 2})");
  testing::write_file(dir / "results/ci-1/times.json",
                      R"({"commit": "abcdef0123", "second": {"wall_s": 780, "exit_status": 0,
                          "install_s": 83, "build_s": 267, "tests_s": 430, "tests": 324,
                          "failed": 0, "skipped": 5, "build_warnings": 0, "compiler_s": 515.0,
                          "units": 50}})");
  const auto table = [](const std::string& id) {
    return "<!-- results table " + id +
           ": generated by scripts/results_tables.py from results/; edit the files there -->\n"
           "<!-- end of generated results -->\n";
  };
  testing::write_file(doc, "# Doc\n" + table("ops") + "text\n" + table("build-times"));
  ASSERT_EQ(testing::run_command(cmd).exit_code, 0);
  const std::string t = testing::read_file(doc);
  EXPECT_NE(t.find("-->\n| op | float32 |\n|---|---|\n| LayerNorm | 4.65x |\n<!-- end"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("| **780 s (13 min)**: install 83 s, build 267 s (515.0 compiler s in 50 "
                   "units), tests 430 s; 324 tests, 0 failed, 5 skipped; 0 build warnings; exit "
                   "0 | AMD EPYC, 2 vCPUs, 2026-12-06, abcdef0, [ci-1](results/ci-1) |\n"
                   "| a rebuild | 15 s | Zen 5 |"),
            std::string::npos)
      << t;
  // The measurements' tables leave the times folder out.
  testing::write_file(doc, "# Doc\n" + begin + "\n" + end + "\nafter\n");
  ASSERT_EQ(testing::run_command(cmd).exit_code, 0);
  EXPECT_EQ(testing::read_file(doc), text);
  testing::write_file(doc, "# Doc\n" + table("nope"));
  const auto unknown = testing::run_command(cmd);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.output.find("asks for table 'nope', which no tables.json under"),
            std::string::npos)
      << unknown.output;
  EXPECT_EQ(testing::read_file(doc), "# Doc\n" + table("nope"));

  // The time-to-target table from the runs' own summaries (found by the report's dir under the
  // folder): reached of runs, the median time counting a run that missed as never, its range
  // over the reached ones, the median steps.
  fs::create_directories(dir / "results/m-3");
  testing::write_file(dir / "results/m-3/machine.json", R"({"cpu_model": "AMD EPYC"})");
  nlohmann::json runs = nlohmann::json::array();
  const std::vector<std::pair<nlohmann::json, nlohmann::json>> hits = {
      {7.5, 130}, {8.5, 120}, {nullptr, nullptr}};
  for (size_t i = 0; i < hits.size(); ++i) {
    const std::string r = "seed-" + std::to_string(i + 1) + "/1_handcraft_layer2_bfloat16_fused";
    auto row = run("bench handcraft fused fused_adam", "bfloat16", 270.0);
    row["dir"] = "results/m-3/" + r;
    runs.push_back(row);
    fs::create_directories(dir / ("results/m-3/" + r));
    testing::write_file(dir / ("results/m-3/" + r + "/summary.json"),
                        nlohmann::json{{"target_bpb", 2.9},
                                       {"time_to_target_s", hits[i].first},
                                       {"steps_to_target", hits[i].second}}
                            .dump());
  }
  testing::write_file(dir / "results/m-3/report.json", nlohmann::json{{"runs", runs}}.dump());
  testing::write_file(doc, "# Doc\n" + table("time-to-target"));
  ASSERT_EQ(testing::run_command(cmd).exit_code, 0);
  EXPECT_NE(testing::read_file(doc).find(
                "| [m-3](results/m-3) | 2.9 | bench handcraft fused fused_adam | bfloat16 | 2/3 | "
                "8.5 (7.5-8.5) | 125 |\n"),
            std::string::npos)
      << testing::read_file(doc);
}

// A run of a binary built from uncommitted changes (build_revision, or an older run's
// git_revision, ending in -dirty) or of no named build is refused: one line naming the run
// folder, exit 2, nothing under RESULTS_DIR. ALLOW_DIRTY=1 records it marked, with the diff: the
// build's source_diff.patch (BENCH's folder) where its hash is the runs' build_diff_hash, else
// the tree's, machine.json saying which.
TEST(Scripts, RecordResultsRefusesADirtyBuildAndKeepsTheDiffWhenAllowed) {
  testing::TempDir dir;
  const std::string run = dir / "cmp/bench/1_handcraft_layer2_float32";
  fs::create_directories(run);
  testing::write_file(run + "/config.json", "{}");
  testing::write_file(run + "/summary.json", R"({"status": "completed"})");
  // sha256 of "diff --git a/x b/x\n", its first 16 hex digits: the build's diff hash.
  testing::write_file(run + "/env.json", R"({"build_revision": "abc-dirty",
      "build_source_hash": "0123456789abcdef", "build_diff_hash": "1a059963bbf31988"})");
  testing::write_file(dir / "cmp/report.json", "{}");
  fs::create_directories(dir / "build");
  testing::write_file(dir / "build/source_diff.patch", "diff --git a/x b/x\n");
  const std::string record = "RESULTS_DIR=" + (dir / "results") +
                             " BENCH=" + (dir / "build/bench") +
                             " bash " TB_SOURCE_DIR "/scripts/record_results.sh " + (dir / "cmp");
  const auto refused = testing::run_command(record + " m-1 'scripts/compare.sh runs/cmp' 2>&1");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_EQ(
      refused.output,
      "record_results.sh: runs of a binary built from uncommitted changes (abc-dirty): " + run +
          "; only runs of a committed, clean build are recorded (commit, rebuild, rerun), or "
          "ALLOW_DIRTY=1 records them marked, with the diff: nothing recorded\n");
  EXPECT_FALSE(fs::exists(dir / "results"));

  const auto allowed =
      testing::run_command("ALLOW_DIRTY=1 " + record + " m-1 'scripts/compare.sh runs/cmp' 2>&1");
  ASSERT_EQ(allowed.exit_code, 0) << allowed.output;
  EXPECT_NE(allowed.output.find("built from uncommitted changes"), std::string::npos)
      << allowed.output;
  const std::string kept = dir / "results/m-1";
  EXPECT_EQ(testing::read_file(kept + "/source_diff.patch"), "diff --git a/x b/x\n");
  const auto machine = nlohmann::json::parse(testing::read_file(kept + "/machine.json"));
  EXPECT_EQ(machine["built_from_uncommitted_changes"], true);
  EXPECT_EQ(machine["build_revisions"], nlohmann::json::array({"abc-dirty"}));
  EXPECT_EQ(machine["build_diff_hashes"], nlohmann::json::array({"1a059963bbf31988"}));
  EXPECT_EQ(machine["diff_source"].get<std::string>().rfind("the build's", 0), 0u)
      << machine.dump();

  // A build diff of another hash is not the runs': the tree's diff, said to be the tree's.
  testing::write_file(dir / "build/source_diff.patch", "diff --git a/y b/y\n");
  const auto tree =
      testing::run_command("ALLOW_DIRTY=1 " + record + " m-2 'scripts/compare.sh runs/cmp' 2>&1");
  ASSERT_EQ(tree.exit_code, 0) << tree.output;
  EXPECT_TRUE(fs::exists(dir / "results/m-2/source_diff.patch"));
  const auto from_tree =
      nlohmann::json::parse(testing::read_file(dir / "results/m-2/machine.json"));
  EXPECT_EQ(from_tree["built_from_uncommitted_changes"], true);
  EXPECT_EQ(from_tree["diff_source"], "tree at recording, may differ from the build");

  // An older run's git_revision counts where it has no build_revision; no revision at all is
  // refused even with ALLOW_DIRTY.
  testing::write_file(run + "/env.json", R"({"git_revision": "829d5b0d4331-dirty"})");
  const auto legacy = testing::run_command(record + " m-3 'scripts/compare.sh runs/cmp' 2>&1");
  EXPECT_EQ(legacy.exit_code, 2) << legacy.output;
  EXPECT_NE(legacy.output.find("built from uncommitted changes (829d5b0d4331-dirty): " + run),
            std::string::npos)
      << legacy.output;
  testing::write_file(run + "/env.json", R"({"git_revision": null})");
  const auto bare =
      testing::run_command("ALLOW_DIRTY=1 " + record + " m-3 'scripts/compare.sh runs/cmp' 2>&1");
  EXPECT_EQ(bare.exit_code, 2) << bare.output;
  EXPECT_EQ(bare.output,
            "record_results.sh: run folders whose env.json does not say what their binary was "
            "built from (no build_revision or git_revision, or no readable env.json): " +
                run + "; only runs that name their build are recorded: nothing recorded\n");
  EXPECT_FALSE(fs::exists(dir / "results/m-3"));
}

// One folder, one binary: bench runs of two build_source_hash are refused (one line naming both,
// exit 2, nothing written) unless the folder is ab_binaries.sh's A/B of the two its ab.json
// names; the peers' runs beside bench's are theirs (scripts/peers' hash), not a second binary.
TEST(Scripts, RecordResultsRefusesTwoBinariesInOneFolderUnlessAnAb) {
  testing::TempDir dir;
  auto plant = [&](const std::string& folder, const std::string& env) {
    fs::create_directories(dir / folder);
    testing::write_file(dir / (folder + "/summary.json"), R"({"status": "completed"})");
    testing::write_file(dir / (folder + "/env.json"), env);
  };
  plant("cmp/old_1_handcraft", R"({"libtorch_version": "2.11.0", "build_revision": "aaaaaaaaaaaa",
                                   "build_source_hash": "1111111111111111"})");
  plant("cmp/new_1_handcraft", R"({"libtorch_version": "2.11.0", "build_revision": "bbbbbbbbbbbb",
                                   "build_source_hash": "2222222222222222"})");
  plant("cmp/py_float32", R"({"libtorch_version": null, "framework_version": "torch 2.11.0",
                              "build_revision": "cccccccccccc",
                              "build_source_hash": "3333333333333333"})");
  testing::write_file(dir / "cmp/report.json", "{}");
  const std::string record = "RESULTS_DIR=" + (dir / "results") +
                             " bash " TB_SOURCE_DIR "/scripts/record_results.sh " + (dir / "cmp");
  const auto two = testing::run_command(record + " m-1 'scripts/compare.sh runs/cmp' 2>&1");
  EXPECT_EQ(two.exit_code, 2) << two.output;
  EXPECT_EQ(two.output,
            "record_results.sh: runs of 2 different bench binaries in one folder "
            "(build_source_hash 1111111111111111: " +
                (dir / "cmp/old_1_handcraft") +
                "; 2222222222222222: " + (dir / "cmp/new_1_handcraft") +
                "); a folder holds one binary's runs (bench's and the peers' side by side), or an "
                "A/B of two revisions (scripts/ab_binaries.sh, its ab.json): nothing recorded\n");
  EXPECT_FALSE(fs::exists(dir / "results"));
  // An ab.json naming two other binaries is no A/B of these.
  testing::write_file(dir / "cmp/ab.json",
                      R"({"new_over_old": 1.0, "old_build_source_hash": "1111111111111111",
                          "new_build_source_hash": "4444444444444444"})");
  const auto other =
      testing::run_command(record + " m-1 'scripts/ab_binaries.sh runs/ab a b' 2>&1");
  EXPECT_EQ(other.exit_code, 2) << other.output;
  EXPECT_NE(other.output.find("), not the two its ab.json names; "), std::string::npos)
      << other.output;
  EXPECT_FALSE(fs::exists(dir / "results"));
  testing::write_file(dir / "cmp/ab.json",
                      R"({"new_over_old": 1.0, "old_build_source_hash": "1111111111111111",
                          "new_build_source_hash": "2222222222222222"})");
  const auto ab = testing::run_command(record + " m-1 'scripts/ab_binaries.sh runs/ab a b' 2>&1");
  ASSERT_EQ(ab.exit_code, 0) << ab.output;
  EXPECT_TRUE(fs::exists(dir / "results/m-1/ab.json"));
  const auto machine = nlohmann::json::parse(testing::read_file(dir / "results/m-1/machine.json"));
  EXPECT_EQ(machine["build_revisions"],
            nlohmann::json::array({"aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc"}));
  EXPECT_EQ(machine["built_from_uncommitted_changes"], false);
  EXPECT_EQ(machine["libtorch_version"], "2.11.0");
  EXPECT_EQ(machine["pytorch_version"], "2.11.0");
}

// command.txt holds the literal command: a COMMAND with a placeholder or a description is
// refused in one line; "-" keeps the command line the script wrote to OUT_DIR/command.txt, and
// a COMMAND that differs from it is refused.
TEST(Scripts, RecordResultsKeepsTheLiteralCommand) {
  testing::TempDir dir;
  fs::create_directories(dir / "cmp/1_handcraft");
  testing::write_file(dir / "cmp/1_handcraft/summary.json", R"({"status": "completed"})");
  testing::write_file(
      dir / "cmp/1_handcraft/env.json",
      R"({"build_revision": "0123456789ab", "build_source_hash": "0123456789abcdef"})");
  testing::write_file(dir / "cmp/report.json", "{}");
  const std::string record = "RESULTS_DIR=" + (dir / "results") +
                             " bash " TB_SOURCE_DIR "/scripts/record_results.sh " + (dir / "cmp");
  const std::string again =
      "give the literal command it was made with (its paths and values), or - to keep "
      "OUT_DIR/command.txt where the script wrote one\n";
  const auto placeholder =
      testing::run_command(record + " m-1 'scripts/compare.sh OUT_DIR --dtype float32' 2>&1");
  EXPECT_EQ(placeholder.exit_code, 2);
  EXPECT_EQ(placeholder.output, "record_results.sh: COMMAND: 'OUT_DIR' is a placeholder; " + again);
  const auto described = testing::run_command(
      record + " m-1 './build/bench --preset quick (the quickstart run)' 2>&1");
  EXPECT_EQ(described.exit_code, 2);
  EXPECT_EQ(described.output,
            "record_results.sh: COMMAND: '(...)' reads as a description, not a command; " + again);
  const auto stranger = testing::run_command(record + " m-1 'run it twice' 2>&1");
  EXPECT_EQ(stranger.exit_code, 2);
  EXPECT_NE(stranger.output.find("COMMAND: 'run' is not a script or binary of this tree"),
            std::string::npos)
      << stranger.output;
  const auto none = testing::run_command(record + " m-1 - 2>&1");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.output, "record_results.sh: COMMAND: - keeps OUT_DIR/command.txt, which '" +
                             (dir / "cmp") +
                             "' lacks; give the literal command it was made with\n");
  EXPECT_FALSE(fs::exists(dir / "results"));
  testing::write_file(
      dir / "cmp/command.txt",
      "REPEAT=5 DTYPES='float32 bfloat16' scripts/compare.sh runs/cmp --steps 13\n");
  const auto differs = testing::run_command(record + " m-1 'scripts/compare.sh runs/cmp' 2>&1");
  EXPECT_EQ(differs.exit_code, 2);
  EXPECT_NE(differs.output.find("COMMAND differs from " + (dir / "cmp/command.txt")),
            std::string::npos)
      << differs.output;
  const auto kept = testing::run_command(record + " m-1 - 2>&1");
  ASSERT_EQ(kept.exit_code, 0) << kept.output;
  EXPECT_EQ(testing::read_file(dir / "results/m-1/command.txt"),
            "REPEAT=5 DTYPES='float32 bfloat16' scripts/compare.sh runs/cmp --steps 13\n");
}

const std::string kDocFigures = TB_PYTHON " " TB_SOURCE_DIR "/scripts/docs_figures.py";

// Every figure with a unit in the tree's README.md and docs/*.md is inside a generated block or
// on a line naming the results/ folder that holds it (a folder with machine.json; not
// results/earlier, whose figures live in the generated tables only); in a planted tree, a
// figure that is neither is named with its file and line, exit 1, and the rest passes.
TEST(Scripts, EveryDocFigureIsGeneratedOrNamesItsResultsFolder) {
  const auto tree = testing::run_command(kDocFigures);
  EXPECT_EQ(tree.exit_code, 0) << tree.output;

  testing::TempDir dir;
  fs::create_directories(dir / "docs");
  fs::create_directories(dir / "results/m-1");
  fs::create_directories(dir / "results/earlier");
  testing::write_file(dir / "results/m-1/machine.json", "{}");
  testing::write_file(dir / "README.md",
                      "# Doc\n"
                      "<!-- results table ops: generated by scripts/results_tables.py from "
                      "results/; edit the files there -->\n"
                      "| op | 4.65x |\n"
                      "<!-- end of generated results -->\n"
                      "fused 7.53 seq/s (results/m-1)\n"
                      "`--dist_timeout 300 s` is a message's wording\n");
  testing::write_file(dir / "docs/FAST.md",
                      "# Fast\n\nIt trains 5,650 seq/s on a GPU.\n"
                      "A Xeon: 14.4 seq/s (results/earlier).\n");
  const std::string cmd = kDocFigures + " --root " + dir.path();
  const auto planted = testing::run_command(cmd);
  EXPECT_EQ(planted.exit_code, 1) << planted.output;
  EXPECT_EQ(planted.output,
            "docs/FAST.md:3: '5,650 seq/s' outside a generated block and without a results/ "
            "folder on its line\n"
            "docs/FAST.md:4: '14.4 seq/s' outside a generated block and without a results/ "
            "folder on its line\n");
  fs::remove(dir / "docs/FAST.md");
  const auto clean = testing::run_command(cmd);
  EXPECT_EQ(clean.exit_code, 0) << clean.output;
}

// Rows of a folder whose binaries were built from uncommitted changes (machine.json says so, or
// an older run's git_revision ends in -dirty) carry a dagger and the footnote under every table
// they are in; a measurement's heading names the runs' build revisions, not the recording commit.
TEST(Scripts, ResultsTablesMarkRowsBuiltFromUncommittedChanges) {
  testing::TempDir dir;
  const std::string report =
      R"({"runs": [{"configuration": "libtorch handcraft", "dtype": "float32",
                    "sequences_per_s": 2.0, "status": "completed", "num_layer": 8,
                    "batch_size": 8}]})";
  fs::create_directories(dir / "results/m-1");
  testing::write_file(dir / "results/m-1/machine.json",
                      R"({"cpu_model": "AMD EPYC 9B14", "recorded_utc": "2026-12-06T03:00:00Z",
                          "commit": "fedcba9876", "build_revisions": ["0123456789ab"],
                          "built_from_uncommitted_changes": false})");
  testing::write_file(dir / "results/m-1/report.json", report);
  fs::create_directories(dir / "results/m-2/bench/1_handcraft");
  testing::write_file(dir / "results/m-2/machine.json",
                      R"({"cpu_model": "AMD EPYC 9B14", "recorded_utc": "2026-12-07T03:00:00Z",
                          "commit": "fedcba9876"})");
  testing::write_file(dir / "results/m-2/bench/1_handcraft/env.json",
                      R"({"git_revision": "829d5b0d4331-dirty"})");
  testing::write_file(dir / "results/m-2/report.json", report);
  fs::create_directories(dir / "results/ab-1");
  testing::write_file(dir / "results/ab-1/machine.json",
                      R"({"cpu_model": "AMD EPYC 9B14", "recorded_utc": "2026-12-07T04:00:00Z",
                          "built_from_uncommitted_changes": true,
                          "build_revisions": ["0123456789ab", "abc-dirty"]})");
  testing::write_file(dir / "results/ab-1/ab.json",
                      R"({"rounds": 3, "losses_identical": true, "median_old": 2.0,
                          "median_new": 3.0, "new_over_old": 1.5})");
  testing::write_file(dir / "results/ab-1/command.txt", "scripts/ab_binaries.sh runs/ab old new\n");
  const std::string doc = dir / "doc.md";
  testing::write_file(doc,
                      "# Doc\n<!-- results: generated by scripts/results_tables.py from results/; "
                      "edit the files there -->\n<!-- end of generated results -->\ntext\n"
                      "<!-- results table ab: generated by scripts/results_tables.py from "
                      "results/; edit the files there -->\n<!-- end of generated results -->\n");
  const auto made =
      testing::run_command(kTables + " --results " + (dir / "results") + " " + doc + " 2>&1");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const std::string text = testing::read_file(doc);
  const std::string footnote =
      "† built from uncommitted changes: the binary's sources differed from the revision it names "
      "(-dirty); the folder's source_diff.patch holds the diff where it was kept\n";
  EXPECT_NE(text.find("| 2.00 | 2.00: libtorch handcraft | - | - | [m-1](results/m-1) |\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("| 2.00 | 2.00: libtorch handcraft | - | - | [m-2](results/m-2) † |\n\n" +
                      footnote),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("#### m-1: AMD EPYC 9B14, 2026-12-06, built from 0123456789ab\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("#### m-2: AMD EPYC 9B14, 2026-12-07, built from 829d5b0d4331-dirty "
                      "(uncommitted changes)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("| [ab-1](results/ab-1) † | AMD EPYC 9B14 | 2026-12-07 | "
                      "`scripts/ab_binaries.sh runs/ab old new` | yes | 2.00 | 3.00 | 1.500x (3 "
                      "rounds) |\n\n" +
                      footnote + "<!-- end of generated results -->"),
            std::string::npos)
      << text;
  EXPECT_EQ(testing::run_command(kTables + " --check --results " + (dir / "results") + " " + doc)
                .exit_code,
            0);
  // Without the dirty folders, no dagger and no footnote.
  fs::remove_all(dir / "results/m-2");
  fs::remove_all(dir / "results/ab-1");
  ASSERT_EQ(testing::run_command(kTables + " --results " + (dir / "results") + " " + doc).exit_code,
            0);
  EXPECT_EQ(testing::read_file(doc).find("†"), std::string::npos) << testing::read_file(doc);
}

}  // namespace
}  // namespace trainbench
