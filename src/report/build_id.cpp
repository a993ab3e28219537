// What the binary was built from against the tree it was built in (env_info.h's SourceId): the
// one file that includes the header the build regenerates, so a new commit recompiles this file
// alone. Torch-free.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "trainbench/report/env_info.h"
#include "trainbench_build_facts.h"  // generated at configure: TB_BUILD_TYPE, TB_SOURCE_DIR
#include "trainbench_build_id.h"     // generated at every build by scripts/source_id.sh --header

namespace trainbench {

SourceId build_source_id() { return {TB_BUILD_REVISION, TB_BUILD_SOURCE_HASH, TB_BUILD_DIFF_HASH}; }

std::string tree_dir() {
  const char* dir = std::getenv("TB_SOURCE_TREE");
  return dir && *dir ? dir : TB_SOURCE_DIR;
}

std::optional<SourceId> tree_source_id() {
  const std::string script = tree_dir() + "/scripts/source_id.sh";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(script, ec)) return std::nullopt;
  std::string out;
  if (FILE* pipe = popen(("bash '" + script + "' 2>/dev/null").c_str(), "r")) {
    char buf[256];
    while (fgets(buf, sizeof(buf), pipe)) out += buf;
    if (pclose(pipe) != 0) return std::nullopt;
  }
  // Three lines: revision, source hash, diff hash (empty for a clean tree).
  std::istringstream lines(out);
  SourceId id;
  if (!std::getline(lines, id.revision) || !std::getline(lines, id.source_hash) ||
      id.source_hash.size() != 16)
    return std::nullopt;
  std::getline(lines, id.diff_hash);
  return id;
}

std::string provenance_mark(const nlohmann::json& env) {
  // A clean build is its commit exactly, whatever its tree holds or has committed since (the
  // tree's fields say what it holds; bench --version names the difference): only a -dirty build
  // is a binary no revision names.
  const std::string rev = env.is_object() ? env.value("build_revision", std::string()) : "";
  if (rev.size() >= 6 && rev.compare(rev.size() - 6, 6, "-dirty") == 0)
    return "built from uncommitted changes";
  return "";
}

std::string version_text() {
  const SourceId b = build_source_id();
  std::string text = "bench (trainbench) built from " + b.revision + " (sources " + b.source_hash +
                     (b.diff_hash.empty() ? "" : ", diff " + b.diff_hash) + "), LibTorch " +
                     libtorch_version() + ", " + build_type() + " build\n";
  if (const auto t = tree_source_id(); t && t->source_hash != b.source_hash) {
    text += "its tree (" + tree_dir() + ") now holds other sources: " + t->revision + " (sources " +
            t->source_hash + "); rebuild to measure them\n";
  }
  return text;
}

}  // namespace trainbench
