// Command line → RunConfig, using cxxopts; `--help` lists every flag with its default.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "trainbench/core/config.h"

namespace trainbench {

struct CliResult {
  RunConfig config;
  bool help = false;          // --help was given: print help_text and exit 0
  bool help_json = false;     // --help --json: print flag_table_json() and exit 0
  bool version = false;       // --version was given: print the version line and exit 0
  std::string help_text;      // the full usage text
  std::string export_corpus;  // --export_corpus FILE: write the embedded corpus there and exit
};

// Parses argv. Unknown flags, malformed numbers and bad preset names throw ConfigError.
// Does not call validate(): the caller does that once.
CliResult parse_cli(int argc, const char* const* argv);

// The flag table as JSON (`bench --help --json`), for the Python peers and docs/FLAGS.md:
// {"schema_version", "flags": [{"name", "kind" (int|number|text|switch), "group", "help",
// "choices", "default" (the reference preset's, typed as config.json holds it), "quick" (the
// quick preset's)}], "summary": summary.json's fields (report/summary_fields.h), "tensorboard":
// {scalar's key: its tag} (report/tensorboard.h)}.
nlohmann::json flag_table_json();

}  // namespace trainbench
