// Every flag of bench, written once. One row per flag gives its name, --help group, kind, field
// of RunConfig, help, what it allows, whether `--resume` may change it and whether the ranks of
// a multi-process run may differ in it; a choice flag's values, their help words and other
// spellings come from its enum's table (core/choices.h). From the table come the command line
// and --help (app/cli.cpp), the per-flag checks (app/validate.cpp, which adds the cross-flag
// rules), config.json (core/config.cpp), the resume rule (train/checkpoint.cpp) and the rank
// rule (dist/dist.cpp). Adding a flag: a RunConfig field, one row in core/flags.cpp, and its use
// (a choice flag: its enum and table in core/choices.h first).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "trainbench/core/choice_table.h"
#include "trainbench/core/config.h"

namespace trainbench {

// The --help groups, in their order (a column of the flag table).
enum class HelpGroup {
  kModel,
  kPrecision,
  kData,
  kResults,
  kCheckpoints,
  kDist,
  kTesting,
  kLast = kTesting
};
template <>
struct ChoiceTable<HelpGroup> {
  static constexpr std::array<ChoiceRow<HelpGroup>, 7> rows = {{
      {HelpGroup::kModel, "model and training", ""},
      {HelpGroup::kPrecision, "precision and compile", ""},
      {HelpGroup::kData, "data", ""},
      {HelpGroup::kResults, "timing, logging and results", ""},
      {HelpGroup::kCheckpoints, "checkpoints", ""},
      {HelpGroup::kDist, "several processes", ""},
      {HelpGroup::kTesting, "testing aids", ""},
  }};
};
static_assert(choices_in_order<HelpGroup>(), "one row per HelpGroup, in order");

enum class FlagKind {
  kInt,     // an integer, at least `min`
  kNumber,  // a finite number in [lo, hi] (either end open when flagged so)
  kText,    // any text, or (a ChoiceField) one of `choices`
  kBool,    // a switch: 0 | 1 (or false | true); a bool field, true/false in config.json
};

// A choice flag's field (an enum of core/choices.h), reached through its names: `get` spells
// the value in `cfg`, `set` takes a name and returns false when it names no row.
struct ChoiceField {
  std::function<const char*(const RunConfig& cfg)> get;
  std::function<bool(RunConfig& cfg, const std::string& name)> set;
};

struct FlagSpec {
  using Field = std::variant<int64_t RunConfig::*, double RunConfig::*, std::string RunConfig::*,
                             bool RunConfig::*, ChoiceField>;
  const char* name = "";
  HelpGroup group = HelpGroup::kModel;  // its --help section
  FlagKind kind = FlagKind::kText;
  Field field;
  std::string help;
  int64_t min = std::numeric_limits<int64_t>::min();  // kInt
  double lo = -std::numeric_limits<double>::infinity(),
         hi = std::numeric_limits<double>::infinity();
  bool lo_open = false, hi_open = false;  // kNumber
  const char* allowed = "";               // kNumber: the range in words for messages
  std::vector<std::string> choices;       // kText: empty = any text (else its enum's names)
  // kText: other spellings accepted on the command line, {spelling, choice}
  std::vector<std::pair<std::string, std::string>> aliases;
  bool resume_may_change = false;  // a continued run may set it anew
  bool ranks_may_differ = false;   // no number of the run depends on it
};

// The table, in --help order.
const std::vector<FlagSpec>& flag_table();
// The row of `name`, or nullptr.
const FlagSpec* find_flag(const std::string& name);

// The value of the flag in `cfg`, as --help shows a default.
std::string flag_text(const FlagSpec& f, const RunConfig& cfg);
// Sets the flag from its command-line text; throws ConfigError when the text is not of the
// flag's kind ("--num_layer: 'abc' is not an integer; allowed: an integer").
void set_flag(const FlagSpec& f, RunConfig& cfg, const std::string& text);
// Checks the flag's own range or choices; throws ConfigError naming flag, value and allowed.
void check_flag(const FlagSpec& f, const RunConfig& cfg);

// config.json keys that are not flags but may differ on a resume (written by the run itself).
bool resume_may_change(const std::string& key);
// config.json keys that may differ between the ranks of one run.
bool ranks_may_differ(const std::string& key);

}  // namespace trainbench
