// bench report's column table (report/report_columns.h) and what must follow it: the markdown
// detail table, the CSV and the JSON show its columns in its order, and docs/COMPARING.md's column
// list names each of them with its keys and units.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include "trainbench/report/report.h"
#include "trainbench/report/report_columns.h"

namespace trainbench {
namespace {

// Two runs with every figure: a multi-process run with communication figures and an
// unfinished single-process one.
std::vector<RunRecord> runs_() {
  RunRecord a;
  a.dir = "runs/a";
  a.label = "libtorch handcraft fused x2 processes";
  a.dtype = "bfloat16";
  a.num_layer = 8;
  a.batch_size = 16;
  a.shape = "8 layers, d_model 512, seq_len 256, batch 16";
  a.status = "completed";
  a.sequences_per_s = 98.1;
  a.tokens_per_s = 25113.6;
  a.mfu = 0.412;
  a.peak_memory_bytes = int64_t{300} << 20;
  a.final_train_bpb = 2.25;
  a.final_valid_bpb = 2.5;
  a.warmup_seconds = 12.3;
  a.compile_seconds = 3.4;
  a.communication_ms = 40.7;
  a.communication_share = 0.018;
  a.gemm_path = "onednn_native";
  a.gemm_choice = "auto 1.69x";
  a.noise = {{"step_time_cv", 0.03}, {"disturbed_step_share", 0.1}, {"unstable", true}};
  a.machine = "Intel(R) Xeon(R) \"Platinum\"";
  a.date = "2026-12-01";
  a.revision = "abc1234";
  RunRecord b = a;
  b.dir = "runs/b";
  b.label = "libtorch handcraft";
  b.status = "killed";
  b.last_step = 40;
  b.sequences_per_s = b.tokens_per_s = b.mfu = b.final_valid_bpb = nullptr;
  b.communication_ms = b.communication_share = b.compile_seconds = nullptr;
  b.peak_unreliable = true;
  b.gemm_path = b.gemm_choice = b.machine = "";
  b.noise = nullptr;
  return {a, b};
}

std::string render_(const std::vector<RunRecord>& runs, const std::string& format) {
  ReportOptions o;
  o.format = format;
  return render_report(runs, o);
}

// The cells of a markdown table row ("| a | b |" -> {"a", "b"}).
std::vector<std::string> cells_(const std::string& row) {
  std::vector<std::string> out;
  for (size_t at = 1; at < row.size();) {
    const size_t end = row.find(" |", at + 1);
    if (end == std::string::npos) break;
    out.push_back(row.substr(at + 1, end - at - 1));
    at = end + 2;
  }
  return out;
}

// The fields of a CSV line, quotes undone.
std::vector<std::string> csv_fields_(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"' && quoted && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::vector<std::string> lines_(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The headers and keys the table gives a report of `runs`.
std::vector<std::string> headers_(const std::vector<RunRecord>& runs) {
  std::vector<std::string> out;
  for (const ReportColumn* c : shown_columns(runs))
    if (*c->header) out.push_back(c->header);
  return out;
}
std::vector<std::string> keys_(const std::vector<RunRecord>& runs) {
  std::vector<std::string> out;
  for (const ReportColumn* c : shown_columns(runs)) out.push_back(c->key);
  return out;
}

TEST(ReportColumns, MarkdownCsvAndJsonShowTheTablesColumnsInItsOrder) {
  const std::vector<RunRecord> runs = runs_();
  const std::vector<std::string> md = lines_(render_(runs, "markdown"));
  const auto header = std::find_if(md.begin(), md.end(), [](const std::string& l) {
    return l.rfind("| configuration |", 0) == 0;
  });
  ASSERT_NE(header, md.end());
  EXPECT_EQ(cells_(*header), headers_(runs));
  std::string separator = "|";
  for (size_t i = 0; i < headers_(runs).size(); ++i) separator += "---|";
  EXPECT_EQ(*(header + 1), separator);
  for (size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(cells_(*(header + 2 + i)).size(), headers_(runs).size()) << *(header + 2 + i);
  }
  const std::vector<std::string> csv = lines_(render_(runs, "csv"));
  ASSERT_EQ(csv.size(), 1 + runs.size());
  EXPECT_EQ(csv_fields_(csv[0]), keys_(runs));
  const auto json = nlohmann::ordered_json::parse(render_(runs, "json"));
  ASSERT_EQ(json["runs"].size(), runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    // A run without communication figures has no communication keys; the others are the CSV's.
    std::vector<std::string> keys;
    for (const auto& [key, value] : json["runs"][i].items()) keys.push_back(key);
    EXPECT_EQ(keys, keys_({runs[i]})) << i;
    // The CSV field is the JSON value.
    const std::vector<std::string> fields = csv_fields_(csv[1 + i]), all = keys_(runs);
    ASSERT_EQ(fields.size(), all.size());
    for (size_t k = 0; k < fields.size(); ++k) {
      const std::string& key = all[k];
      const nlohmann::ordered_json v =
          json["runs"][i].contains(key) ? json["runs"][i][key] : nlohmann::ordered_json();
      EXPECT_EQ(fields[k], v.is_null()     ? ""
                           : v.is_string() ? v.get<std::string>()
                                           : v.dump())
          << key;
    }
  }
}

// The markdown's detail rows as they were before the table (every column, the communication
// ones included), and the figures that were in the markdown only now in CSV and JSON too.
TEST(ReportColumns, DetailRowsReadAsBeforeAndWarmUpAndCompileAreInEveryFormat) {
  const std::vector<RunRecord> runs = runs_();
  const std::string md = render_(runs, "markdown");
  EXPECT_NE(md.find("\n| handcraft fused x2 processes | bfloat16 | 8 | 16 | 98.10 | 25114 | 41.2 | "
                    "onednn_native (auto 1.69x) | cv 3%, 10% disturbed (unstable) | 300 | 12.3 | "
                    "3.4 | 2.2500 | 2.5000 | 40.7 | 1.8% | completed | Intel(R) Xeon(R) "
                    "\"Platinum\" | 2026-12-01 | abc1234 | runs/a |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("\n| handcraft | bfloat16 | 8 | 16 | - | - | unreliable | - | - | 300 | 12.3 | "
                    "- | 2.2500 | - | - | - | killed at step 40 | - | 2026-12-01 | abc1234 | "
                    "runs/b |\n"),
            std::string::npos)
      << md;
  EXPECT_EQ(render_(runs, "csv"),
            "configuration,dtype,num_layer,batch_size,sequences_per_s,tokens_per_s,mfu_percent,"
            "peak_unreliable,gemm_path,gemm_choice,step_time_cv_percent,disturbed_step_percent,"
            "unstable,peak_memory_bytes,warmup_seconds,compile_seconds,final_train_bpb,"
            "final_valid_bpb,communication_ms,communication_percent,status,last_step,machine,"
            "date,revision,dir\n"
            "\"libtorch handcraft fused x2 processes\",bfloat16,8,16,98.1,25113.6,41.2,false,"
            "onednn_native,auto 1.69x,3.0,10.0,true,314572800,12.3,3.4,2.25,2.5,40.7,1.8,"
            "completed,,\"Intel(R) Xeon(R) \"\"Platinum\"\"\",2026-12-01,\"abc1234\",\"runs/a\"\n"
            "\"libtorch handcraft\",bfloat16,8,16,,,,true,,,,,,314572800,12.3,,2.25,,,,killed,40,"
            "\"\",2026-12-01,\"abc1234\",\"runs/b\"\n");
  const auto j = nlohmann::json::parse(render_(runs, "json"));
  EXPECT_DOUBLE_EQ(j["runs"][0]["warmup_seconds"].get<double>(), 12.3);
  EXPECT_DOUBLE_EQ(j["runs"][0]["compile_seconds"].get<double>(), 3.4);
  EXPECT_TRUE(j["runs"][1]["compile_seconds"].is_null());
  EXPECT_EQ(j["runs"][1]["last_step"], 40);
  EXPECT_TRUE(j["runs"][0]["last_step"].is_null());
}

std::string comparing_doc_() {
  std::ifstream in(std::string(TB_SOURCE_DIR) + "/docs/COMPARING.md");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// docs/COMPARING.md's column list ("| column | CSV/JSON keys (unit) | ...") is the table: each
// markdown column in order, with its keys in order and each key's unit in parentheses.
TEST(ReportColumns, TheDocsColumnListIsTheTable) {
  const std::string readme = comparing_doc_();
  const size_t start = readme.find("\n| column | CSV/JSON keys (unit) |");
  ASSERT_NE(start, std::string::npos) << "docs/COMPARING.md has no column list";
  std::vector<std::string> listed;
  std::istringstream lines(readme.substr(start + 1));
  std::string line;
  std::getline(lines, line);  // the header
  std::getline(lines, line);  // its separator
  const std::regex key_re("`([a-z_0-9]+)`( \\(([^)]+)\\))?");
  while (std::getline(lines, line) && line.rfind("| `", 0) == 0) {
    const std::vector<std::string> cells = cells_(line);
    ASSERT_GE(cells.size(), 2u) << line;
    listed.push_back("header " + cells[0]);
    for (auto it = std::sregex_iterator(cells[1].begin(), cells[1].end(), key_re);
         it != std::sregex_iterator(); ++it) {
      listed.push_back("key " + (*it)[1].str() + " unit " + (*it)[3].str());
    }
  }
  std::vector<std::string> table;
  for (const ReportColumn& c : report_columns()) {
    if (*c.header) table.push_back("header `" + std::string(c.header) + "`");
    table.push_back("key " + std::string(c.key) + " unit " + c.unit);
  }
  // The first difference, named (gtest would print only the first 32 entries of each list).
  for (size_t i = 0; i < std::max(listed.size(), table.size()); ++i) {
    const std::string in_readme = i < listed.size() ? listed[i] : "nothing more",
                      in_table = i < table.size() ? table[i] : "nothing more";
    if (in_readme != in_table) {
      ADD_FAILURE() << "docs/COMPARING.md's column list has " << in_readme
                    << " where the table in src/report/report_columns.cpp has " << in_table;
      break;
    }
  }
}

}  // namespace
}  // namespace trainbench
